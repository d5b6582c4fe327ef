"""``SimCell``: a simulated pick-and-sort cell built from ``WorldParams``.

``reset(condition, rng)`` sets up a trial, ``step(action)`` applies one 10 Hz action (absolute
joint targets: 7 right-arm + 20 right-hand) and returns observations and the judge's verdict.
Observations: one uint8 image (``image_size`` square) per camera in ``cameras`` and
``proprio``, the right arm + hand joint positions (27-D, rad).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.world.conditions import Condition
from r2s2r.world.engine import N_SIDE, CellEngine, ControlConfig
from r2s2r.world.judge import Judge, Verdict
from r2s2r.world.params import WorldParams

POLICY_CAMERAS = ("head_left", "right_wrist", "left_wrist")


@dataclass(frozen=True)
class CellConfig:
    """What a cell observes and how long a trial may last."""

    image_size: int = 96
    cameras: tuple[str, ...] = POLICY_CAMERAS
    max_duration: float = 25.0  # s of trial time before the judge calls a timeout
    control: ControlConfig = ControlConfig()

    def __post_init__(self) -> None:
        if not 16 <= self.image_size <= 1024:
            raise ConfigError(f"cell.image_size: expected 16..1024 px, got {self.image_size}")
        if self.max_duration <= 0:
            raise ConfigError(f"cell.max_duration: expected a positive duration, got {self.max_duration}")


def check_action(action: np.ndarray) -> np.ndarray:
    a = np.asarray(action, dtype=float)
    if a.shape != (N_SIDE,):
        raise ConfigError(f"action: expected shape ({N_SIDE},) (7 arm + 20 hand joint targets), got {a.shape}")
    return a


Observe = bool | Collection[str]  # which policy cameras a step draws: all (True), none (False), or these


def drawn(cameras: tuple[str, ...], observe: Observe) -> tuple[str, ...]:
    """The cameras of ``cameras`` (in their order) a step asked to ``observe`` draws; ConfigError for a
    name that is not one of them."""
    if isinstance(observe, bool):
        return cameras if observe else ()
    if isinstance(observe, str) or not isinstance(observe, Collection):
        raise ConfigError(f"observe: expected true, false or a collection of camera names, got {observe!r}")
    unknown = sorted(set(observe) - set(cameras))
    if unknown:
        raise ConfigError(f"observe: camera(s) {unknown} are not among the policy cameras {list(cameras)}")
    return tuple(c for c in cameras if c in observe)


class SimCell:
    """A simulated cell. Same seed and actions give the same observation bytes."""

    def __init__(self, params: WorldParams, config: CellConfig = CellConfig()) -> None:
        for cam in config.cameras:
            params.camera(cam)  # UnknownNameError names a bad camera
        self.params = params
        self.config = config
        self._engine = CellEngine(params, config.control)
        self._judge: Judge | None = None
        self._rng: np.random.Generator | None = None
        self.condition: Condition | None = None
        self.time = 0.0
        self.verdict = Verdict(done=False)

    def reset(self, condition: Condition, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Start a trial under ``condition``; ``rng`` draws the world's visual randomisation (if any)
        and drives sensor noise for the trial."""
        if not isinstance(condition, Condition):
            raise ConfigError(f"reset: expected a Condition, got {type(condition).__name__}")
        self._engine.apply_condition(condition)
        if self.params.randomization.active:
            self._randomize(condition, rng)
        self._judge = Judge(self._engine.model, self.params, condition.object)
        self._rng = rng
        self.condition = condition
        self.time = 0.0
        self.verdict = Verdict(done=False)
        return self.observe()

    def _randomize(self, condition: Condition, rng: np.random.Generator) -> None:
        r = self.params.randomization
        light, azimuth, ambient = (float(rng.uniform(-a, a)) for a in (r.light, r.azimuth, r.ambient))
        self._engine.set_lighting(
            condition.light_scale * (1 + light), condition.light_tint, condition.light_azimuth + azimuth, 1 + ambient
        )
        self._engine.set_object_color(1 + rng.uniform(-r.object_color, r.object_color, 3))

    def step(self, action: np.ndarray, observe: Observe = True) -> tuple[dict[str, np.ndarray], Verdict]:
        """Apply one action for one control period; returns (observation, verdict). With ``observe``
        False the observation holds only ``proprio``, with camera names those cameras' images and
        ``proprio`` (see ``observe``)."""
        if self._judge is None:
            raise ConfigError("step called before reset")
        drawn(self.config.cameras, observe)  # a bad request is refused before the step
        self._engine.step({"right": check_action(action)})
        self.time += self.config.control.control_dt
        if not self.verdict.done:
            self.verdict = self._judge.update(self._engine.data)
            if not self.verdict.done and self.time >= self.config.max_duration - 1e-9:
                self.verdict = self._judge.finish()
        return self.observe(images=observe), self.verdict

    def observe(self, images: Observe = True) -> dict[str, np.ndarray]:
        """The cameras' images and ``proprio``; with ``images`` False only ``proprio``, with camera names
        only theirs. A frame not drawn advances the sensor noise stream as if it were taken, so later
        frames do not depend on skipped ones."""
        draw = drawn(self.config.cameras, images)
        return self._engine.observation(self.config.cameras, draw, self.config.image_size, self._rng)

    def render(self, camera: str, size: tuple[int, int] | None = None) -> np.ndarray:
        """Image of any camera (full sensor resolution when ``size`` is None), noise-free."""
        if camera not in {c.name for c in self.params.cameras}:
            raise UnknownNameError("camera", camera, [c.name for c in self.params.cameras])
        return self._engine.render(camera, size, None)

    @property
    def engine(self) -> CellEngine:
        """The physics engine (simulated worlds are open: planners and generators read it)."""
        return self._engine

    def close(self) -> None:
        self._engine.close()
