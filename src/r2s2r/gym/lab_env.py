"""``LabTwinEnv`` (``r2s2r/LabTwin-v0``): the lab twin (``r2s2r.lab.twin.LabTwin``) as a
Gymnasium environment. The episode contract is ``r2s2r.gym.cell_env``'s.

The environment sees the lab only through the ``RealCell`` interface, as evaluation does: trials
(reset to a condition and a trial seed, act, the scorer's verdict), the safety filter's counts and
the operator's station (``human_view``, encoders, the factory calibration file). Every action passes
the lab's safety filter (non-finite commands held, joint limits, rated speed, workspace,
self-collision); ``info["safety"]`` counts what it changed during the episode and
``info["command"]`` is the command as it reached the robot. The lab itself is not exposed.
"""

from __future__ import annotations

import numpy as np

from r2s2r.gym.cell_env import CellEnv
from r2s2r.gym.station import TeleopStation
from r2s2r.lab.real_cell import HumanView
from r2s2r.lab.twin import SIDES, LabTwin
from r2s2r.world.cell import POLICY_CAMERAS, CellConfig
from r2s2r.world.conditions import Condition
from r2s2r.world.judge import Verdict


class LabTwinEnv(CellEnv):
    """Trials on lab twin ``lab``; reward 1.0 on success, else 0.0 (sparse).

    ``lab``: the lab twin's seed (which as-built cell); ``condition``: the kind of condition each
    episode draws (``r2s2r.world.conditions.KINDS``); ``cameras``: the observed cameras;
    ``image_size``: their square size in px; ``max_duration``: s of trial time before truncation;
    ``render_mode``: None or ``"rgb_array"``.
    """

    def __init__(
        self,
        lab: int = 0,
        condition: str = "nominal",
        cameras: tuple[str, ...] = POLICY_CAMERAS,
        image_size: int = 48,
        max_duration: float = 25.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(condition, cameras, image_size, max_duration, render_mode)
        config = CellConfig(image_size=self.image_size, cameras=self.cameras, max_duration=self.max_duration)
        self._lab = LabTwin(lab, config)
        self.lab_seed = self._lab.seed
        self._safety0: dict[str, int] = {}

    def _start(self, condition: Condition, trial_seed: int) -> dict[str, np.ndarray]:
        self._safety0 = self._lab.safety_report()
        return self._lab.reset(condition, trial_seed)

    def _act(self, action: np.ndarray) -> dict[str, np.ndarray]:
        return self._lab.act(action)

    def _verdict(self) -> Verdict:
        return self._lab.verdict()

    def _time(self) -> float:
        return self._lab.time

    def _command(self) -> np.ndarray:
        return self._lab.last_command("right")

    def _safety_counts(self) -> dict[str, int]:
        after = self._lab.safety_report()
        return {k: v - self._safety0.get(k, 0) for k, v in after.items() if v - self._safety0.get(k, 0)}

    def _human_view(self) -> HumanView:
        return self._lab.human_view()

    def _station(self) -> TeleopStation:
        lab = self._lab
        calibration = {side: lab.factory_calibration(side) for side in SIDES}
        return TeleopStation(lab.control_dt, self.human_view, lab.read_encoders, calibration)

    def close(self) -> None:
        """Release the lab's renderers (GL contexts); a later ``reset`` builds them again."""
        self._lab.close()
