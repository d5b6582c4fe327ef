"""The object-state feature ``obs/object_state``: where the object is, per frame, as an auxiliary target.

A policy that sees the cell through cameras must find the object in its images; the flow-matching
loss alone teaches that slowly (it averages over frames where the object's position hardly matters).
A dataset may carry, per frame, what the object's state was, and a policy with
``PolicyConfig.object_state > 0`` learns to predict it from its observation as a second loss. The
labels come from sensors (``r2s2r.behavior.object_labels``: the first frame's stereo pair and the
calibrated belt speed), never from a lab's hidden parameters.

Layout (``OBJECT_STATE_DIM`` float32 columns; NaN where a value is not known at that frame, e.g. the
yaw once the hand holds the object, everything once it is released):

- 0-2: the object's centre in the belt frame (m; origin at the centre of the belt top, +x the
  direction of travel, +z up);
- 3-4: cos, sin of (2 pi yaw / period), yaw about the belt normal and period its grasp symmetry
  (a quarter turn for a square box); (0, 0) for round objects;
- 5: the belt speed (m/s, along +x);
- 6-13: which known object (one-hot over ``KNOWN_OBJECTS``).

``OBJECT_STATE_SCALE``: the unit each column's error is measured in by the loss (5 cm, 5 cm/s, 1).
"""

from __future__ import annotations

import numpy as np

from r2s2r.data.features import Feature
from r2s2r.world.objects import KNOWN_OBJECTS

OBJECT_STATE = "object_state"  # the observation key (dataset feature obs/object_state)
MAY_BE_UNKNOWN = frozenset({f"obs/{OBJECT_STATE}"})  # dataset features where NaN marks an unknown value
POSITION, YAW, SPEED = slice(0, 3), slice(3, 5), 5
WHICH = slice(6, 6 + len(KNOWN_OBJECTS))
OBJECT_STATE_DIM = 6 + len(KNOWN_OBJECTS)
OBJECT_STATE_SCALE = np.array([0.05] * 3 + [1.0, 1.0, 0.05] + [1.0] * len(KNOWN_OBJECTS), dtype=np.float32)


OBJECT_STATE_FEATURE = Feature(f"obs/{OBJECT_STATE}", (OBJECT_STATE_DIM,), "float32", "m, m/s, 1")


def yaw_features(yaw: float, period: float | None) -> np.ndarray:
    """(2,) cos, sin of the yaw on its symmetry circle; (0, 0) without a grasp yaw (round objects)."""
    if period is None:
        return np.zeros(2, dtype=np.float32)
    a = 2.0 * np.pi * yaw / period
    return np.array([np.cos(a), np.sin(a)], dtype=np.float32)


def one_hot(object_name: str) -> np.ndarray:
    """(len(KNOWN_OBJECTS),) which known object; all zeros for another one."""
    out = np.zeros(len(KNOWN_OBJECTS), dtype=np.float32)
    if object_name in KNOWN_OBJECTS:
        out[KNOWN_OBJECTS.index(object_name)] = 1.0
    return out
