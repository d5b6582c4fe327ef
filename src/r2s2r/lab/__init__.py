"""The "real" cell: the ``RealCell`` protocol, its embedded default ``LabTwin``, and the safety filter."""

from r2s2r.lab.real_cell import EncoderRecord, GuardedMoveResult, KinematicCalibration, RealCell
from r2s2r.lab.safety import SafetyFilter, SafetyLimits
from r2s2r.lab.twin import LabTwin

__all__ = [
    "EncoderRecord",
    "GuardedMoveResult",
    "KinematicCalibration",
    "LabTwin",
    "RealCell",
    "SafetyFilter",
    "SafetyLimits",
]
