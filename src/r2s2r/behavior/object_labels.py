"""Per-frame object-state labels of real demonstrations, from sensors (``obs/object_state``).

The demonstration's first-frame head stereo pair gives the object's pose, size class and colour
(``pose_estimation``, as MimicGen's sources use it); the calibrated belt speed scale times the
commanded belt speed carries it along the belt until the hand has closed on it (``segments``); from
then on the object is held where it was in the hand at that moment, moving with the flange as the
recorded joint positions put it (forward kinematics of the calibrated arm), until the hand opens
above the bin, after which nothing is labelled. The yaw is labelled only while the object is on the
belt. Layout and units: ``r2s2r.data.object_state``.

``label_demonstrations`` writes a copy of a demonstration dataset with the labels as one more
feature (resumable: episodes already in the output are kept).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console

from r2s2r.behavior.segments import grasp_yaw_symmetry
from r2s2r.behavior.sources import SourceDemo, flange_poses, prepare_source
from r2s2r.behavior.takeover import TAKEOVER_BEHAVIOR
from r2s2r.data import Dataset, Episode
from r2s2r.data.derive import derive_dataset
from r2s2r.data.object_state import (
    OBJECT_STATE,
    OBJECT_STATE_DIM,
    OBJECT_STATE_FEATURE,
    POSITION,
    SPEED,
    WHICH,
    YAW,
    one_hot,
    yaw_features,
)
from r2s2r.errors import R2S2RError
from r2s2r.geometry import inv_T, make_T
from r2s2r.progress import count_progress
from r2s2r.world.params import WorldParams


def object_labels(src: SourceDemo, proprio: np.ndarray, world: WorldParams) -> np.ndarray:
    """(T, OBJECT_STATE_DIM) float32 labels of one demonstration (NaN where unknown); ``proprio``
    (T, 27) its recorded joint positions, ``world`` the calibrated world ``src`` was prepared in."""
    proprio = np.asarray(proprio, np.float64)
    n, seg = len(proprio), src.segments
    times = np.arange(n) * src.control_dt
    p = src.T_world_object0[:3, 3] + src.belt_velocity[None] * times[:, None]  # riding the belt
    g = min(seg.grasp_end, n - 1)
    F = flange_poses(world, proprio[:, :7])
    held = inv_T(F[g]) @ np.r_[p[g], 1.0]  # the object's centre in the flange frame when the hand closed
    p[g:] = (F[g:] @ held)[:, :3]
    c = world.conveyor.pose
    T_belt_world = inv_T(make_T(c.pos, c.quat))
    out = np.full((n, OBJECT_STATE_DIM), np.nan, dtype=np.float32)
    out[:, POSITION] = (T_belt_world[:3, :3] @ p.T).T + T_belt_world[:3, 3]
    out[: g + 1, YAW] = yaw_features(src.estimate.yaw, grasp_yaw_symmetry(src.object_name))
    out[:, SPEED] = float(np.linalg.norm(src.belt_velocity))
    out[:, WHICH] = one_hot(src.object_name)
    out[seg.release_start :] = np.nan
    return out


def label_demonstrations(
    demos: Path, world: WorldParams, out: Path, on_episode: Callable[[int, int], None] | None = None
) -> Path:
    """The demonstrations at ``demos`` with ``obs/object_state`` labels, into ``out`` (resumes).
    R2S2RError naming the episode when one cannot be labelled (no stereo pair, no belt speed, no grasp).
    A takeover episode (``r2s2r.behavior.takeover``) is labelled unknown (NaN) throughout."""
    with Dataset(demos) as src:
        if f"obs/{OBJECT_STATE}" in src.features:
            raise R2S2RError(f"{demos}: already carries obs/{OBJECT_STATE} labels")
        dt = 1.0 / src.control_rate_hz

    def label(i: int, ep: Episode) -> Episode:
        if ep.provenance.behavior == TAKEOVER_BEHAVIOR:
            # a takeover starts wherever the policy left the cell, the object possibly touched, pushed
            # or in the hand, which breaks the labels' premise (riding the belt from the first frame);
            # measured on lab 0: such labels spoiled the encoder (1/24 against 5/24 with them unknown)
            labels = np.full((len(ep.actions), OBJECT_STATE_DIM), np.nan, dtype=np.float32)
        else:
            labels = object_labels(prepare_source(ep, i, world, control_dt=dt), ep.obs["proprio"], world)
        return Episode(
            {**ep.obs, OBJECT_STATE: labels}, ep.actions, ep.states, ep.provenance, ep.datagen_info, ep.extras
        )

    info = {"kind": "demonstrations with object-state labels", "demos": str(demos)}
    return derive_dataset(
        demos, out, lambda src: [*src.features.values(), OBJECT_STATE_FEATURE], label, info, on_episode
    )


def label_with_progress(demos: Path, world: WorldParams, out: Path, console: Console) -> Path:
    """``label_demonstrations`` with a progress bar (plain lines in a log) on ``console``."""
    with count_progress("labels", console) as bar:
        task = bar.add_task("labels", total=None, status="")
        return label_demonstrations(demos, world, out, lambda i, n: bar.update(task, completed=i, total=n))
