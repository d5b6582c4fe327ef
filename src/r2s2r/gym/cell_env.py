"""``CellEnv``: a Gymnasium environment over any cell behind the lab's trial interface (``TrialCell``).

The simulated-cell and lab-twin environments are this one episode engine over two cells (a
``SimulatedCell`` and a ``LabTwin``); ``CellEnv(LabCell(0).build)`` or ``CellEnv(WorldCell.load(path).build)``
(``r2s2r.evaluate.cells``) runs it directly. The environment sees the cell only through
``TrialCell``: trials (reset to a condition and a trial seed, act, the scorer's verdict, the trial
time, the last command), the safety filter's counts and the operator's station (``human_view``,
encoders, the factory calibration file, the control period).

An episode is one trial. ``reset(seed=...)`` draws the trial's condition (of the environment's
condition kind) and the trial's own seed from the environment's ``np_random``, so the same seed
gives the same episode: same condition, same observation bytes for the same actions.
``options={"condition": Condition}`` runs a given condition instead (the trial seed is still drawn).

``step(action)`` sends one 10 Hz action (27 absolute joint targets) and returns
``(observation, reward, terminated, truncated, info)``:

- reward is sparse: 1.0 on the step at which the judge scores a success (the object rests,
  released, in the bin of its colour), else 0.0;
- ``terminated`` when the judge ends the trial before the time limit (success, or a failure:
  ``fell_off_belt``, ``dropped``, ``wrong_bin``);
- ``truncated`` when ``max_duration`` s of trial time ran out (the judge's verdict is then
  ``missed`` or ``timeout``);
- ``info``: the judge's ``success``, ``failure`` (None or one of ``r2s2r.world.judge.FAILURES``),
  ``touched``, ``lifted``; ``time`` (s into the trial); ``command``, the 27 joint targets that
  reached the robot after the cell's safety filter; ``safety``, how many commands the filter changed
  during the episode, by kind (``non_finite``, ``joint_limit``, ...; only kinds that occurred).

``reset`` returns ``info`` with the trial's ``condition`` (an ``r2s2r.world.conditions.Condition``)
and ``trial_seed``: the experimenter's record of the trial, not something a policy may read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.gym.spaces import action_space, check_env_args, observation_space, to_observation
from r2s2r.gym.station import TeleopStation
from r2s2r.lab.real_cell import HumanView, TrialCell
from r2s2r.world.cell import POLICY_CAMERAS, CellConfig
from r2s2r.world.conditions import Condition, sample_condition
from r2s2r.world.engine import ControlConfig
from r2s2r.world.scene import SIDES

TIME_LIMIT_FAILURES = ("missed", "timeout")  # the judge's verdicts at the time limit (``Judge.finish``)


class CellEnv(gymnasium.Env):
    """Trials on the cell that ``build(config)`` makes; reward 1.0 on success, else 0.0 (sparse).

    ``build``: makes the ``TrialCell`` from a ``CellConfig`` (cameras, image size, max duration),
    after the other arguments are checked; ``condition``: the kind of condition each episode draws
    (``r2s2r.world.conditions.KINDS``); ``cameras``: the observed cameras; ``image_size``: their
    square size in px; ``max_duration``: s of trial time before truncation; ``render_mode``: None or
    ``"rgb_array"``. See the module docstring for the episode's contract.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": round(1.0 / ControlConfig().control_dt)}

    def __init__(
        self,
        build: Callable[[CellConfig], TrialCell],
        condition: str = "nominal",
        cameras: tuple[str, ...] = POLICY_CAMERAS,
        image_size: int = 48,
        max_duration: float = 25.0,
        render_mode: str | None = None,
    ) -> None:
        cameras = tuple(cameras)
        check_env_args(condition, cameras, max_duration, render_mode)
        self.condition_kind = condition
        self.cameras = cameras
        self.image_size = int(image_size)
        self.max_duration = float(max_duration)
        self.render_mode = render_mode
        self.action_space = action_space()
        self.observation_space = observation_space(cameras, self.image_size)
        config = CellConfig(image_size=self.image_size, cameras=self.cameras, max_duration=self.max_duration)
        self._cell = build(config)
        self._safety0: dict[str, int] = {}  # the filter's counts when the episode started
        self._ended: bool | None = None  # None: no episode yet
        self._frame: np.ndarray | None = None  # the last observed image of cameras[0], for render()

    # --- Gymnasium API ----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        condition = options.pop("condition", None)
        if options:
            raise ConfigError(f"reset options: expected only 'condition', got {sorted(options)}")
        if condition is None:
            condition = sample_condition(self.condition_kind, self.np_random)
        elif not isinstance(condition, Condition):
            raise ConfigError(f"reset options['condition']: expected a Condition, got {type(condition).__name__}")
        trial_seed = int(self.np_random.integers(2**31))
        self._safety0 = self._cell.safety_report()
        obs = self._observation(self._cell.reset(condition, trial_seed))
        self._ended = False
        return obs, {"condition": condition, "trial_seed": trial_seed}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._ended is None:
            raise ConfigError("step called before reset")
        if self._ended:
            raise ConfigError("step: the episode has ended (terminated or truncated); call reset() to start another")
        obs = self._observation(self._cell.act(np.asarray(action)))
        verdict = self._cell.verdict()
        truncated = verdict.done and verdict.failure in TIME_LIMIT_FAILURES
        terminated = verdict.done and not truncated
        self._ended = verdict.done
        reward = 1.0 if verdict.success else 0.0
        info = {
            "success": bool(verdict.success),
            "failure": verdict.failure,
            "touched": bool(verdict.touched),
            "lifted": bool(verdict.lifted),
            "time": float(self._cell.time),
            "command": self._cell.last_command("right").astype(np.float32),
            "safety": self._safety_counts(),
        }
        return obs, reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:
        """With ``render_mode="rgb_array"``: the last observed frame of the first camera (what the
        policy sees, uint8 (H, W, 3)); None without a render mode."""
        if self.render_mode is None:
            return None
        if self._frame is None:
            raise ConfigError("render called before reset")
        return self._frame.copy()

    def close(self) -> None:
        """Release the cell's renderers (GL contexts); a later ``reset`` builds them again."""
        self._cell.close()

    # --- the teleoperator's access (not part of the observation) ----------------------------
    def human_view(self) -> HumanView:
        """The current trial as a person at the cell sees it: for the teleoperator (the scripted
        operator), never for a policy under evaluation, which sees only the observation."""
        if self._ended is None:
            raise ConfigError("human_view called before reset")
        return self._cell.human_view()

    @property
    def station(self) -> TeleopStation:
        """The teleoperator's station (``human_view``, encoders, the arm's calibration file), what
        ``ScriptedOperator().begin(station, rng)`` takes after ``reset``."""
        cell = self._cell
        calibration = {side: cell.factory_calibration(side) for side in SIDES}
        return TeleopStation(cell.control_dt, self.human_view, cell.read_encoders, calibration)

    def _safety_counts(self) -> dict[str, int]:
        """How many commands the safety filter changed since ``reset``, by kind (nonzero kinds only)."""
        now = self._cell.safety_report()
        changed = {kind: n - self._safety0.get(kind, 0) for kind, n in now.items()}
        return {kind: n for kind, n in sorted(changed.items()) if n}

    def _observation(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        obs = to_observation(raw, self.observation_space)
        if self.render_mode is not None:
            self._frame = obs[self.cameras[0]].copy()
        return obs
