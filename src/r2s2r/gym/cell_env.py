"""``CellEnv``: what the simulated-cell and lab-twin Gymnasium environments share.

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
  reached the robot after the cell's action checks; ``safety``, how many commands those checks
  changed during the episode, by kind.

``reset`` returns ``info`` with the trial's ``condition`` (an ``r2s2r.world.conditions.Condition``)
and ``trial_seed``: the experimenter's record of the trial, not something a policy may read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import gymnasium
import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.gym.spaces import action_space, check_env_args, observation_space, to_observation
from r2s2r.gym.station import TeleopStation
from r2s2r.lab.real_cell import HumanView
from r2s2r.world.conditions import Condition, sample_condition
from r2s2r.world.engine import ControlConfig
from r2s2r.world.judge import Verdict

TIME_LIMIT_FAILURES = ("missed", "timeout")  # the judge's verdicts at the time limit (``Judge.finish``)


class CellEnv(gymnasium.Env, ABC):
    """Base of the r2s2r environments (see the module docstring for the episode's contract).

    Subclasses build the cell and implement ``_start``, ``_act``, ``_verdict``, ``_time``,
    ``_command``, ``_safety_counts``, ``_human_view`` and ``_station``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": round(1.0 / ControlConfig().control_dt)}

    def __init__(
        self,
        condition: str,
        cameras: tuple[str, ...],
        image_size: int,
        max_duration: float,
        render_mode: str | None,
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
        self._ended: bool | None = None  # None: no episode yet
        self._frame: np.ndarray | None = None  # the last observed image of cameras[0], for render()

    # --- subclass hooks ---------------------------------------------------------------------
    @abstractmethod
    def _start(self, condition: Condition, trial_seed: int) -> dict[str, np.ndarray]:
        """Reset the cell to a trial of ``condition`` seeded by ``trial_seed``; its first raw observation."""

    @abstractmethod
    def _act(self, action: np.ndarray) -> dict[str, np.ndarray]:
        """Send one action through the cell's checks, advance one control period; the raw observation."""

    @abstractmethod
    def _verdict(self) -> Verdict:
        """The judge's verdict on the current trial."""

    @abstractmethod
    def _time(self) -> float:
        """Seconds since the trial started."""

    @abstractmethod
    def _command(self) -> np.ndarray:
        """The 27 joint targets the picking side is tracking (the last command as it reached the robot)."""

    @abstractmethod
    def _safety_counts(self) -> dict[str, int]:
        """How many commands the cell's checks changed during this episode, by kind."""

    @abstractmethod
    def _human_view(self) -> HumanView:
        """The trial as the teleoperator sees it."""

    @abstractmethod
    def _station(self) -> TeleopStation:
        """The teleoperator's station of this cell."""

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
        obs = self._observation(self._start(condition, trial_seed))
        self._ended = False
        return obs, {"condition": condition, "trial_seed": trial_seed}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._ended is None:
            raise ConfigError("step called before reset")
        if self._ended:
            raise ConfigError("step: the episode has ended (terminated or truncated); call reset() to start another")
        obs = self._observation(self._act(np.asarray(action)))
        verdict = self._verdict()
        truncated = verdict.done and verdict.failure in TIME_LIMIT_FAILURES
        terminated = verdict.done and not truncated
        self._ended = verdict.done
        reward = 1.0 if verdict.success else 0.0
        info = {
            "success": bool(verdict.success),
            "failure": verdict.failure,
            "touched": bool(verdict.touched),
            "lifted": bool(verdict.lifted),
            "time": float(self._time()),
            "command": self._command().astype(np.float32),
            "safety": dict(sorted(self._safety_counts().items())),
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

    # --- the teleoperator's access (not part of the observation) ----------------------------
    def human_view(self) -> HumanView:
        """The current trial as a person at the cell sees it: for the teleoperator (the scripted
        operator), never for a policy under evaluation, which sees only the observation."""
        if self._ended is None:
            raise ConfigError("human_view called before reset")
        return self._human_view()

    @property
    def station(self) -> TeleopStation:
        """The teleoperator's station (``human_view``, encoders, the arm's calibration file), what
        ``ScriptedOperator().begin(station, rng)`` takes after ``reset``."""
        return self._station()

    def _observation(self, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        obs = to_observation(raw, self.observation_space)
        if self.render_mode is not None:
            self._frame = obs[self.cameras[0]].copy()
        return obs
