"""MimicGen on a moving conveyor with a five-finger hand: new episodes from real demonstrations.

For a new episode (the cell reset to a condition: object, pose, belt speed), ``MimicBehavior.plan``

1. picks a source demonstration (``selection``: ``"nearest"`` by object shape, size and pose, or
   ``"random"`` among those of the same shape);
2. **re-times** it: the source's grasp happened at some place along the belt; the new episode
   starts its approach so that the new object reaches that place when the hand closes (earlier
   or later by whole control steps; as early as the episode allows when the object is already
   past it);
3. transforms each subtask (``segments``): the wait is replayed as recorded; the object-centric
   subtask is kept fixed in the *moving* object frame, time-indexed (source frame i, at the
   source object's frame at time i dt, goes to the new object's frame at time (i + shift) dt), plus
   the extra lead the controller needs at a different belt speed ((v_new - v_src) x the source's
   measured lag); the bin-centric subtask is kept fixed in the bin frame of the new object's colour;
4. bridges the subtasks: each transformed subtask starts where the previous one ended, and the
   offset is blended out (minimum jerk) over the first ``bridge_fraction`` of the approach, and over
   the closed-hand carry before the release;
5. scales the hand's pre-shape with the object's size (the flexion away from the open hand x
   source extent / new extent, fading out as the hand closes, so the closed grasp is the source's);
6. turns the hand poses into arm joint targets with IK (``ArmIK``, mink) on the sim world's
   right-arm kinematics, seeded by the previous step.

The plan is open-loop (as MimicGen's): the rollout executes it under contact physics and the judge
admits the episode. ``datagen_info`` per frame: ``target_pose`` (T_world_flange target),
``gripper_action`` (hand closure, 0 open, 1 closed), ``subtask_term_signals/{grasp,release}``,
``subtask`` (0 wait, 1 object, 2 bin) and ``source_frame`` (the source frame it derives from).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r.behavior.ik import ArmIK, IKConfig
from r2s2r.behavior.pose_estimation import PoseEstimateConfig
from r2s2r.behavior.segments import bin_frame, frame_yaw, grasp_yaw_symmetry, hand_closure, object_frame
from r2s2r.behavior.sources import SourceDemo, belt_direction, load_sources
from r2s2r.errors import ConfigError, PlanningFailed, R2S2RError, UnknownNameError
from r2s2r.geometry import axis_angle_quat, inv_T, make_T, mat_to_quat, min_jerk, quat_to_mat, rotation_angle
from r2s2r.world import rizon
from r2s2r.world.hand import hand_joint_ranges, hand_open_pose
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import WorldParams

SELECTIONS = ("nearest", "random")
JUDGE_MARGIN = 2.0  # s the trial keeps after the plan for the released object to come to rest


@dataclass(frozen=True)
class MimicConfig:
    selection: str = "nearest"
    bridge_fraction: float = 0.5  # of the approach (source frames approach..grasp_start)
    min_bridge: int = 4  # frames
    preshape_ratio: tuple[float, float] = (0.5, 1.5)  # clip of source extent / new extent
    ik_pos_tol: float = 0.004  # m, beyond which a target counts as unreachable
    ik_rot_tol: float = math.radians(3.0)
    max_joint_step: float = 3.0  # x the joint speed limit x control period: beyond it, an IK branch jump
    pose: PoseEstimateConfig = PoseEstimateConfig()

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise UnknownNameError("mimic source selection", self.selection, SELECTIONS)
        if not 0.0 < self.bridge_fraction <= 1.0 or self.min_bridge < 1:
            raise ConfigError("mimic: bridge_fraction expected in (0, 1] and min_bridge >= 1")


def _slerp_identity(R: np.ndarray, w: float) -> np.ndarray:
    """Rotation ``w`` of the way from the identity to ``R``."""
    q = mat_to_quat(R)
    angle = 2 * math.atan2(np.linalg.norm(q[1:]), q[0])
    if angle < 1e-9:
        return np.eye(3)
    return quat_to_mat(axis_angle_quat(q[1:], angle * w))


def _offset(T_from: np.ndarray, T_to: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dp, dR) with T_to = (T_from.p + dp, dR T_from.R)."""
    return T_to[:3, 3] - T_from[:3, 3], T_to[:3, :3] @ T_from[:3, :3].T


