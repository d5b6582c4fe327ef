"""``SimulatedCell``: a simulated world behind the lab's trial interface (``TrialCell``).

It runs a trial of a ``SimCell`` built from ``WorldParams`` the way the lab twin runs one, so one
evaluation runs a policy on the same trial list in the lab or in a simulator:

- every action passes the lab's safety filter, built from the world's own robot model (a simulated
  world's arm parameters are both its true and its "factory" kinematics: ``factory_calibration``
  returns them);
- the trial judge reads the simulator's own state (``SimCell`` holds the lab's ``Judge``);
- ``human_view`` shows the simulated trial to the same person model as the lab twin's
  (``r2s2r.lab.person``), so the scripted operator misjudges here as it does there;
- ``reset(condition, seed)``: the world's visual randomisation (if any), its sensor noise and the
  person's errors draw from generators seeded by the trial seed alone: same world and trial, same
  bytes, whichever process runs it;
- ``act(observe=False)`` (or a collection of cameras) skips the frames (the others) and advances the
  noise stream as if they were taken.

Only trials: the measurement procedures of a ``RealCell`` (guarded moves, the scale, targets) are
the lab's; a simulated world is open and read directly (``SimulatedCell.sim``, a ``SimCell``).
"""

from __future__ import annotations

import numpy as np

from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.geometry import quat_to_mat
from r2s2r.lab.person import PersonBias, person_view
from r2s2r.lab.real_cell import HumanView, KinematicCalibration
from r2s2r.lab.safety import SafetyFilter, SafetyLimits
from r2s2r.world.cell import CellConfig, Observe, SimCell, check_action
from r2s2r.world.conditions import Condition
from r2s2r.world.judge import Verdict
from r2s2r.world.params import WorldParams

SIDES = ("right", "left")
_SALT = 0x51CE11  # separates a simulated cell's trial streams from any other use of the trial seeds


class SimulatedCell:
    """A ``TrialCell`` over a ``SimCell`` of ``params``."""

    def __init__(self, params: WorldParams, config: CellConfig = CellConfig(), safety: SafetyLimits = SafetyLimits()):
        if not isinstance(params, WorldParams):
            raise ConfigError(f"simulated cell: expected WorldParams, got {type(params).__name__}")
        self.params = params
        self._cell = SimCell(params, config)
        self._safety = SafetyFilter(params, safety)
        self._person: tuple[PersonBias, np.random.Generator] | None = None
        self.cameras: tuple[str, ...] = tuple(c.name for c in params.cameras)
        self.policy_cameras: tuple[str, ...] = config.cameras
        self.image_size: int = config.image_size
        self.control_dt: float = config.control.control_dt

    @property
    def sim(self) -> SimCell:
        """The simulated cell itself: a simulated world is open (its engine, condition, renderers)."""
        return self._cell

    # --- trials ---------------------------------------------------------------------------
    def reset(self, condition: Condition, seed: int) -> dict[str, np.ndarray]:
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ConfigError(f"trial seed: expected a non-negative integer, got {seed!r}")
        obs = self._cell.reset(condition, np.random.default_rng([_SALT, int(seed)]))
        person_rng = np.random.default_rng([_SALT, int(seed), 1])
        self._person = (PersonBias.draw(person_rng), person_rng)
        return obs

    def observe(self) -> dict[str, np.ndarray]:
        return self._cell.observe()

    def act(self, action: np.ndarray, observe: Observe = True) -> dict[str, np.ndarray]:
        if self._person is None:
            raise ConfigError("act called before reset")
        eng = self._cell.engine
        q = check_action(action)
        left = {"left": eng.command("left")}
        safe = self._safety.filter("right", eng.command("right"), q, self.control_dt, other=left)
        obs, _verdict = self._cell.step(safe, observe=observe)
        return obs

    def last_command(self, side: str) -> np.ndarray:
        return self._cell.engine.command(_check_side(side)).copy()

    def verdict(self) -> Verdict:
        return self._cell.verdict

    def human_view(self) -> HumanView:
        if self._person is None:
            raise ConfigError("human_view called before reset")
        eng, params = self._cell.engine, self.params
        bias, rng = self._person
        return person_view(
            self._cell.time,
            eng.object_name,
            eng.object_pose(),
            eng.belt_speed,
            quat_to_mat(params.conveyor.pose.quat)[:, 0],
            {b.color: b.pose.pos for b in params.bins},
            bias,
            rng,
        )

    @property
    def time(self) -> float:
        """Seconds since the current trial started."""
        return self._cell.time

    # --- what trials read besides ---------------------------------------------------------
    def capture(self, camera: str, size: tuple[int, int] | None = None) -> np.ndarray:
        """A noise-free frame of ``camera``, at full resolution or read out at ``size`` (trial videos)."""
        if camera not in self.cameras:
            raise UnknownNameError("camera", camera, self.cameras)
        return self._cell.render(camera, size)

    def read_encoders(self, side: str) -> np.ndarray:
        return self._cell.engine.joint_positions(_check_side(side))

    def factory_calibration(self, side: str) -> KinematicCalibration:
        arm = getattr(self.params, f"{_check_side(side)}_arm")
        return KinematicCalibration(side, tuple(arm.link_pos), tuple(arm.flange_pos), tuple(arm.joint_zero))

    def safety_report(self) -> dict[str, int]:
        return dict(self._safety.counts)

    def close(self) -> None:
        self._cell.close()

    def __repr__(self) -> str:
        return f"SimulatedCell(world {self.params.content_hash()})"


def _check_side(side: str) -> str:
    if side not in SIDES:
        raise UnknownNameError("arm side", side, SIDES)
    return side
