"""Ungrounded behaviour: a grasp sampler and a motion planner pick the object off the moving belt.

``MotionPlanner`` (provenance ``behavior=planner``) plans a whole episode at its first step from
the simulator's state (object pose, belt speed: a simulated world is open to it), without any
human motion reference:

1. grasps: ``GraspSampler`` proposals for the object, turned about the object's symmetry axis
   toward the arm (fingers pointing away from the base), best score first;
2. interception: for each grasp, the earliest grasp time on a grid whose pre-grasp the arm reaches
   in time (collision-checked IK, RRT-Connect from the start), whose grasp track (``grasp_track``)
   has an IK solution at every control step within the joint speed limits, and is free of
   collisions (hand-object and hand-belt contacts allowed while grasping);
3. carry: RRT-Connect (with shortcutting) to a release pose over the bin of the object's colour,
   with the object in the hand checked against the cell; release by opening the hand, then back
   the open hand up out of the bin.

Joint paths are timed under the arm's velocity and acceleration limits (fast and direct). The
commands are joint targets: a target reaches the servo at the end of its control period, so the
command of step k is the planned configuration at t_{k+1}, plus a velocity feed-forward
``(kv + damping) / kp * qdot`` that cancels the position servo's lag (the gains of the simulated
arm). Failures raise ``PlanningFailed`` with the furthest stage reached: ``no_grasp``,
``unreachable``, ``too_late``, ``collision``, ``no_carry_path``, ``release_unreachable``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from r2s2r.behavior.collision import CellCollision, CollisionConfig, collision_free_ik
from r2s2r.behavior.grasps import Grasp, GraspConfig, GraspSampler
from r2s2r.behavior.ik import ArmIK, IKConfig
from r2s2r.behavior.intercept import BeltMotion, GraspTiming, GraspTrack, grasp_track
from r2s2r.behavior.rrt import RRTConfig, Trajectory, rrt_connect, shortcut, time_parameterize
from r2s2r.errors import ConfigError, PlanningFailed
from r2s2r.geometry import axis_angle_quat, inv_T, make_T, mat_to_quat, min_jerk, quat_to_mat
from r2s2r.world import rizon
from r2s2r.world.cell import SimCell
from r2s2r.world.conditions import Condition
from r2s2r.world.hand import hand_grasp_pose, hand_open_pose

STAGES = ("no_grasp", "unreachable", "too_late", "collision", "no_carry_path", "release_unreachable")


@dataclass(frozen=True)
class PlannerConfig:
    # Oblique approaches are sampled by the grasp generator but left out here: executed under
    # physics they admitted 3 of 5 picks where top grasps admitted 15 of 15 (same episodes, see
    # docs/benchmarks.md), a difference the kinematic grasp score does not see.
    grasps: GraspConfig = GraspConfig(approaches=("top", "side"))
    timing: GraspTiming = GraspTiming()
    rrt: RRTConfig = RRTConfig()
    collision: CollisionConfig = CollisionConfig()
    ik: IKConfig = IKConfig(max_iters=80, stall_iters=8)
    speed_fraction: float = 0.7  # of the rated joint speeds (rizon.VELOCITY_LIMIT)
    accel_limit: tuple[float, ...] = (6.0, 6.0, 8.0, 8.0, 12.0, 12.0, 12.0)  # rad/s^2
    max_grasps: int = 4  # grasp proposals tried, best first ...
    yaw_alternatives: int = 3  # ... each at up to this many equivalent turns about the object's axis
    max_yaw_deviation: float = math.radians(100.0)  # of the fingers from pointing away from the base
    grasp_times: float = 0.2  # s between candidate grasp times
    approach_slack: float = 0.1  # s of the approach trajectory kept in hand before the pre-grasp
    belt_margin: float = 0.12  # m: the grasp must end this far before the belt's downstream end
    ik_restarts: int = 2
    ready_steps: int = 8  # Cartesian steps of the walk to the ready pose (the IK seed)
    release_clearance: float = 0.07  # object centre this far above the bin rim at release, m
    via_rises: tuple[float, ...] = (0.05, 0.15)  # carry via-points this far above the ends' midpoint, m
    release_yaws: int = 12  # hand turns about the vertical tried for the release
    release_time: float = 0.4  # s to open the hand
    retreat_height: float = 0.1  # m the open hand backs up after the release
    feedforward: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.speed_fraction <= 1:
            raise ConfigError(f"planner.speed_fraction: expected (0, 1], got {self.speed_fraction}")
        if len(self.accel_limit) != 7 or min(self.accel_limit) <= 0:
            raise ConfigError(f"planner.accel_limit: expected 7 positive values, got {self.accel_limit}")
        if self.max_grasps < 1 or self.grasp_times <= 0 or self.release_yaws < 1:
            raise ConfigError("planner: max_grasps >= 1, grasp_times > 0 and release_yaws >= 1 expected")


@dataclass(frozen=True, eq=False)
class PlannedEpisode:
    """A planned episode: 27-D commands per control step and their ``datagen_info``."""

    commands: np.ndarray  # (n, 27)
    q_plan: np.ndarray  # (n, 7): the planned arm configuration each command aims at (no feed-forward)
    frames: dict[str, Any]  # per-step arrays: target_pose (n,4,4), gripper_action (n,), subtask signals
    grasp: Grasp
    t_grasp: float
    phases: dict[str, float] = field(default_factory=dict)  # phase start times, s

    def act(self, cell: SimCell, step: int) -> np.ndarray | None:
        return self.commands[step] if step < len(self.commands) else None

    def info(self, step: int) -> dict[str, Any]:
        k = min(step, len(self.commands) - 1)
        f = self.frames
        return {
            "target_pose": f["target_pose"][k],
            "gripper_action": f["gripper_action"][k],
            "subtask_term_signals": {name: v[k] for name, v in f["subtask_term_signals"].items()},
        }


class _Failures:
    """The furthest planning stage reached, for the failure reason."""

    def __init__(self) -> None:
        self.stage = -1
        self.detail = ""

    def note(self, reason: str, detail: str = "") -> None:
        i = STAGES.index(reason)
        if i > self.stage:
            self.stage, self.detail = i, detail

    def raise_(self):
        raise PlanningFailed(STAGES[max(self.stage, 0)], self.detail)


class MotionPlanner:
    """The planner behaviour. Keeps grasps per object and models per compiled cell."""

    name = "planner"

    def __init__(self, config: PlannerConfig = PlannerConfig(), shared: Path | None = None) -> None:
        self.config = config
        self.sampler = GraspSampler(config.grasps, shared)  # shared: see GraspSampler
        self._checkers: dict[int, tuple[Any, CellCollision]] = {}
        self._iks: dict[Any, ArmIK] = {}
        c = config
        self.vmax = np.asarray(rizon.VELOCITY_LIMIT) * c.speed_fraction
        self.amax = np.asarray(c.accel_limit)
        self.lo = rizon.JOINT_RANGE[:, 0] + 0.02
        self.hi = rizon.JOINT_RANGE[:, 1] - 0.02

    # --- models ------------------------------------------------------------------------------
    def _checker(self, cell: SimCell) -> CellCollision:
        m = cell.engine.model
        hit = self._checkers.get(id(m))
        if hit is None or hit[0] is not m:
            hit = self._checkers[id(m)] = (m, CellCollision(m, cell.engine.data, self.config.collision))
        checker = hit[1]
        checker.data.qpos[:] = cell.engine.data.qpos  # the other arm and the belt as they are now
        return checker

    def _ik(self, cell: SimCell) -> ArmIK:
        arm = cell.params.right_arm
        if arm not in self._iks:
            self._iks[arm] = ArmIK.from_kinematics(arm, None, self.config.ik)
        return self._iks[arm]

    # --- planning ----------------------------------------------------------------------------
    def candidates(self, object_name: str, T_world_object: np.ndarray, base_pos: np.ndarray) -> list[Grasp]:
        """Grasps to try: the ``max_grasps`` best proposals, each turned about the object's
        symmetry axis to its ``yaw_alternatives`` equivalents closest to fingers pointing away
        from the arm's base (best proposal first, its turns in order of that deviation)."""
        c = self.config
        away = T_world_object[:2, 3] - base_pos[:2]
        away_yaw = math.atan2(away[1], away[0])
        out = []
        for g in self.sampler.grasps(object_name)[: c.max_grasps]:
            turns = []
            for angle in g.equivalent_angles(math.radians(10.0)):
                x = (T_world_object @ g.about_z(angle).T_object_hand)[:3, 0]
                if np.hypot(x[0], x[1]) < 1e-6:  # fingers straight up or down: any turn is alike
                    turns.append((0.0, angle))
                    continue
                turns.append((abs((math.atan2(x[1], x[0]) - away_yaw + math.pi) % (2 * math.pi) - math.pi), angle))
            turns.sort()
            picked: list[float] = []
            for dev, angle in turns:  # distinct turns, at least 25 degrees apart
                if dev <= c.max_yaw_deviation and all(abs(angle - a) > math.radians(25) for a in picked):
                    picked.append(angle)
                if len(picked) == c.yaw_alternatives:
                    break
            out += [g.about_z(a) for a in picked]
        return out

    def plan(self, cell: SimCell, condition: Condition, rng: np.random.Generator) -> PlannedEpisode:
        c = self.config
        dt = cell.config.control.control_dt
        eng = cell.engine
        checker, ik = self._checker(cell), self._ik(cell)
        base = cell.params.right_arm.base
        T_world_base = make_T(base.pos, base.quat)
        T_base_world = inv_T(T_world_base)
        motion = BeltMotion.from_cell(cell)
        q0 = eng.joint_positions("right")[:7]
        fails = _Failures()
        grasps = self.candidates(eng.object_name, motion.T0, np.asarray(base.pos))
        if not grasps:
            fails.note("no_grasp", eng.object_name)
            fails.raise_()
        t_latest = motion.end_time - c.belt_margin / max(np.linalg.norm(motion.velocity), 1e-6)
        found = None
        for grasp in grasps:
            found = self._intercept(
                grasp, motion, q0, cell.time, t_latest, dt, checker, ik, T_base_world, rng, fails, cell.params.right_arm
            )
            if found is not None:
                break
        if found is None:
            fails.raise_()
        grasp, t_grasp, approach, t_start, track, q_track = found
        carry, q_release = self._carry(grasp, motion, track, q_track[-1], cell, checker, ik, T_base_world, rng, fails)
        T_up = T_world_base @ ik.forward(q_release)
        T_up[2, 3] += c.retreat_height
        up = ik.solve(T_base_world @ T_up, q_release)  # the open hand backs up out of the bin
        retreat = time_parameterize([q_release, up.q if up.ok else q_release], self.vmax, self.amax)
        return self._assemble(cell, grasp, t_grasp, approach, t_start, track, q_track, carry, retreat, ik, T_world_base)

    @staticmethod
    def _beyond_reach(T_base_flange: np.ndarray, arm) -> float:
        """How far (m) the flange pose lies beyond the arm's reach from its shoulder (joint 2),
        an upper bound from the link lengths; <= 0 when it may be reachable."""
        shoulder = np.asarray(arm.link_pos[0]) + np.asarray(arm.link_pos[1])
        reach = sum(float(np.linalg.norm(p)) for p in arm.link_pos[2:]) + float(np.linalg.norm(arm.flange_pos))
        return float(np.linalg.norm(T_base_flange[:3, 3] - shoulder)) - reach

    def _intercept(self, grasp, motion, q0, t_now, t_latest, dt, checker, ik, T_base_world, rng, fails, cell_arm):
        """The earliest feasible grasp time for ``grasp``: (grasp, t_grasp, approach, t_start,
        track, q_track), or None."""
        c, tm = self.config, self.config.timing
        hand_pre = hand_grasp_pose(grasp.kind, 0.0)
        ready = self._ready(ik, T_base_world, motion, q0)
        seeds = [ready]
        approach = None
        t_grasp = t_now + tm.descend + dt * math.ceil(0.4 / dt)
        while t_grasp + tm.close + tm.lift <= t_latest:
            t_grasp = round(t_grasp / dt) * dt  # grasps start on the control grid
            track = grasp_track(motion, grasp.T_object_hand, t_grasp, tm, dt)
            t_pre = track.times[0]
            far = max(
                self._beyond_reach(T_base_world @ T, cell_arm) for T in track.poses[:: max(1, len(track.poses) // 4)]
            )
            if far > 0:  # some pose lies beyond the arm's reach: the object is still far (or past)
                fails.note("unreachable", f"grasp track at t={t_grasp:.1f} s is {far:.2f} m out of reach")
                t_grasp += max(c.grasp_times, dt * math.floor(far / max(np.linalg.norm(motion.velocity), 1e-3) / dt))
                continue
            pre = collision_free_ik(
                ik, checker, T_base_world @ track.poses[0], seeds, rng, c.ik_restarts,
                q_hand=hand_pre, object_pose=motion.pose(t_pre),
            )  # fmt: skip
            q_track = None if pre is None else self._follow(track, pre.q, ik, T_base_world, dt)
            if q_track is None:
                fails.note("unreachable", f"grasp track at t={t_grasp:.1f} s")
                t_grasp += c.grasp_times
                continue
            seeds = [pre.q, ready]
            hit = self._track_free(track, q_track, grasp, motion, checker)
            if hit is not None:
                fails.note("collision", f"grasp track at t={t_grasp:.1f} s ({hit})")
                if hit == "conveyor":
                    return None  # the hand meets the rails or bed wherever along the belt it grasps
                t_grasp += c.grasp_times
                continue

            def motion_free(a, b, _T=motion.pose(t_pre)):
                return checker.motion_free(a, b, q_hand=hand_pre, object_pose=_T)

            # the approach to this pre-grasp: a lower bound from the last one before planning it
            if approach is None or t_pre - approach.duration - c.approach_slack >= t_now:
                path = self._path(q0, pre.q, [ready], motion_free, rng)
                if path is None:
                    fails.note("unreachable", "no approach path")
                    t_grasp += c.grasp_times
                    continue
                approach = time_parameterize(path, self.vmax, self.amax)
            t_start = t_pre - approach.duration - c.approach_slack
            if t_start < t_now:
                fails.note("too_late", f"approach needs {approach.duration:.2f} s")
                t_grasp += max(c.grasp_times, dt * math.ceil((t_now - t_start) / dt))
                continue
            return grasp, t_grasp, approach, t_start, track, q_track
        return None

    def _path(self, qa, qb, vias, motion_free, rng) -> list[np.ndarray] | None:
        """A free joint path qa -> qb: direct, else through one of ``vias``, else RRT-Connect
        with shortcutting."""
        if motion_free(qa, qb):
            return [qa, qb]
        for v in vias:
            if v is not None and motion_free(qa, v) and motion_free(v, qb):
                return [qa, v, qb]
        path = rrt_connect(qa, qb, motion_free, self.lo, self.hi, rng, self.config.rrt)
        return None if path is None else shortcut(path, motion_free, rng, self.config.rrt.shortcut_tries)

    def _vias(self, ik: ArmIK, T_base_world, T_world_hand_a, qa, qb) -> list[np.ndarray | None]:
        """Carry via-points: the hand (orientation kept) midway between the two ends, raised."""
        T_b = inv_T(T_base_world) @ ik.forward(qb)
        out = []
        for rise in self.config.via_rises:
            T = T_world_hand_a.copy()
            T[:3, 3] = 0.5 * (T_world_hand_a[:3, 3] + T_b[:3, 3]) + [0.0, 0.0, rise]
            res = ik.solve(T_base_world @ T, 0.5 * (qa + qb))
            out.append(res.q if res.ok else None)
        return out

    def _ready(self, ik: ArmIK, T_base_world, motion: BeltMotion, q0) -> np.ndarray:
        """An IK seed on the arm's natural branch: the hand walked in a straight line (and a
        uniform turn) from where it is to palm down above the object's lane, IK warm-started at
        every step so the solution stays continuous with ``q0``."""
        T_a = ik.forward(q0)
        T_b = np.eye(4)
        T_b[:3, :3] = np.diag([1.0, -1.0, -1.0])
        T_b[:3, 3] = motion.T0[:3, 3] * [1.0, 0.0, 1.0] + [0.0, 0.0, 0.2]
        T_b = T_base_world @ T_b
        quat = mat_to_quat(T_a[:3, :3].T @ T_b[:3, :3])
        rotvec = np.zeros(3)
        mujoco.mju_quat2Vel(rotvec, quat, 1.0)
        angle = float(np.linalg.norm(rotvec))
        q = np.asarray(q0, float)
        for s in np.linspace(0.0, 1.0, self.config.ready_steps + 1)[1:]:
            T = np.eye(4)
            T[:3, :3] = T_a[:3, :3] @ (quat_to_mat(axis_angle_quat(rotvec, s * angle)) if angle > 1e-9 else np.eye(3))
            T[:3, 3] = T_a[:3, 3] + s * (T_b[:3, 3] - T_a[:3, 3])
            q = ik.solve(T, q).q
        return q

    def _follow(self, track: GraspTrack, q_pre, ik: ArmIK, T_base_world, dt) -> np.ndarray | None:
        """IK at every pose of the track (warm-started), within the joint speed limits."""
        qs, q = [q_pre], q_pre
        for T in track.poses[1:]:
            res = ik.solve(T_base_world @ T, q)
            if not res.ok or np.any(np.abs(res.q - q) > self.vmax * dt):
                return None
            q = res.q
            qs.append(q)
        return np.asarray(qs)

    def _track_free(self, track, q_track, grasp, motion, checker) -> str | None:
        """None if the grasp track is collision-free; else ``"conveyor"`` when the hand meets the
        conveyor's frame (rails, bed: straight along the belt, so the grasp would meet it at any
        time) or ``"arm"`` for other collisions."""
        held = inv_T(grasp.T_object_hand)
        for t, q, s, k in zip(track.times, q_track, track.closure, track.phase, strict=True):
            hand = hand_grasp_pose(grasp.kind, float(s))
            if k < 2:
                kw = {"object_pose": motion.pose(t), "allow": ("hand_object", "hand_belt")}
            else:
                kw = {"held": held, "allow": ("hand_belt", "object_belt")}
            if not checker.free(q, hand, **kw):
                hits = checker.collisions(q, hand, **kw)
                frame = any(
                    (a in checker.hand_names and b.startswith("conveyor"))
                    or (b in checker.hand_names and a.startswith("conveyor"))
                    for a, b, _ in hits
                )
                return "conveyor" if frame else "arm"
        return None

    def _carry(self, grasp, motion, track, q_lift, cell, checker, ik, T_base_world, rng, fails):
        """Timed path from the end of the lift to a release pose over the bin of the object's colour."""
        c = self.config
        held = inv_T(grasp.T_object_hand)
        hand = hand_grasp_pose(grasp.kind, 1.0)
        b = cell.params.bin(cell.condition.color)
        T_world_bin = make_T(b.pose.pos, b.pose.quat)
        T_obj_lift = track.poses[-1] @ held
        goals = []
        for k in range(c.release_yaws):
            yaw = 2 * math.pi * k / c.release_yaws
            T_obj = np.eye(4)
            T_obj[:3, :3] = quat_to_mat(axis_angle_quat((0, 0, 1), yaw)) @ T_obj_lift[:3, :3]
            T_obj[:3, 3] = (T_world_bin @ [0.0, 0.0, b.size[2] + c.release_clearance, 1.0])[:3]
            goals.append(T_base_world @ (T_obj @ grasp.T_object_hand))
        best = None
        for restarts in (0, c.ik_restarts):  # the yaws reachable from the seeds; else random restarts
            for T in goals:
                res = collision_free_ik(ik, checker, T, [q_lift, cell.engine.joint_positions("right")[:7]], rng,
                                        restarts, q_hand=hand, held=held)  # fmt: skip
                if res is not None:
                    cost = float(np.max(np.abs(res.q - q_lift) / self.vmax))
                    if best is None or cost < best[0]:
                        best = (cost, res.q)
            if best is not None:
                break
        if best is None:
            fails.note("release_unreachable", f"{cell.condition.color} bin")
            fails.raise_()

        def motion_free(a, b_):
            return checker.motion_free(a, b_, q_hand=hand, held=held)

        path = self._path(
            q_lift, best[1], self._vias(ik, T_base_world, track.poses[-1], q_lift, best[1]), motion_free, rng
        )
        if path is None:
            fails.note("no_carry_path")
            fails.raise_()
        return time_parameterize(path, self.vmax, self.amax), best[1]

    def _assemble(self, cell, grasp, t_grasp, approach: Trajectory, t_start, track, q_track, carry, retreat, ik,
                  T_world_base):  # fmt: skip
        """Commands and per-step info on the control grid."""
        c = self.config
        dt = cell.config.control.control_dt
        t_pre, t_lift_end = float(track.times[0]), float(track.times[-1])
        t_carry_end = t_lift_end + carry.duration
        t_open_end = t_carry_end + c.release_time
        n = int(math.ceil((t_open_end + retreat.duration) / dt)) + 1
        arm = cell.params.right_arm
        tau = (np.asarray(arm.kv) + np.asarray(arm.damping)) / np.asarray(arm.kp) if c.feedforward else np.zeros(7)
        open_, pre = hand_open_pose(), hand_grasp_pose(grasp.kind, 0.0)
        closed = hand_grasp_pose(grasp.kind, 1.0)

        def q_at(t: float) -> np.ndarray:
            if t < t_pre:
                return approach.sample(t - t_start)
            if t <= t_lift_end:
                x = (t - t_pre) / dt
                i = min(int(x), len(q_track) - 2)
                return q_track[i] + (x - i) * (q_track[i + 1] - q_track[i])
            if t <= t_open_end:
                return carry.sample(t - t_lift_end)
            return retreat.sample(t - t_open_end)

        def hand_at(t: float) -> tuple[np.ndarray, float]:
            if t < t_pre:
                s = float(min_jerk((t - t_start) / max(approach.duration, dt)))
                return open_ + s * (pre - open_), 0.0
            if t <= t_lift_end:
                s = float(np.interp(t, track.times, track.closure))
                return hand_grasp_pose(grasp.kind, s), s
            if t <= t_carry_end:
                return closed, 1.0
            s = float(min_jerk((t - t_carry_end) / c.release_time))
            return closed + s * (open_ - closed), 1.0 - s

        times = dt * (np.arange(n) + 1)  # command k is reached at t_{k+1}
        q = np.array([q_at(t) for t in times])
        qd = np.gradient(np.array([q_at(t) for t in np.r_[0.0, times]]), dt, axis=0)[1:]
        arm_cmd = np.clip(q + tau * qd, self.lo, self.hi)
        hands = [hand_at(t) for t in times]
        commands = np.concatenate([arm_cmd, np.array([h for h, _ in hands])], axis=1)
        target = np.array([T_world_base @ ik.forward(qk) for qk in q])
        t_closed = t_grasp + c.timing.close
        frames = {
            "target_pose": target,
            "gripper_action": np.array([s for _, s in hands], dtype=np.float32),
            "subtask_term_signals": {
                "grasp": (times >= t_closed).astype(np.int8),
                "release": (times >= t_open_end).astype(np.int8),
            },
        }
        phases = {
            "approach": t_start,
            "descend": t_pre,
            "close": t_grasp,
            "lift": t_closed,
            "carry": t_lift_end,
            "release": t_carry_end,
            "retreat": t_open_end,
            "end": t_open_end + retreat.duration,
        }
        return PlannedEpisode(commands, q, frames, grasp, t_grasp, phases)
