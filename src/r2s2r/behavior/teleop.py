"""A teleoperator model: a person with a tracker on the wrist and a data glove drives the right arm.

The operator sees the trial as a person does (``RealCell.human_view``: object pose to about a
centimetre, belt speed to about ten percent), reacts a few hundred milliseconds late, tracks the
object on the belt by predicting where it will be, and moves like a person: minimum-jerk reaches
on a curved path from above, a speed that varies between demonstrations, a slight tremor. The
glove pre-shapes the hand and closes a power grasp with all five fingers; the operator carries
the object to the bin of its colour and opens the hand.

Commands are a wrist pose (the palm centre, world frame) and 20 glove angles; the teleoperation
system turns the wrist pose into arm joint targets by IK on the robot's factory kinematics.
Like any teleoperation system for a real arm, it only sends what the robot may execute: the IK
solution is rate-limited to a fraction of the arm's rated joint speeds and kept inside the joint
ranges the safety filter enforces, and the wrist yaw turns to the grasp yaw along a minimum-jerk
profile over the reach (a person turns their wrist while reaching, not in one control step). So
the commands are smooth, the safety filter passes them unchanged, and a policy can learn them.
The recorded action is the command that reached the robot: 7 arm + 20 hand joint targets (rad).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from r2s2r.behavior.ik import ArmIK
from r2s2r.geometry import inv_T, make_T, min_jerk
from r2s2r.lab.real_cell import HumanView, KinematicCalibration
from r2s2r.lab.shaping import SPEED_FRACTION, CommandShaper, limit_arm_step
from r2s2r.world.hand import PALM_CENTER, hand_grasp_pose, hand_joint_ranges, hand_open_pose
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import Pose

# Palm down, fingers pointing away from the robot (world +x): the wrist orientation at yaw 0.
PALM_DOWN = np.diag([1.0, -1.0, -1.0])
PHASES = ("wait", "reach", "descend", "close", "lift", "carry", "release", "done")


@dataclass(frozen=True)
class OperatorConfig:
    """How the person moves. Durations are for speed factor 1 (drawn per demonstration)."""

    reaction_delay: tuple[float, float] = (0.2, 0.4)  # s
    speed_factor: tuple[float, float] = (0.8, 1.25)  # >1 is faster
    tremor_std: float = 0.0015  # m, low-pass wrist jitter
    glove_noise_std: float = 0.02  # rad
    pick_y: tuple[float, float] = (-0.10, 0.02)  # where along the belt (world y) the person picks, m
    approach_height: float = 0.10  # pre-grasp height of the palm centre above the object centre, m
    arc_height: float = 0.06  # extra height of the curved reach, m
    grasp_offset: float = 0.012  # palm centre above the object centre at the grasp, m (not pressing on it)
    ball_grasp_offset: float = -0.01  # a ball is cupped against the belt so the closing fingers cannot roll it
    lead_time: float = 0.4  # s: people learn the robot lags (~0.3 s on a moving target) and aim ahead
    dwell_time: float = 0.3  # s at grasp height, watching the hand settle around the object
    lift_height: float = 0.15
    carry_height: float = 0.22  # palm centre above the bin floor, m
    reach_time: float = 1.5
    descend_time: float = 0.8
    close_time: float = 0.6
    lift_time: float = 0.6
    carry_time: float = 1.4
    release_time: float = 0.4
    speed_fraction: float = SPEED_FRACTION  # arm command steps are limited to this fraction of the rated joint speeds
    control_dt: float = 0.1  # s between commands (the robot's control rate)


def _rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def grasp_yaw(object_name: str, object_yaw: float, rng: np.random.Generator) -> float:
    """The wrist yaw a person chooses: square to a box's faces, anything comfortable otherwise."""
    if CATALOG[object_name].shape == "box":
        return float((object_yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4)
    return float(rng.uniform(-0.25, 0.25))


class Operator:
    """One person at the teleoperation station. ``start`` a demonstration, then ``act`` each step."""

    def __init__(self, factory: KinematicCalibration, base: Pose, config: OperatorConfig = OperatorConfig()) -> None:
        self.config = config
        self.ik = ArmIK.from_kinematics(factory, make_T(PALM_CENTER, (1, 0, 0, 0)))
        self.T_base_world = inv_T(make_T(base.pos, base.quat))
        self.T_world_base = make_T(base.pos, base.quat)
        self._hand_lo, self._hand_hi = hand_joint_ranges().T
        limits = CommandShaper(config.control_dt, config.speed_fraction)  # what the teleop system sends
        self.arm_lo, self.arm_hi, self.max_step = limits.lo[:7], limits.hi[:7], limits.max_step

    def start(self, q_arm: np.ndarray, rng: np.random.Generator) -> None:
        c = self.config
        self.rng = rng
        self.delay = float(rng.uniform(*c.reaction_delay))
        self.speed = float(rng.uniform(*c.speed_factor))
        self.pick_y = float(rng.uniform(*c.pick_y))
        self.q = np.array(q_arm, dtype=float)
        self.palm = (self.T_world_base @ self.ik.forward(self.q))[:3, 3]
        self.glove = hand_open_pose()
        self.views: list[HumanView] = []
        self.phase, self.phase_t0 = "wait", 0.0
        self.tremor = np.zeros(3)
        self.glove_jitter = np.zeros(20)
        self.yaw = 0.0
        self._yaw_from = self._yaw_to = 0.0
        self.grasp_xy = None
        self.ik_failures = 0

    def _duration(self, base: float) -> float:
        return base / self.speed

    def _perceived(self, now: float) -> HumanView | None:
        """The latest view the person has reacted to (``delay`` s old), or None."""
        seen = [v for v in self.views if v.time <= now - self.delay + 1e-9]
        return seen[-1] if seen else None

    def _predict(self, view: HumanView, at: float) -> np.ndarray:
        return view.object_pos + view.belt_dir * view.belt_speed * (at - view.time)

    def _arrival(self, view: HumanView) -> float:
        """When the object will reach the person's pick line (world y), by their estimate."""
        vy = view.belt_dir[1] * view.belt_speed
        if vy > -1e-4:  # not moving toward the robot: pick where it is
            return view.time
        return view.time + (self.pick_y - view.object_pos[1]) / vy

    def act(self, view: HumanView, now: float) -> np.ndarray:
        """The 27-D command (arm joint targets + glove) for time ``now`` (s since the trial start)."""
        c = self.config
        self.views.append(view)
        seen = self._perceived(now)
        target, glove = self.palm, self.glove
        t = now - self.phase_t0
        if self.phase == "wait" and seen is not None:
            cat = CATALOG[seen.object_name]
            t_pick = self._arrival(seen)
            if t_pick - self._duration(c.reach_time + c.descend_time) <= now:
                self._yaw_from, self._yaw_to = self.yaw, grasp_yaw(seen.object_name, seen.object_yaw, self.rng)
                self.grasp_offset = c.ball_grasp_offset if cat.shape == "sphere" else c.grasp_offset
                self._start = self.palm.copy()
                self._rest_h = cat.rest_height
                self._enter("reach", now)
                t = 0.0
        if self.phase == "reach":
            T = self._duration(c.reach_time)
            s = min_jerk(t / T)
            goal = self._predict(seen, now + T - t + self._duration(c.descend_time) * 0.5) + [0, 0, c.approach_height]
            target = self._start + s * (goal - self._start) + [0, 0, c.arc_height * math.sin(math.pi * s)]
            glove = hand_open_pose() + s * (hand_grasp_pose("power", 0.0) - hand_open_pose())
            self.yaw = self._yaw_from + s * (self._yaw_to - self._yaw_from)
            if t >= T:
                self._enter("descend", now)
        elif self.phase == "descend":
            T = self._duration(c.descend_time)
            s = min_jerk(t / T)
            obj = self._predict(seen, now + c.lead_time)
            target = obj + [0, 0, c.approach_height + s * (self.grasp_offset - c.approach_height)]
            glove = hand_grasp_pose("power", 0.0)
            if t >= T:
                self._enter("close", now)
        elif self.phase == "close":
            T = self._duration(c.close_time) + c.dwell_time
            s = min_jerk((t - c.dwell_time) / (T - c.dwell_time))
            target = self._predict(seen, now + c.lead_time) + [0, 0, self.grasp_offset]
            glove = hand_grasp_pose("power", s)
            if t >= T:
                self._lift_from = target.copy()
                self._enter("lift", now)
        elif self.phase == "lift":
            T = self._duration(c.lift_time)
            target = self._lift_from + [0, 0, c.lift_height * min_jerk(t / T)]
            glove = hand_grasp_pose("power", 1.0)
            if t >= T:
                self._carry_from = target.copy()
                self._enter("carry", now)
        elif self.phase == "carry":
            T = self._duration(c.carry_time)
            s = min_jerk(t / T)
            goal = view.bin_pos[CATALOG[view.object_name].color] + [0, 0, c.carry_height]
            target = self._carry_from + s * (goal - self._carry_from) + [0, 0, 0.05 * math.sin(math.pi * s)]
            glove = hand_grasp_pose("power", 1.0)
            if t >= T:
                self._enter("release", now)
        elif self.phase == "release":
            T = self._duration(c.release_time)
            s = min_jerk(t / T)
            glove = hand_grasp_pose("power", 1.0) + s * (hand_open_pose() - hand_grasp_pose("power", 1.0))
            if t >= T:
                self._enter("done", now)
        elif self.phase == "done":
            glove = hand_open_pose()
        self.palm = np.asarray(target, dtype=float)
        self.glove = np.asarray(glove, dtype=float)
        return self._command()

    def _enter(self, phase: str, now: float) -> None:
        self.phase, self.phase_t0 = phase, now

    def _command(self) -> np.ndarray:
        c = self.config
        self.tremor = 0.7 * self.tremor + self.rng.normal(0.0, c.tremor_std * math.sqrt(1 - 0.49), 3)
        self.glove_jitter = 0.7 * self.glove_jitter + self.rng.normal(0.0, c.glove_noise_std * 0.71, 20)
        T_world_palm = np.eye(4)
        T_world_palm[:3, :3] = _rot_z(self.yaw) @ PALM_DOWN
        T_world_palm[:3, 3] = self.palm + self.tremor
        res = self.ik.solve(self.T_base_world @ T_world_palm, self.q)
        if res.ok or res.pos_err < 0.01:
            # the teleoperation system sends only what the robot may execute: rated speed, joint ranges
            self.q = limit_arm_step(self.q, res.q, self.max_step, self.arm_lo, self.arm_hi)
        else:  # out of reach: the arm stays where it was, as a person's tracked wrist would stall
            self.ik_failures += 1
        glove = np.clip(self.glove + self.glove_jitter, self._hand_lo, self._hand_hi)
        return np.concatenate([self.q, glove])
