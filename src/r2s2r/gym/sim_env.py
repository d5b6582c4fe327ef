"""``SimCellEnv`` (``r2s2r/SimCell-v0``): a simulated cell (``r2s2r.world.cell.SimCell``) as a
Gymnasium environment. The episode contract is ``r2s2r.gym.cell_env``'s.

The world is a ``WorldParams`` JSON file (grounded or ungrounded, as ``calibrate`` writes it) or
the nominal spec sheet. Actions pass two checks before they reach the simulated robot, the first
two of the lab's safety filter: a command with a NaN/inf value is replaced by the previous command
(``non_finite``) and targets are clipped into the joint ranges (``joint_limit``); ``info["safety"]``
counts both. The simulator is open: ``env.unwrapped.cell`` is the ``SimCell``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.evaluate.policies import joint_target_ranges
from r2s2r.gym.cell_env import CellEnv
from r2s2r.gym.station import TeleopStation
from r2s2r.lab.real_cell import HumanView, KinematicCalibration
from r2s2r.world.cell import POLICY_CAMERAS, CellConfig, SimCell, check_action
from r2s2r.world.conditions import Condition
from r2s2r.world.judge import Verdict
from r2s2r.world.params import WorldParams


def load_world(world: str | Path | WorldParams | None) -> WorldParams:
    """The world of ``world``: a WorldParams JSON file, a ``WorldParams`` value, or None (nominal)."""
    if world is None:
        return WorldParams.nominal()
    if isinstance(world, WorldParams):
        return world
    if isinstance(world, str | Path):
        return WorldParams.load(world, "world")
    raise ConfigError(f"world: expected a WorldParams JSON path, a WorldParams or None, got {type(world).__name__}")


class SimCellEnv(CellEnv):
    """A simulated pick-and-sort cell; reward 1.0 on success, else 0.0 (sparse).

    ``world``: a WorldParams JSON path (or value), None for the nominal world; ``condition``: the
    kind of condition each episode draws (``r2s2r.world.conditions.KINDS``); ``cameras``: the
    observed cameras; ``image_size``: their square size in px; ``max_duration``: s of trial time
    before truncation; ``render_mode``: None or ``"rgb_array"``.
    """

    def __init__(
        self,
        world: str | Path | WorldParams | None = None,
        condition: str = "nominal",
        cameras: tuple[str, ...] = POLICY_CAMERAS,
        image_size: int = 48,
        max_duration: float = 25.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(condition, cameras, image_size, max_duration, render_mode)
        params = load_world(world)
        config = CellConfig(image_size=self.image_size, cameras=self.cameras, max_duration=self.max_duration)
        self.cell = SimCell(params, config)
        self._lo, self._hi = joint_target_ranges().T
        self._changed: Counter[str] = Counter()

    def _start(self, condition: Condition, trial_seed: int) -> dict[str, np.ndarray]:
        self._changed = Counter()
        return self.cell.reset(condition, np.random.default_rng(trial_seed))

    def _act(self, action: np.ndarray) -> dict[str, np.ndarray]:
        q = check_action(action)
        if not np.all(np.isfinite(q)):
            self._changed["non_finite"] += 1
            q = self.cell.engine.command("right")
        clipped = np.clip(q, self._lo, self._hi)
        if np.any(clipped != q):
            self._changed["joint_limit"] += 1
        obs, _verdict = self.cell.step(clipped)
        return obs

    def _verdict(self) -> Verdict:
        return self.cell.verdict

    def _time(self) -> float:
        return self.cell.time

    def _command(self) -> np.ndarray:
        return self.cell.engine.command("right")

    def _safety_counts(self) -> dict[str, int]:
        return dict(self._changed)

    def _human_view(self) -> HumanView:
        # the operator model (and its IK, mink) loads only when someone looks through a person's eyes
        from r2s2r.behavior.sim_teleop import sim_view

        return sim_view(self.cell)

    def _station(self) -> TeleopStation:
        """The simulator is open: the station's calibration file is the world's own kinematics."""
        params, engine = self.cell.params, self.cell.engine
        calibration = {
            side: KinematicCalibration(side, arm.link_pos, arm.flange_pos, arm.joint_zero)
            for side, arm in (("right", params.right_arm), ("left", params.left_arm))
        }
        return TeleopStation(self.cell.config.control.control_dt, self.human_view, engine.joint_positions, calibration)

    def close(self) -> None:
        """Release the cell's renderers (GL contexts); a later ``reset`` builds them again."""
        self.cell.close()