def _apply(T: np.ndarray, off: tuple[np.ndarray, np.ndarray], w: float) -> np.ndarray:
    out = T.copy()
    out[:3, 3] += w * off[0]
    out[:3, :3] = _slerp_identity(off[1], w) @ T[:3, :3]
    return out


def preshape(hand: np.ndarray, ratio: float) -> np.ndarray:
    """Hand targets (T, 20) with the flexion away from the open hand scaled by ``ratio`` while the
    hand is open or pre-shaped, fading to the source's targets as it closes (``hand_closure``)."""
    hand = np.asarray(hand, float)
    open_ = hand_open_pose()
    c = np.clip(hand_closure(hand), 0.0, 1.0)[:, None]
    out = open_ + (1.0 + (1.0 - c) * (ratio - 1.0)) * (hand - open_)
    lo, hi = hand_joint_ranges().T
    return np.clip(out, lo, hi)


@dataclass(frozen=True, eq=False)
class MimicPlan:
    """An open-loop plan: per-step actions and datagen_info (``EpisodePlan``)."""

    actions: np.ndarray  # (N, 27)
    target_pose: np.ndarray  # (N, 4, 4)
    closure: np.ndarray  # (N,)
    subtask: np.ndarray  # (N,) int8
    source_frame: np.ndarray  # (N,) int32
    source_demo: int
    shift: int  # control steps the source's approach was moved by (re-timing)

    def act(self, cell, step: int) -> np.ndarray | None:
        return self.actions[step] if step < len(self.actions) else None

    def info(self, step: int) -> dict[str, Any]:
        k = min(step, len(self.actions) - 1)
        return {
            "target_pose": self.target_pose[k],
            "gripper_action": np.array([self.closure[k]]),
            "subtask": np.int8(self.subtask[k]),
            "source_frame": np.int32(self.source_frame[k]),
            "subtask_term_signals": {
                "grasp": np.int8(self.subtask[k] == 2 or step >= len(self.actions)),
                "release": np.int8(self.subtask[k] == 2 and self.closure[k] < 0.1 or step >= len(self.actions)),
            },
        }


