"""Source demonstrations for MimicGen-style generation: what a real demonstration says, in a sim world.

A real demonstration record holds the operator's joint targets, the measured joints
(``obs/proprio``), its trial condition as commanded (object placed by a technician, belt speed
command) and its first frame's full-resolution head stereo pair; no hidden state. From it:

- the object (catalog size class, colour) and its initial pose from the stereo pair
  (``pose_estimation``), settled on the simulated belt of ``world``;
- the belt velocity: ``world``'s belt speed scale x the commanded speed, along ``world``'s belt;
- the hand (flange) poses: forward kinematics of the recorded joint targets on the kinematics of
  ``world``'s right arm (the kinematics the simulated robot will be driven with, so transforming
  nothing and solving IK on the same kinematics gives back the recorded joints; a grounded world
  carries the factory calibration, an ungrounded one the spec sheet);
- the controller lag: how far the measured hand trails the commanded one along the belt while
  it tracks the object, over the belt speed (s);
- the subtask segmentation (``segments``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from r2s2r.behavior.demos import STEREO_EXTRAS
from r2s2r.behavior.pose_estimation import (
    ObjectEstimate,
    PoseEstimateConfig,
    estimate_object_pose,
    settle_on_belt,
)
from r2s2r.behavior.segments import Segmentation, segment_demo
from r2s2r.data import Dataset, Episode
from r2s2r.errors import R2S2RError
from r2s2r.geometry import make_T, quat_to_mat
from r2s2r.shared_work import SharedWork
from r2s2r.world import rizon
from r2s2r.world.params import WorldParams

DEFAULT_LAG = 0.25  # s, when a demonstration's belt was too slow to measure it


@dataclass(frozen=True, eq=False)
class SourceDemo:
    """One real demonstration prepared for transformation (world frame of the sim world, m, s)."""

    index: int  # the demonstration's index in its dataset (the provenance ``source_demo``)
    estimate: ObjectEstimate
    T_world_object0: np.ndarray  # (4, 4) settled initial pose of the object's centre
    belt_velocity: np.ndarray  # (3,) m/s
    actions: np.ndarray  # (T, 27) recorded joint targets, rad
    T_world_flange: np.ndarray  # (T, 4, 4) hand (flange) pose of each target
    segments: Segmentation
    lag: float  # s
    control_dt: float = 0.1  # s between recorded frames

    @property
    def object_name(self) -> str:
        return self.estimate.object_name


def flange_poses(world: WorldParams, q_arm: np.ndarray) -> np.ndarray:
    """(T, 4, 4) T_world_flange of arm joint values (T, 7) on ``world``'s right-arm kinematics."""
    arm = world.right_arm
    T_wb = make_T(arm.base.pos, arm.base.quat)
    T_bf = rizon.forward_kinematics_many(np.asarray(q_arm, float), arm.link_pos, arm.flange_pos, arm.joint_zero)
    return np.stack([T_wb @ T for T in T_bf])


def belt_direction(world: WorldParams) -> np.ndarray:
    """(3,) unit direction of belt travel, world frame."""
    return quat_to_mat(world.conveyor.pose.quat)[:, 0]


def controller_lag(T_target: np.ndarray, T_measured: np.ndarray, velocity: np.ndarray, frames: slice) -> float:
    """Median time (s) by which the measured hand trails the commanded one along ``velocity``
    over ``frames`` (while the hand tracks the moving object)."""
    speed = float(np.linalg.norm(velocity))
    if speed < 0.02:
        return DEFAULT_LAG
    d = velocity / speed
    lead = (T_target[frames, :3, 3] - T_measured[frames, :3, 3]) @ d
    return float(np.clip(np.median(lead) / speed, 0.0, 1.0))


def prepare_source(
    episode: Episode,
    index: int,
    world: WorldParams,
    pose: PoseEstimateConfig = PoseEstimateConfig(),
    control_dt: float = 0.1,
) -> SourceDemo:
    """A real demonstration as a ``SourceDemo`` in ``world``; R2S2RError when it cannot be one."""
    missing = [k for k in STEREO_EXTRAS.values() if k not in episode.extras]
    if missing:
        raise R2S2RError(
            f"demonstration {index}: no first-frame stereo pair (extras {missing}); "
            "collect demonstrations with this version of 'r2s2r demos collect'"
        )
    cond = episode.provenance.condition
    if "belt_speed" not in cond:
        raise R2S2RError(f"demonstration {index}: its provenance has no commanded belt speed")
    images = {cam: episode.extras[key] for cam, key in STEREO_EXTRAS.items()}
    est = estimate_object_pose(images, world, pose)
    T0 = settle_on_belt(world, est)
    v = belt_direction(world) * world.conveyor.speed_scale * float(cond["belt_speed"])
    actions = np.asarray(episode.actions, np.float64)
    T_target = flange_poses(world, actions[:, :7])
    seg = segment_demo(T_target, actions[:, 7:])
    T_meas = flange_poses(world, np.asarray(episode.obs["proprio"], np.float64)[:, :7])
    lag = controller_lag(T_target, T_meas, v, slice(max(seg.approach, seg.grasp_start - 5), seg.grasp_end + 1))
    return SourceDemo(index, est, T0, v, episode.actions, T_target, seg, lag, control_dt)


def _prepare_or_reason(ds: Dataset, i: int, world: WorldParams, pose: PoseEstimateConfig) -> SourceDemo | str:
    """Demonstration ``i`` of ``ds`` as a ``SourceDemo``, or why it cannot be one."""
    if ds.provenance(i).source != "real":
        return "not a real demonstration"
    episode = ds.episode(i)  # an unreadable or corrupt shard is an error, not a rejected demo
    try:
        return prepare_source(episode, i, world, pose, 1.0 / ds.control_rate_hz)
    except R2S2RError as e:
        return str(e)


def load_sources(
    demos: Path, world: WorldParams, pose: PoseEstimateConfig = PoseEstimateConfig(), shared: Path | None = None
) -> tuple[list[SourceDemo], dict[int, str]]:
    """Every usable demonstration of the dataset at ``demos`` and, for the others, why not.

    ``shared``: a folder the processes preparing the same sources share (``SharedWork``): each
    demonstration is then prepared by one of them and read back by the others; the sources are
    the same either way."""
    key = hashlib.sha256(repr((str(Path(demos).resolve()), world.content_hash(), pose)).encode()).hexdigest()[:12]
    work = SharedWork(shared)
    with Dataset(demos) as ds:
        names = {f"source-{key}-{i}": i for i in range(len(ds))}
        prepared = work.map(list(names), lambda name: _prepare_or_reason(ds, names[name], world, pose))
    sources = [s for s in prepared.values() if isinstance(s, SourceDemo)]
    rejected = {names[n]: why for n, why in prepared.items() if isinstance(why, str)}
    if not sources:
        why = "; ".join(f"{i}: {r}" for i, r in list(rejected.items())[:3])
        raise R2S2RError(f"{demos}: no demonstration can be a MimicGen source ({why})")
    return sources, rejected
