"""Touch probing with the right index fingertip: probe definitions, the pointing hand, the
fingertip position from encoders through the FACTORY kinematics, and the arm motions between
probes (each checked with the robot's own safety model before it is sent).

Frames: ``base`` is the right arm's base frame. Lengths in m, angles rad.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import R2S2RError
from r2s2r.geometry import axis_angle_quat, min_jerk, quat_to_mat
from r2s2r.lab.real_cell import KinematicCalibration, RealCell
from r2s2r.lab.safety import SafetyFilter
from r2s2r.world import rizon
from r2s2r.world.hand import FINGER_LEN, FINGER_MCP, FINGER_RADIUS, HAND_JOINTS, hand_open_pose
from r2s2r.world.params import WorldParams

PARTS = ("conveyor", "red_bin", "blue_bin")
_log = logging.getLogger(__name__)
TIP_RADIUS = FINGER_RADIUS["index"]
_Z = np.array([0.0, 0.0, 1.0])
# The folded hand's centre (its other fingers and thumb, x <= 0.104 m) relative to the index tip, tip frame.
HAND_CENTRE = np.array([0.0, 0.031, 0.019])
# Points of the folded hand (flange frame, homogeneous columns) whose height bounds the hand's.
_HAND_POINTS = np.array(
    [[0.178, -0.031, 0.02, 1], *[[x, y, z, 1] for x in (0.0, 0.104) for y in (-0.042, 0.042) for z in (0.005, 0.076)]]
).T
# IK seeds for transit configurations (rad): home and a few elbow-up reaches over the conveyor and bins.
_SEEDS = (
    rizon.HOME_Q,
    (0.3, 0.3, 0.0, 1.6, 0.0, 0.8, 0.0),
    (-0.5, 0.3, 0.0, 1.8, 0.0, 0.5, 0.0),
    (0.0, -0.5, 0.0, 2.0, 0.0, 1.0, 0.0),
)


@dataclass(frozen=True)
class ProbeConfig:
    """How the probing moves. Tolerances are the drawing's (1 sigma): the prior, and the first probes' reach."""

    approach_speed: float = 0.015  # m/s of the guarded approach
    force_threshold: float = 1.0  # N
    margin: float = 0.01  # m of free travel before (and past) the 3-sigma band of the expected surface
    overshoot: float = 0.015  # m more commanded travel: a servo lags its target by several mm in free motion
    max_span: float = 0.06  # m, cap on the start distance and on the overtravel
    travel_speed: float = 0.1  # m/s of transit moves (peak ~1.9x)
    settle: float = 0.4  # s to hold after a transit: the servos lag their targets (~0.2 s) and friction holds them off
    turn_speed: float = 1.0  # rad/s of hand reorientation in transits
    joint_speed: float = 0.8  # rad/s (largest joint) of joint-space hops at the safe height
    joint_margin: float = 0.04  # rad kept from the joint limits (the safety filter clips at 0.02)
    step: float = 0.02  # m between Cartesian waypoints of transit moves
    safe_z: float = 0.03  # m, base-frame z of the fingertip during transits (above rails and rims)
    compression: float = 0.0  # m the fingertip sinks into a surface before the force threshold (negligible here)
    noise: float = 0.0005  # m, 1-sigma probe repeatability (fit weights)
    pos_tol: tuple[float, float, float] = (0.015, 0.015, 0.005)  # m, drawing tolerance of x, y, z
    yaw_tol: float = math.radians(1.5)
    max_residual: float = 0.004  # m; a larger fit residual means the finger touched something else


@dataclass(frozen=True)
class Probe:
    """One touch of a drawing plane: a point on it (where the hand's centre goes; the tip lands beside it)
    and its outward normal (part frame), the finger's
    tilt from vertical toward the plane (0: straight down) and which way the palm faces (the curled
    fingers and the thumb stand out in front of it; the arm leaves the hand from its back)."""

    part: str
    label: str
    point: tuple[float, float, float]
    normal: tuple[float, float, float]
    tilt: float = 0.0
    palm: str = "robot"  # palm normal: "robot" (toward the arm's base), "away" (from the plane), "side" (n x z)


def _bin_probes(part: str, tilt: float = math.radians(20)) -> list[Probe]:
    """Floor and inner walls of a bin (inside 0.18 x 0.18 x 0.12 m), wall probes 5 cm above the floor,
    up to 3.5 cm either side of a wall's centre (yaw). The palm faces into the bin ("away"), or along
    the wall ("side") for the wall nearest the arm."""
    probes = [Probe(part, "floor0", (0.0, 0.0, 0.0), (0, 0, 1))]
    order = (("+x", 0.0), ("+y", 0.0), ("-x", 0.035), ("-x", -0.035), ("-y", 0.0))
    order += (("+x", 0.035), ("+x", -0.035), ("+y", 0.035), ("+y", -0.035))
    for name, offset in order:
        n = np.zeros(3)
        n["xy".index(name[1])] = -1.0 if name[0] == "+" else 1.0  # inner face: the normal points into the bin
        point = -0.09 * n + offset * np.cross(_Z, n) + [0, 0, 0.05]
        palm = "side" if name == "+y" else "away"
        label = f"wall{name}@{1000 * offset:+.0f}mm"
        probes.append(Probe(part, label, tuple(float(v) for v in point), tuple(float(v) for v in n), tilt, palm))
    return probes + [Probe(part, "floor1", (0.03, -0.03, 0.0), (0, 0, 1))]


def default_probes() -> tuple[Probe, ...]:
    """Every probe, in the order they are touched (part frames of the drawing)."""
    t, t_end = math.radians(30), math.radians(45)
    conveyor = [
        Probe("conveyor", "top0", (0.25, -0.08, 0.0), (0, 0, 1)),
        Probe("conveyor", "rail0", (0.45, -0.17, -0.04), (0, -1, 0), t, "away"),
        Probe("conveyor", "rail1", (0.0, -0.17, -0.04), (0, -1, 0), t, "away"),
        Probe("conveyor", "rail2", (0.22, -0.17, -0.06), (0, -1, 0), t, "away"),
        Probe("conveyor", "end0", (0.6, 0.0, -0.09), (1, 0, 0), t_end, "away"),
        Probe("conveyor", "end1", (0.6, 0.1, -0.09), (1, 0, 0), t_end, "away"),
        Probe("conveyor", "top1", (0.05, -0.06, 0.0), (0, 0, 1)),
        Probe("conveyor", "top2", (0.45, 0.0, 0.0), (0, 0, 1)),
    ]
    return tuple(conveyor + _bin_probes("red_bin") + _bin_probes("blue_bin"))


def pointing_hand_pose() -> np.ndarray:
    """(20,) hand targets: index straight, middle/ring/little curled, thumb folded in front of the palm."""
    q = hand_open_pose()
    q[HAND_JOINTS.index("index_0")] = 0.0
    for finger in ("middle", "ring", "little"):
        for k, v in zip((1, 2, 3), (1.5, 1.6, 1.2), strict=True):
            q[HAND_JOINTS.index(f"{finger}_{k}")] = v
    q[:4] = (1.5, 0.6, 0.8, 0.8)
    return q


def T_flange_index_tip(hand_q: np.ndarray) -> np.ndarray:
    """Pose of the index fingertip site (frame of the distal link) in the flange frame, for hand joints
    ``hand_q`` (20,), from the hand geometry (the hand root sits at the flange; right hand)."""
    q0, q1, q2, q3 = np.asarray(hand_q, float)[4:8]
    flex = np.array([0.0, -1.0, 0.0])
    R1 = quat_to_mat(axis_angle_quat(_Z, q0)) @ quat_to_mat(axis_angle_quat(flex, q1))
    R2 = R1 @ quat_to_mat(axis_angle_quat(flex, q2))
    R3 = R2 @ quat_to_mat(axis_angle_quat(flex, q3))
    length = FINGER_LEN["index"]
    T = np.eye(4)
    T[:3, :3] = R3
    T[:3, 3] = np.asarray(FINGER_MCP["index"]) + R1[:, 0] * length[0] + R2[:, 0] * length[1] + R3[:, 0] * length[2]
    return T


def tip_in_base(factory: KinematicCalibration, encoders: np.ndarray) -> np.ndarray:
    """(3,) fingertip centre in the base frame from a 27-value encoder reading (factory kinematics)."""
    return (factory.forward(encoders[:7]) @ T_flange_index_tip(encoders[7:]))[:3, 3]


# --- motions -------------------------------------------------------------------------------------


def tool_rotation(normal: np.ndarray, tilt: float, palm: str, point: np.ndarray) -> np.ndarray:
    """R_base_tip for a probe of the plane with outward ``normal`` (base frame) at ``point``: the finger
    (tip frame +x) points down, tilted by ``tilt`` toward the plane; the palm normal (+z) faces the
    robot's base axis ("robot"), away from the plane ("away") or along it ("side": toward normal x z,
    so that the hand's +y, where the other fingers lie, points away from the plane)."""
    n = np.asarray(normal, float)
    n_h = n - (n @ _Z) * _Z
    if np.linalg.norm(n_h) < 1e-6:
        d, n_h = -_Z, None
    else:
        n_h = n_h / np.linalg.norm(n_h)
        d = -math.cos(tilt) * _Z - math.sin(tilt) * n_h
    if palm == "robot":
        p = -np.array([point[0], point[1], 0.0])
    elif palm in ("away", "side") and n_h is not None:
        p = n_h if palm == "away" else np.cross(n_h, _Z)
    else:
        raise R2S2RError(f"probe palm {palm!r} for normal {n.tolist()}; expected 'robot', or 'away'/'side' for a wall")
    p = p - (p @ d) * d
    p /= np.linalg.norm(p)
    return np.column_stack([d, np.cross(p, d), p])


class ProbeArm:
    """The right arm as the probing procedure drives it: straight fingertip paths through IK on the
    factory kinematics, streamed at 100 Hz; ``q`` is the last commanded arm target. Every planned path
    is checked with the robot's own model of the cell (drawing layout, factory kinematics) the way the
    controller's safety filter will check it, and kept ``joint_margin`` inside the joint ranges."""

    def __init__(self, lab: RealCell, spec: WorldParams, config: ProbeConfig) -> None:
        from r2s2r.behavior.ik import ArmIK  # mink: imported only by procedures that move the arm

        self.lab, self.config = lab, config
        self.factory = lab.factory_calibration("right")
        self.hand = pointing_hand_pose()
        self.ik = ArmIK.from_kinematics(self.factory, T_flange_index_tip(self.hand))
        self.q = np.asarray(lab.read_encoders("right")[:7], float)
        self.left = np.asarray(lab.read_encoders("left"), float)
        self.visited: list[np.ndarray] = []  # configurations that touched: IK seeds for later hops
        kin = {
            f"{s}_arm": dataclasses.replace(
                getattr(spec, f"{s}_arm"), link_pos=f.link_pos, flange_pos=f.flange_pos, joint_zero=f.joint_zero
            )
            for s, f in (("right", self.factory), ("left", lab.factory_calibration("left")))
        }
        self.checker = SafetyFilter(spec.replace(**kin))

    def pose(self, q: np.ndarray | None = None) -> np.ndarray:
        return self.ik.forward(self.q if q is None else q)

    def solve(self, T: np.ndarray, seed: np.ndarray, what: str) -> np.ndarray:
        res = self.ik.solve(T, seed)
        if not res.ok:
            p = np.round(T[:3, 3] * 1000).astype(int).tolist()
            raise R2S2RError(
                f"registration: {what}: no arm configuration puts the fingertip at {p} mm (base frame) with the "
                f"planned orientation (IK error {res.pos_err * 1000:.1f} mm, {math.degrees(res.rot_err):.1f} deg)"
            )
        return res.q

    def check(self, qs: np.ndarray, what: str) -> None:
        """Raise unless every configuration of ``qs`` (N, 7) and between them is safe and inside the ranges."""
        room = np.minimum(qs - rizon.JOINT_RANGE[:, 0], rizon.JOINT_RANGE[:, 1] - qs).min()
        if room < self.config.joint_margin:
            raise R2S2RError(f"registration: {what}: the path comes {room:.3f} rad from a joint limit")
        before = sum(self.checker.counts.values())
        for q in np.concatenate([qs, 0.5 * (qs[1:] + qs[:-1])]):
            self.checker.filter("right", np.r_[q, self.hand], np.r_[q, self.hand], 1.0, {"left": self.left})
            if sum(self.checker.counts.values()) != before:
                raise R2S2RError(f"registration: {what}: the planned path is unsafe ({self.checker.log[-1]})")

    def plan(self, T_goal: np.ndarray, q_from: np.ndarray, what: str) -> np.ndarray:
        """Joint waypoints (N, 7) from ``q_from`` moving the fingertip on a straight line (slerped
        orientation) to ``T_goal``; raises if infeasible or unsafe."""
        T0 = self.pose(q_from)
        R_rel = T0[:3, :3].T @ T_goal[:3, :3]
        angle = math.acos(float(np.clip((np.trace(R_rel) - 1) / 2, -1, 1)))
        axis = np.array([R_rel[2, 1] - R_rel[1, 2], R_rel[0, 2] - R_rel[2, 0], R_rel[1, 0] - R_rel[0, 1]])
        axis = axis / np.linalg.norm(axis) if np.linalg.norm(axis) > 1e-9 else _Z
        dist = float(np.linalg.norm(T_goal[:3, 3] - T0[:3, 3]))
        n = max(1, int(math.ceil(max(dist / self.config.step, angle / math.radians(10)))))
        qs = [np.asarray(q_from, float)]
        for k in range(1, n + 1):
            T = np.eye(4)
            T[:3, :3] = T0[:3, :3] @ quat_to_mat(axis_angle_quat(axis, k / n * angle))
            T[:3, 3] = T0[:3, 3] + k / n * (T_goal[:3, 3] - T0[:3, 3])
            qs.append(self.solve(T, qs[-1], what))
        qs = np.asarray(qs)
        self.check(qs, what)
        return qs

    def run(self, qs: np.ndarray) -> None:
        """Stream planned waypoints with a minimum-jerk time scaling, then let the servos settle."""
        c = self.config
        T0, T1 = self.pose(qs[0]), self.pose(qs[-1])
        dist = float(np.linalg.norm(T1[:3, 3] - T0[:3, 3]))
        angle = math.acos(float(np.clip((np.trace(T0[:3, :3].T @ T1[:3, :3]) - 1) / 2, -1, 1)))
        duration = max(0.4, 1.875 * max(dist / c.travel_speed, angle / c.turn_speed))
        n = len(qs) - 1
        t = np.arange(1, int(math.ceil(duration / 0.01)) + 1) * 0.01
        u = min_jerk(np.clip(t / duration, 0, 1)) * n
        k = np.minimum(np.floor(u).astype(int), n - 1)
        self.lab.execute_trajectory("right", t, qs[k] + (u - k)[:, None] * (qs[k + 1] - qs[k]))
        self.lab.hold(c.settle)
        self.q = qs[-1]

    def path(self, T_goal: np.ndarray, what: str) -> None:
        self.run(self.plan(T_goal, self.q, what))

    def transit(self, T_above: np.ndarray, T_start: np.ndarray, what: str) -> None:
        """To ``T_start`` by way of ``T_above`` (at the safe height): a straight path if feasible, else a
        joint-space hop at the safe height to a configuration (IK from several seeds: home, a few reaches,
        the configurations that touched so far; nearest first) from which the descent is feasible. A hop
        must keep the hand above ``safe_z - 0.04`` m."""
        try:
            up = self.plan(T_above, self.q, what)
            down = self.plan(T_start, up[-1], what)
            self.run(up)
            self.run(down)
            return
        except R2S2RError:
            pass
        c = self.config
        found = []
        for seed in (self.q, *_SEEDS, *self.visited):
            res = self.ik.solve(T_above, np.asarray(seed, float))
            if res.ok:
                found.append((float(np.abs(res.q - self.q).max()), tuple(res.q)))
        s = np.linspace(0, 1, 25)[:, None]
        for _, q_goal in sorted(set(found)):
            qs = self.q + s * (np.asarray(q_goal) - self.q)
            if min(float((self.factory.forward(q) @ _HAND_POINTS)[2].min()) for q in qs) < c.safe_z - 0.04:
                continue
            try:
                self.check(qs, what)
                down = self.plan(T_start, qs[-1], what)
            except R2S2RError:
                continue
            _log.debug("hop %s: q %s -> %s", what, np.round(self.q, 2), np.round(qs[-1], 2))
            self.lab.move_to("right", qs[-1], max(1.0, float(np.abs(qs[-1] - self.q).max()) / c.joint_speed))
            self.lab.hold(c.settle)
            self.q = qs[-1]
            self.run(down)
            return
        p = np.round(T_start[:3, 3] * 1000).astype(int).tolist()
        raise R2S2RError(f"registration: {what}: found no safe arm motion to the probe's start at {p} mm (base frame)")

    def touch(self, T_deep: np.ndarray, T_end: np.ndarray, what: str) -> tuple[bool, np.ndarray]:
        """Guarded move from the current pose toward ``T_end``; returns (contact, fingertip centre (3,)).
        The path is checked as far as ``T_deep`` (the far side of the expected surface's band): the rest
        is overshoot for the servo lag, reached only if the surface is missing."""
        q_end = self.solve(T_end, self.q, what)
        self.check(np.array([self.q, self.solve(T_deep, self.q, what)]), what)
        span = float(np.linalg.norm(T_end[:3, 3] - self.pose()[:3, 3]))
        res = self.lab.guarded_move("right", q_end, span / self.config.approach_speed, self.config.force_threshold)
        enc = self.lab.read_encoders("right")  # arm and finger joints while touching
        self.q = np.asarray(res.q, float) if res.contact else q_end
        if res.contact:
            self.visited.append(self.q)
        return res.contact, tip_in_base(self.factory, enc)
