"""The ungrounded world: the spec sheet with tape-measured poses.

Ideal cameras (no distortion, no degradations), the supplied cell layout, nominal kinematics and
calculated controller gains, with the poses a person would measure with a tape and a protractor:
each camera, the conveyor and the bins off by about 1-2 cm and 1-2 degrees (normal, std 1 cm and
1 deg, clipped at 2 cm and 2 deg), drawn from a seed. Poses are relative to the right arm's base,
which stays at its drawing pose (the robot frame every calibration refers to).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.geometry import axis_angle_quat, quat_mul
from r2s2r.world.params import Pose, WorldParams

TAPE_POS_STD, TAPE_POS_MAX = 0.01, 0.02  # m
TAPE_ROT_STD, TAPE_ROT_MAX = 1.0, 2.0  # deg


def tape_measured(pose: Pose, rng: np.random.Generator, planar: bool = False) -> Pose:
    """``pose`` as measured with a tape and a protractor. ``planar`` keeps roll/pitch (things
    standing on the floor) and only the yaw is misjudged."""
    dp = np.clip(rng.normal(0.0, TAPE_POS_STD, 3), -TAPE_POS_MAX, TAPE_POS_MAX)
    if planar:
        axis = np.array([0.0, 0.0, 1.0])
    else:
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
    angle = math.radians(float(np.clip(rng.normal(0.0, TAPE_ROT_STD), -TAPE_ROT_MAX, TAPE_ROT_MAX)))
    q = quat_mul(axis_angle_quat(axis, angle), pose.quat)
    q = q / np.linalg.norm(q)
    return Pose(tuple(float(v) for v in np.asarray(pose.pos) + dp), tuple(float(v) for v in q))


def ungrounded_world(seed: int, nominal: WorldParams | None = None) -> WorldParams:
    """The ungrounded WorldParams for ``seed``: nominal values, tape-measured poses."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"ungrounded world seed: expected a non-negative integer, got {seed!r}")
    params = nominal or WorldParams.nominal()
    rng = np.random.default_rng([0x7A9E, int(seed)])
    cameras = tuple(dataclasses.replace(c, pose=tape_measured(c.pose, rng)) for c in params.cameras)
    conveyor = dataclasses.replace(params.conveyor, pose=tape_measured(params.conveyor.pose, rng, planar=True))
    bins = tuple(dataclasses.replace(b, pose=tape_measured(b.pose, rng, planar=True)) for b in params.bins)
    return params.replace(cameras=cameras, conveyor=conveyor, bins=bins)
