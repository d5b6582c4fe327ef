"""Subtasks of a demonstration and the frames they are kept fixed in (MimicGen on a moving belt).

A pick-and-sort demonstration has two subtasks, with boundaries from the hand's closure signal
(``hand_closure``: the hand's joint targets projected on the open -> closed power grasp, 0 open,
1 closed):

=============  ==========================  ===============================================
subtask        frames                      kept fixed in
=============  ==========================  ===============================================
(wait)         [0, approach)               the world (the hand idles at its start pose)
object         [approach, grasp_end]       the *moving* object frame (approach, interception,
                                           grasp), time-indexed: the object rides the belt
bin            (grasp_end, end)            the bin frame (lift, carry, release, retreat)
=============  ==========================  ===============================================

``grasp_end`` is the first frame the hand is closed (MimicGen's ``grasp`` subtask-termination
signal); ``release_end`` the first frame it is open again after that (``release``). Frame indices
count control steps of the demonstration (10 Hz).

The object frame (``object_frame``) sits on the top centre of the object, z along the belt normal;
its yaw follows the object for shapes whose grasp depends on it (boxes: the hand squares to the
faces) and the belt for round ones. The bin frame is the bin's pose (``BinParams.pose``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import R2S2RError
from r2s2r.geometry import axis_angle_quat, make_T, quat_mul, quat_to_mat
from r2s2r.world.hand import hand_grasp_pose, hand_open_pose
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import WorldParams

CLOSED, OPENED, CLOSING = 0.95, 0.1, 0.2  # closure thresholds: closed, opened, closing started


def hand_closure(hand: np.ndarray) -> np.ndarray:
    """(T,) closure of hand joint targets (T, 20): 0 at the open hand, 1 at the closed power grasp."""
    open_, closed = hand_open_pose(), hand_grasp_pose("power", 1.0)
    d = closed - open_
    return (np.asarray(hand, float) - open_) @ d / (d @ d)


@dataclass(frozen=True)
class Segmentation:
    """Subtask boundaries of one demonstration (frame indices, see the module docstring)."""

    approach: int  # first frame of the object-centric subtask (the hand leaves its start pose)
    grasp_start: int  # the hand starts closing
    grasp_end: int  # closed: the object-centric subtask ends here (inclusive)
    release_start: int  # the hand starts opening above the bin
    release_end: int  # open again
    length: int

    def subtask(self, frame: int) -> str:
        if frame < self.approach:
            return "wait"
        return "object" if frame <= self.grasp_end else "bin"


def segment_demo(T_world_flange: np.ndarray, hand: np.ndarray, move_tol: float = 0.005) -> Segmentation:
    """Segment a demonstration from its hand poses (T, 4, 4) and hand joint targets (T, 20).

    ``approach``: the last frame before the flange has moved ``move_tol`` m or 3 degrees from its
    first pose. Raises ``R2S2RError`` when the hand never closes, or never opens after closing.
    """
    c = hand_closure(hand)
    n = len(c)
    closed = np.flatnonzero(c >= CLOSED)
    if not len(closed):
        raise R2S2RError(f"demonstration: the hand never closes (max closure {c.max():.2f} < {CLOSED})")
    g = int(closed[0])
    opening = np.flatnonzero((np.arange(n) > g) & (c < 0.9))
    if not len(opening):
        raise R2S2RError("demonstration: the hand never opens after the grasp")
    r0 = int(opening[0])
    opened = np.flatnonzero((np.arange(n) >= r0) & (c < OPENED))
    if not len(opened):
        raise R2S2RError("demonstration: the hand never opens fully after the grasp")
    before = np.flatnonzero((np.arange(n) < g) & (c < CLOSING))
    gs = int(before[-1]) + 1 if len(before) else 0
    T0 = T_world_flange[0]
    moved = [
        k
        for k in range(gs)
        if np.linalg.norm(T_world_flange[k, :3, 3] - T0[:3, 3]) > move_tol
        or _angle(T_world_flange[k, :3, :3], T0[:3, :3]) > math.radians(3)
    ]
    approach = max(0, moved[0] - 1) if moved else 0
    return Segmentation(approach, gs, g, r0, int(opened[0]), n)


def _angle(Ra: np.ndarray, Rb: np.ndarray) -> float:
    return float(np.arccos(np.clip((np.trace(Ra.T @ Rb) - 1) / 2, -1.0, 1.0)))


def grasp_yaw_symmetry(object_name: str) -> float | None:
    """The yaw period (rad) of an object's grasp: a quarter turn for a square box, a half turn for
    a bar, None for round objects (any yaw grasps the same)."""
    obj = CATALOG[object_name]
    if obj.shape == "box":
        return math.pi / 2 if abs(obj.size[0] - obj.size[1]) < 1e-9 else math.pi
    if obj.shape in ("capsule", "ellipsoid"):
        return math.pi
    return None


def object_frame(
    world: WorldParams,
    object_name: str,
    T_world_object0: np.ndarray,
    belt_velocity: np.ndarray,
    t: float,
    yaw: float | None = None,
) -> np.ndarray:
    """T_world_objectframe at time ``t`` s: the object frame of an object that started at
    ``T_world_object0`` (its centre) and rides the belt at ``belt_velocity`` (world, m/s).

    ``yaw`` (about the belt normal, relative to the belt frame) overrides the object's own yaw;
    by default it is the object's yaw for yaw-dependent shapes and 0 (the belt's axes) for round ones.
    """
    obj = CATALOG[object_name]
    q_belt = world.conveyor.pose.quat
    R_belt = quat_to_mat(q_belt)
    if yaw is None:
        if grasp_yaw_symmetry(object_name) is None:
            yaw = 0.0
        else:
            x = R_belt.T @ T_world_object0[:3, 0]
            yaw = math.atan2(x[1], x[0])
    pos = T_world_object0[:3, 3] + R_belt[:, 2] * obj.rest_height + np.asarray(belt_velocity) * t
    return make_T(pos, quat_mul(q_belt, axis_angle_quat((0, 0, 1), yaw)))


def frame_yaw(world: WorldParams, T_world_frame: np.ndarray) -> float:
    """Yaw (rad) of a frame about the belt normal, relative to the belt frame."""
    x = quat_to_mat(world.conveyor.pose.quat).T @ T_world_frame[:3, 0]
    return math.atan2(x[1], x[0])


def bin_frame(world: WorldParams, color: str) -> np.ndarray:
    """T_world_bin of the bin for ``color`` objects."""
    b = world.bin(color).pose
    return make_T(b.pos, b.quat)