class MimicBehavior:
    """MimicGen-style grounded behaviour (``generate.rollout.Behavior``) from real demonstrations."""

    name = "mimic"

    def __init__(
        self,
        sources: list[SourceDemo],
        world: WorldParams,
        config: MimicConfig = MimicConfig(),
        rejected: dict[int, str] | None = None,
    ) -> None:
        if not sources:
            raise R2S2RError("mimic: expected at least one source demonstration")
        self.sources = list(sources)
        self.world = world
        self.config = config
        self.rejected = dict(rejected or {})
        self.ik = ArmIK.from_kinematics(world.right_arm, None, IKConfig(max_iters=80))
        base = world.right_arm.base
        self.T_base_world = inv_T(make_T(base.pos, base.quat))

    @classmethod
    def from_dataset(
        cls, demos: Path, world: WorldParams, config: MimicConfig = MimicConfig(), shared: Path | None = None
    ) -> MimicBehavior:
        """The behaviour for the real demonstrations at ``demos`` (``shared``: see ``load_sources``)."""
        sources, rejected = load_sources(demos, world, config.pose, shared)
        return cls(sources, world, config, rejected)

    # --- source selection -------------------------------------------------------------------
    def _belt_pose(self, T_world_object: np.ndarray) -> tuple[float, float, float]:
        c = self.world.conveyor
        p = inv_T(make_T(c.pose.pos, c.pose.quat)) @ np.r_[T_world_object[:3, 3], 1.0]
        return float(p[0]), float(p[1]), frame_yaw(self.world, T_world_object)

    def distance(self, src: SourceDemo, object_name: str, T_world_object: np.ndarray) -> float:
        """How unlike the source's object (shape, size, lateral position, yaw) the new one is."""
        new, old = CATALOG[object_name], CATALOG[src.object_name]
        _, y_new, yaw_new = self._belt_pose(T_world_object)
        _, y_old, yaw_old = self._belt_pose(src.T_world_object0)
        period = grasp_yaw_symmetry(object_name)
        dyaw = 0.0 if period is None else abs((yaw_new - yaw_old + period / 2) % period - period / 2)
        return (
            10.0 * (new.shape != old.shape)
            + abs(new.extent - old.extent) / 0.01
            + abs(y_new - y_old) / 0.03
            + dyaw / (math.pi / 4)
        )

    def select(self, object_name: str, T_world_object: np.ndarray, rng: np.random.Generator) -> SourceDemo:
        if self.config.selection == "nearest":
            d = [self.distance(s, object_name, T_world_object) for s in self.sources]
            best = min(d)
            ties = [s for s, x in zip(self.sources, d, strict=True) if x <= best + 1e-9]
            return ties[int(rng.integers(len(ties)))]
        shape = CATALOG[object_name].shape
        pool = [s for s in self.sources if CATALOG[s.object_name].shape == shape] or self.sources
        return pool[int(rng.integers(len(pool)))]

    # --- planning ---------------------------------------------------------------------------
    def plan(self, cell, condition, rng: np.random.Generator) -> MimicPlan:
        T_obj = cell.engine.object_pose()
        v_new = belt_direction(self.world) * cell.engine.belt_speed
        src = self.select(condition.object, T_obj, rng)
        dt = cell.config.control.control_dt
        if abs(src.control_dt - dt) > 1e-9:
            raise ConfigError(f"mimic: demonstrations recorded at {src.control_dt} s steps, the cell runs {dt} s")
        q0 = cell.engine.command("right")
        plan = self.transform(src, condition.object, T_obj, v_new, q0, dt)
        if len(plan.actions) * dt + JUDGE_MARGIN > cell.config.max_duration:
            raise PlanningFailed(
                "too_long", f"{len(plan.actions) * dt:.1f} s plan in a {cell.config.max_duration} s trial"
            )
        return plan

    def retime(self, src: SourceDemo, object_name: str, T_obj: np.ndarray, v_new: np.ndarray, dt: float) -> int:
        """Control steps to shift the source's approach by so the new object reaches the source's
        grasp place (along the belt) when the hand closes."""
        seg = src.segments
        g = seg.grasp_end
        O_g = object_frame(self.world, src.object_name, src.T_world_object0, src.belt_velocity, g * dt)
        x_grasp, _, _ = self._belt_pose(O_g)
        x_new, _, _ = self._belt_pose(T_obj)
        speed = float(np.linalg.norm(v_new))
        shift = 0 if speed < 1e-3 else int(round((x_grasp - x_new) / speed / dt)) - g
        return max(shift, -seg.approach)

    def frame_yaw(self, src: SourceDemo, object_name: str, T_obj: np.ndarray) -> float:
        """Yaw (belt frame) of the new object's frame: the source frame's yaw turned by the new
        object's yaw difference, reduced by the new object's grasp symmetry (a cube turned by 80
        degrees is grasped as one turned by -10); the source's for round objects."""
        yaw_src = frame_yaw(
            self.world, object_frame(self.world, src.object_name, src.T_world_object0, src.belt_velocity, 0.0)
        )
        period = grasp_yaw_symmetry(object_name)
        if period is None or grasp_yaw_symmetry(src.object_name) is None:
            return yaw_src
        d = frame_yaw(self.world, T_obj) - yaw_src
        return yaw_src + (d + period / 2) % period - period / 2

    def transform(
        self, src: SourceDemo, object_name: str, T_obj: np.ndarray, v_new: np.ndarray, q_start: np.ndarray, dt: float
    ) -> MimicPlan:
        """The plan for a new object ``object_name`` starting at ``T_obj`` (world, its centre) on a belt
        moving at ``v_new`` (world, m/s), the arm commanded ``q_start`` (27,) now."""
        c, seg, w = self.config, src.segments, self.world
        k = self.retime(src, object_name, T_obj, v_new, dt)
        a, g, n_src = seg.approach, seg.grasp_end, seg.length
        frames = np.r_[np.zeros(max(k, 0), int), np.arange(max(-k, 0), n_src)]  # source frame of each step
        n = len(frames)
        # object frames (time-indexed) and the bin frames
        O_src = [object_frame(w, src.object_name, src.T_world_object0, src.belt_velocity, i * dt) for i in range(n_src)]
        yaw_new = self.frame_yaw(src, object_name, T_obj)
        lead = (v_new - src.belt_velocity) * src.lag

        def obj_tf(i: int) -> np.ndarray:  # source frame i -> new, in the moving object frame
            O_new = object_frame(w, object_name, T_obj, v_new, (i + k) * dt, yaw=yaw_new)
            T = O_new @ inv_T(O_src[i]) @ src.T_world_flange[i]
            T[:3, 3] += lead
            return T

        B = bin_frame(w, CATALOG[object_name].color) @ inv_T(bin_frame(w, src.estimate.color))
        ratio = float(np.clip(CATALOG[src.object_name].extent / CATALOG[object_name].extent, *c.preshape_ratio))
        hand_src = np.asarray(src.actions[:, 7:], float)
        hand = np.r_[preshape(hand_src[: g + 1], ratio), hand_src[g + 1 :]]
        closure = hand_closure(hand_src)

        n_bridge = max(c.min_bridge, int(round(c.bridge_fraction * (seg.grasp_start - a))))
        carry = max(1, seg.release_start - g)
        q = np.asarray(q_start[:7], float)
        actions = np.empty((n, 27))
        targets = np.empty((n, 4, 4))
        subtask = np.empty(n, np.int8)
        off1 = off2 = None
        prev_T = None
        for step in range(n):
            i = int(frames[step])
            if i < a:  # wait: the recorded joint targets, as they were
                q = np.asarray(src.actions[i, :7], float)
                T = w_T = self._fk(q)
                subtask[step] = 0
            else:
                if i <= g:
                    T = obj_tf(i)
                    if off1 is None:
                        ref = obj_tf(max(i - 1, 0)) if i > 0 else T
                        off1 = _offset(ref, prev_T if prev_T is not None else self._fk(q))
                    wgt = 1.0 - float(min_jerk((i - a) / n_bridge))
                    T = _apply(T, off1, wgt)
                    subtask[step] = 1
                else:
                    T = B @ src.T_world_flange[i]
                    if off2 is None:
                        off2 = _offset(B @ src.T_world_flange[i - 1], prev_T)
                    wgt = 1.0 - float(min_jerk((i - g - 1) / carry))
                    T = _apply(T, off2, wgt)
                    subtask[step] = 2
                q = self._ik(T, q, i)
                w_T = T
            prev_T = w_T
            targets[step] = w_T
            actions[step] = np.r_[q, hand[i]]
        self._check_speed(actions[:, :7], dt, np.asarray(q_start[:7], float))
        return MimicPlan(
            actions.astype(np.float32), targets, closure[frames], subtask, frames.astype(np.int32), src.index, k
        )

    def _fk(self, q: np.ndarray) -> np.ndarray:
        return inv_T(self.T_base_world) @ self.ik.forward(q)

    def _ik(self, T_world_flange: np.ndarray, seed: np.ndarray, frame: int) -> np.ndarray:
        res = self.ik.solve(self.T_base_world @ T_world_flange, seed)
        if not res.ok and (res.pos_err > self.config.ik_pos_tol or res.rot_err > self.config.ik_rot_tol):
            raise PlanningFailed(
                "unreachable",
                f"source frame {frame}: IK {1000 * res.pos_err:.1f} mm, {math.degrees(res.rot_err):.1f} deg off",
            )
        return res.q

    def _check_speed(self, q: np.ndarray, dt: float, q0: np.ndarray) -> None:
        steps = np.abs(np.diff(np.r_[q0[None], q], axis=0))
        limit = self.config.max_joint_step * np.asarray(rizon.VELOCITY_LIMIT) * dt
        bad = np.argwhere(steps > limit)
        if len(bad):
            t, j = bad[0]
            raise PlanningFailed("too_fast", f"step {t}: joint {j + 1} moves {steps[t, j]:.2f} rad in {dt} s")


def hand_pose_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Largest position (m) and rotation (rad) difference between two pose sequences (T, 4, 4)."""
    pos = float(np.max(np.linalg.norm(a[:, :3, 3] - b[:, :3, 3], axis=1)))
    rot = max(rotation_angle(x[:3, :3], y[:3, :3]) for x, y in zip(a, b, strict=True))
    return pos, rot
