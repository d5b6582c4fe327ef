"""The observation and action spaces of the r2s2r Gymnasium environments.

Observation: a ``Dict`` of one uint8 ``Box`` (H, W, 3) per policy camera (``image_size`` square)
and ``proprio``, a float32 ``Box(27,)``: the picking arm's 7 joint and its hand's 20 joint encoder
readings (rad), bounded by the joint ranges. Action: a float32 ``Box(27,)`` of absolute joint
targets in the same order and ranges (``r2s2r.evaluate.policies.joint_target_ranges``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from gymnasium import spaces

from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.evaluate.policies import joint_target_ranges
from r2s2r.world.conditions import KINDS

PROPRIO = "proprio"


def action_space() -> spaces.Box:
    """27 absolute joint targets (7 arm + 20 hand, rad) within the joint ranges."""
    lo, hi = joint_target_ranges().T
    return spaces.Box(lo.astype(np.float32), hi.astype(np.float32), dtype=np.float32)


def observation_space(cameras: tuple[str, ...], image_size: int) -> spaces.Dict:
    """One uint8 image per camera and the 27 joint positions (see the module docstring)."""
    images = {c: spaces.Box(0, 255, (image_size, image_size, 3), dtype=np.uint8) for c in cameras}
    return spaces.Dict({**images, PROPRIO: action_space()})


def to_observation(raw: Mapping[str, np.ndarray], space: spaces.Dict) -> dict[str, np.ndarray]:
    """A cell's observation as an element of ``space``: fresh arrays, proprio as float32 clipped to
    the joint ranges (a joint pressed against its stop reads a hair beyond its range)."""
    box = space[PROPRIO]
    obs = {c: np.array(raw[c], dtype=np.uint8) for c in space if c != PROPRIO}
    obs[PROPRIO] = np.clip(np.asarray(raw[PROPRIO], dtype=np.float32), box.low, box.high)
    return obs


def check_env_args(condition: str, cameras: tuple[str, ...], max_duration: float, render_mode: str | None) -> None:
    """Validate the arguments both environments share (cameras are checked by the cell itself)."""
    if condition not in KINDS:
        raise UnknownNameError("condition kind", condition, KINDS)
    if len(set(cameras)) != len(cameras) or PROPRIO in cameras:
        raise ConfigError(f"cameras: expected distinct camera names (not {PROPRIO!r}), got {cameras!r}")
    if not (isinstance(max_duration, int | float) and max_duration > 0):
        raise ConfigError(f"max_duration: expected a positive duration in s, got {max_duration!r}")
    if render_mode not in (None, "rgb_array"):
        raise ConfigError(f"render_mode: expected None or 'rgb_array', got {render_mode!r}")
    if render_mode == "rgb_array" and not cameras:
        raise ConfigError("render_mode 'rgb_array' shows the first observed camera: expected at least one camera")
