"""``TeleopStation``: what the teleoperator at a cell has, apart from the policy's observation.

A person teleoperating the cell sees the trial with their own eyes (``human_view``), reads the
robot's encoders and works with the robot maker's kinematic calibration file, at the cell's
control period. The scripted operator (``r2s2r.evaluate.policies.ScriptedOperator``) needs
exactly that: ``ScriptedOperator().begin(env.unwrapped.station, rng)`` drives an environment
as a person does. It is a human reference, not a policy: a policy under evaluation sees only the
environment's observation, never the station.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import UnknownNameError
from r2s2r.lab.real_cell import HumanView, KinematicCalibration


@dataclass(frozen=True)
class TeleopStation:
    """The teleoperator's access to one cell (the part of ``RealCell`` the operator uses)."""

    control_dt: float  # s between actions
    _view: Callable[[], HumanView]
    _encoders: Callable[[str], np.ndarray]
    _calibration: dict[str, KinematicCalibration]

    def human_view(self) -> HumanView:
        """The current trial as the person sees it (``r2s2r.lab.real_cell.HumanView``)."""
        return self._view()

    def read_encoders(self, side: str) -> np.ndarray:
        """Joint encoders of one side (27,): 7 arm + 20 hand, rad."""
        return self._encoders(side)

    def factory_calibration(self, side: str) -> KinematicCalibration:
        """The kinematic calibration file of one arm."""
        if side not in self._calibration:
            raise UnknownNameError("arm side", side, tuple(self._calibration))
        return self._calibration[side]
