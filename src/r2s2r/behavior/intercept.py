"""Interception of an object riding the belt: its predicted pose, and the hand's track to grasp it.

``BeltMotion`` predicts T_world_object(t) (world frame, t in seconds since the trial start): the
object rides the belt at the belt's surface speed along the conveyor's +x, keeping its
orientation, until it reaches the belt's downstream end. ``grasp_track`` is the hand's path for
one grasp intercepted at ``t_grasp``: from the pre-grasp (``standoff`` back along the approach,
at rest) the hand descends while speeding up to the belt's speed, meets the grasp pose moving
with the object, follows it while the fingers close, then lifts while slowing to a stop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.geometry import make_T, min_jerk
from r2s2r.world.cell import SimCell

PHASES = ("descend", "close", "lift")


@dataclass(frozen=True)
class BeltMotion:
    """Constant-velocity prediction of the object on the belt."""

    T0: np.ndarray  # T_world_object at time t0
    velocity: np.ndarray  # world-frame velocity, m/s
    t0: float
    end_time: float  # when the object's centre reaches the belt's downstream end, s

    @classmethod
    def from_cell(cls, cell: SimCell) -> BeltMotion:
        """The prediction from the simulator's state (a simulated world is open to its planner)."""
        eng = cell.engine
        conv = cell.params.conveyor
        T_world_belt = make_T(conv.pose.pos, conv.pose.quat)
        T0 = eng.object_pose()
        x_belt = (np.linalg.inv(T_world_belt) @ T0[:, 3])[0]
        speed = float(eng.belt_speed)
        end = cell.time + ((conv.length / 2 - x_belt) / speed if speed > 1e-6 else np.inf)
        return cls(T0, T_world_belt[:3, 0] * speed, float(cell.time), float(end))

    def pose(self, t: float) -> np.ndarray:
        T = self.T0.copy()
        T[:3, 3] += self.velocity * (t - self.t0)
        return T


@dataclass(frozen=True)
class GraspTiming:
    """Durations (s) and distances (m) of the grasp: descend, close, lift."""

    standoff: float = 0.08  # pre-grasp distance back along the approach
    descend: float = 0.6
    close: float = 0.6
    lift: float = 0.5
    lift_height: float = 0.12

    def __post_init__(self) -> None:
        if min(self.descend, self.close, self.lift) <= 0 or not 0 < self.standoff < 0.3 or self.lift_height <= 0:
            raise ConfigError(f"grasp timing: positive durations, standoff in (0, 0.3) m expected, got {self}")

    @property
    def total(self) -> float:
        return self.descend + self.close + self.lift


def _ramp_integral(x: np.ndarray) -> np.ndarray:
    """Integral over [0, x] of the min-jerk ramp (in units of the ramp's duration)."""
    xc = np.clip(x, 0.0, 1.0)
    return 2.5 * xc**4 - 3 * xc**5 + xc**6 + np.maximum(x - 1.0, 0.0)


@dataclass(frozen=True, eq=False)
class GraspTrack:
    """The hand's poses (T_world_hand) at ``times``; ``closure`` of the fingers in [0, 1];
    ``phase`` index into ``PHASES``."""

    times: np.ndarray
    poses: np.ndarray  # (n, 4, 4)
    closure: np.ndarray
    phase: np.ndarray


def grasp_track(motion: BeltMotion, T_object_hand: np.ndarray, t_grasp: float, timing: GraspTiming, dt: float):
    """Hand poses every ``dt`` from the pre-grasp (t_grasp - descend) to the end of the lift."""
    t_pre = t_grasp - timing.descend
    n = int(round(timing.total / dt))
    times = t_pre + dt * np.arange(n + 1)
    v = motion.velocity
    R = motion.T0[:3, :3]
    up = np.array([0.0, 0.0, 1.0])
    t_lift = t_grasp + timing.close
    poses, closure, phase = [], [], []
    for t in times:
        if t <= t_grasp + 1e-9:  # descend, matching the belt's speed by the grasp
            x = (t - t_pre) / timing.descend
            centre = motion.pose(t_pre)[:3, 3] + v * timing.descend * (_ramp_integral(np.array(x)) + 0.5)
            back = timing.standoff * (1.0 - float(min_jerk(x)))
            k, s = 0, 0.0
        elif t <= t_lift + 1e-9:  # follow the object while closing
            centre, back = motion.pose(t)[:3, 3], 0.0
            k, s = 1, min(float(min_jerk((t - t_grasp) / timing.close)), 1.0)
        else:  # lift, slowing to a stop
            x = (t - t_lift) / timing.lift
            slow = x * timing.lift - timing.lift * _ramp_integral(np.array(x)) if x <= 1 else timing.lift / 2
            centre = motion.pose(t_lift)[:3, 3] + v * float(slow) + up * timing.lift_height * float(min_jerk(x))
            back, k, s = 0.0, 2, 1.0
        T_world_obj = np.eye(4)
        T_world_obj[:3, :3], T_world_obj[:3, 3] = R, centre
        T = T_world_obj @ T_object_hand
        T[:3, 3] -= back * T[:3, 2]
        poses.append(T)
        closure.append(s)
        phase.append(k)
    return GraspTrack(times, np.asarray(poses), np.asarray(closure), np.asarray(phase, dtype=np.int8))
