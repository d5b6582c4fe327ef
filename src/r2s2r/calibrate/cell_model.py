"""The robot's own model of the cell for planning calibration motions, and the motions themselves.

``CellModel`` holds what a lab knows before calibrating: the drawing layout, the factory kinematics
and the spec-sheet cameras. It checks that a joint move passes the lab's safety filter (run on the
same model) and whether the arms occlude a camera's view of points. The motion helpers move one arm
with minimum-jerk joint moves at a fraction of the rated joint speed, by way of its rest pose when
the direct move is not safe, and (un)mount calibration targets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from r2s2r.errors import R2S2RError
from r2s2r.geometry import axis_angle_quat, inv_T, make_T
from r2s2r.lab.real_cell import RealCell
from r2s2r.lab.safety import SafetyFilter
from r2s2r.world import rizon
from r2s2r.world.engine import LEFT_HOLD_Q
from r2s2r.world.hand import hand_open_pose
from r2s2r.world.params import ArmParams, CameraParams, WorldParams
from r2s2r.world.scene import LINK_RADIUS, TargetMount

if TYPE_CHECKING:
    from r2s2r.calibrate.views import ViewConfig

SIDES = ("right", "left")


def link_frames(kin, q: np.ndarray) -> list[np.ndarray]:
    """T_base_link_i (i = 1..7) then T_base_flange, on kinematics ``kin``."""
    T, frames = np.eye(4), []
    for i in range(rizon.N_JOINTS):
        T = T @ make_T(kin.link_pos[i], rizon.LINK_QUAT[i])
        T = T @ make_T((0, 0, 0), axis_angle_quat(rizon.JOINT_AXIS[i], q[i] + kin.joint_zero[i]))
        frames.append(T)
    return frames + [T @ make_T(kin.flange_pos, (1, 0, 0, 0))]


class CellModel:
    """The robot's own model of the cell: nominal layout, factory kinematics, spec-sheet cameras."""

    def __init__(self, lab: RealCell, config: ViewConfig) -> None:
        self.config = config
        self.nominal = WorldParams.nominal()
        self.kin = {s: lab.factory_calibration(s) for s in SIDES}
        arms = {
            f"{s}_arm": ArmParams(
                base=getattr(self.nominal, f"{s}_arm").base,
                link_pos=self.kin[s].link_pos,
                flange_pos=self.kin[s].flange_pos,
                joint_zero=self.kin[s].joint_zero,
            )
            for s in SIDES
        }
        self.safety = SafetyFilter(self.nominal.replace(**arms))
        base = {s: getattr(self.nominal, f"{s}_arm").base for s in SIDES}
        self.T_world_base = {s: make_T(base[s].pos, base[s].quat) for s in SIDES}

    def camera_T(self, cam: CameraParams, side: str | None = None, q: np.ndarray | None = None) -> np.ndarray:
        """Spec-sheet T_world_camera (flange cameras at arm ``side``'s joints ``q``)."""
        T = make_T(cam.pose.pos, cam.pose.quat)
        if cam.parent == "world":
            return T
        return self.T_world_base[side] @ self.kin[side].forward(q) @ T

    def path_is_safe(self, side: str, qa: np.ndarray, qb: np.ndarray, q_all: dict[str, np.ndarray]) -> bool:
        """Would the safety filter pass every pose of the straight joint move ``qa`` -> ``qb``?"""
        other = {s: q_all[s] for s in SIDES if s != side}
        hand = hand_open_pose()
        n = max(2, int(np.ceil(np.abs(qb - qa).max() / 0.02)) + 1)
        for s in np.linspace(0.0, 1.0, n):
            q = np.concatenate([qa + s * (qb - qa), hand])
            before = sum(self.safety.counts.values())
            self.safety.filter(side, q, q, 1.0, other)
            if sum(self.safety.counts.values()) != before:
                return False
        return True

    def capsules(self, q7: dict[str, np.ndarray], hands: tuple[str, ...], skip: tuple = ()) -> np.ndarray:
        """(M, 4) sample points (world) along the arms' links and ``hands``, with their radius;
        ``skip`` lists (side, link index 0..6) pairs to leave out."""
        out = []
        for s in SIDES:
            frames = link_frames(self.kin[s], q7[s])
            for i in range(rizon.N_JOINTS):
                if (s, i) in skip:
                    continue
                child = self.kin[s].link_pos[i + 1] if i + 1 < rizon.N_JOINTS else self.kin[s].flange_pos
                for t in np.linspace(0.0, 1.0, 8):
                    p = self.T_world_base[s] @ frames[i] @ np.r_[t * np.asarray(child), 1.0]
                    out.append([*p[:3], LINK_RADIUS[i]])
            if s in hands:
                for t in np.linspace(0.0, 0.18, 6):
                    p = self.T_world_base[s] @ frames[-1] @ np.array([t, 0.0, 0.025, 1.0])
                    out.append([*p[:3], 0.06])
        return np.asarray(out)

    def occluded(self, eye: np.ndarray, points: np.ndarray, capsules: np.ndarray) -> bool:
        """Does any capsule sample lie on a ray from ``eye`` to one of ``points`` (world)?"""
        d = points - eye  # (K, 3)
        x = capsules[:, :3] - eye  # (M, 3)
        t = np.clip((x @ d.T) / (d * d).sum(axis=1), 0.0, 1.0)  # (M, K)
        closest = t[..., None] * d[None]
        dist = np.linalg.norm(closest - x[:, None], axis=2)
        hit = (dist < capsules[:, 3:4] + self.config.occlusion_margin) & (t < 0.97)
        return bool(hit.any())


