"""The "real" cell: the ``RealCell`` protocol (and its trial part ``TrialCell``), its embedded default
``LabTwin``, the person at the cell, the safety filter, and ``SimulatedCell`` (a simulated world behind
the lab's trial interface)."""

from r2s2r.lab.person import PersonBias, person_view
from r2s2r.lab.real_cell import EncoderRecord, GuardedMoveResult, HumanView, KinematicCalibration, RealCell, TrialCell
from r2s2r.lab.safety import SafetyFilter, SafetyLimits
from r2s2r.lab.simulated_cell import SimulatedCell
from r2s2r.lab.twin import LabTwin

__all__ = [
    "EncoderRecord",
    "GuardedMoveResult",
    "HumanView",
    "KinematicCalibration",
    "LabTwin",
    "PersonBias",
    "RealCell",
    "SafetyFilter",
    "SafetyLimits",
    "SimulatedCell",
    "TrialCell",
    "person_view",
]