def in_image(px: np.ndarray, size: tuple[int, int], margin: float) -> bool:
    w, h = size
    return bool(
        np.all(np.isfinite(px))
        and px[:, 0].min() >= margin
        and px[:, 1].min() >= margin
        and px[:, 0].max() <= w - 1 - margin
        and px[:, 1].max() <= h - 1 - margin
    )


def project_points(cam: CameraParams, T_world_cam: np.ndarray, points_world: np.ndarray) -> np.ndarray:
    p = (inv_T(T_world_cam) @ np.c_[points_world, np.ones(len(points_world))].T).T[:, :3]
    return cam.lens.project(p)


def move_arm(lab: RealCell, model: CellModel, side: str, q_from: np.ndarray, q_to: np.ndarray) -> None:
    cfg = model.config
    speed = np.abs(q_to - q_from) / (np.asarray(rizon.VELOCITY_LIMIT) * cfg.speed_fraction)
    # a full command with the open hand: after a target is (un)mounted the held hand command is
    # the encoder reading, which can sit a hair past a finger's joint stop
    duration = max(cfg.min_move, 1.875 * float(speed.max()))  # min-jerk peak speed: 1.875x the mean
    lab.move_to(side, np.concatenate([q_to, hand_open_pose()]), duration)


def rest_pose(side: str) -> np.ndarray:
    """Where each arm waits: the picking arm at home, the camera arm at its hold pose."""
    return np.asarray(rizon.HOME_Q if side == "right" else LEFT_HOLD_Q)


def go_to(lab: RealCell, model: CellModel, side: str, q_to: np.ndarray) -> None:
    """Move arm ``side`` to ``q_to``: directly if safe, otherwise by way of its rest pose (planning
    checked the move from rest to every view pose)."""
    q_all = {s: lab.read_encoders(s) for s in SIDES}
    q_now = q_all[side][:7]
    if not model.path_is_safe(side, q_now, q_to, q_all):
        move_arm(lab, model, side, q_now, rest_pose(side))
        q_now = rest_pose(side)
    move_arm(lab, model, side, q_now, q_to)


def start_at_rest(lab: RealCell, model: CellModel, side: str) -> None:
    """Bring arm ``side`` to rest before a session, refusing if no safe straight move gets it there."""
    q_all = {s: lab.read_encoders(s) for s in SIDES}
    if not model.path_is_safe(side, q_all[side][:7], rest_pose(side), q_all):
        raise R2S2RError(
            f"{side} arm: no safe straight joint move from its current pose "
            f"{np.round(q_all[side][:7], 3).tolist()} to its rest pose; bring it to rest before calibrating"
        )
    move_arm(lab, model, side, q_all[side][:7], rest_pose(side))


def unmount_target(lab: RealCell, model: CellModel, side: str) -> None:
    """Back to rest, target off. A remount holds the arms where their encoders read: settle
    before it, re-command the rest pose after it."""
    go_to(lab, model, side, rest_pose(side))
    lab.hold(2 * model.config.settle)
    mount_target(lab, None)
    go_to(lab, model, side, rest_pose(side))
    lab.hold(2 * model.config.settle)


def mount_target(lab: RealCell, mount: TargetMount | None) -> None:
    """(Un)mount the target, then re-command both open hands: a remount holds each joint where its
    encoder reads, which for a finger resting on its stop can be a hair outside its range."""
    lab.mount_target(mount)
    for side in SIDES:
        q = lab.read_encoders(side)
        q[7:] = hand_open_pose()
        lab.execute_trajectory(side, np.array([0.01]), q[None])
