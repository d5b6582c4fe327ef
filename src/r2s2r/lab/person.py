"""The person at the cell: what they see of a trial, at human accuracy (``RealCell.human_view``).

A person misjudges consistently within a trial (``PersonBias``, drawn once per trial: ~6 mm in the
belt plane, ~0.1 rad of yaw, ~8 % of belt speed) and a little differently at every look (~3 mm,
~0.05 rad; bins ~5 mm). Every cell that offers a ``human_view`` (the lab twin, a simulated cell
behind the lab's interface) shows its trial through this one model, so the teleoperator is the
same person everywhere; the cell passes its own true state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from r2s2r.lab.real_cell import HumanView


@dataclass(frozen=True)
class PersonBias:
    """A person's consistent misjudgement during one trial."""

    offset: tuple[float, float]  # object position error in world x, y, m
    yaw: float  # object yaw error, rad
    belt_scale: float  # relative belt speed error

    @classmethod
    def draw(cls, rng: np.random.Generator) -> PersonBias:
        xy = rng.normal(0, 0.006, 2)
        yaw = float(rng.normal(0, 0.1))
        return cls((float(xy[0]), float(xy[1])), yaw, float(rng.normal(0, 0.08)))


def person_view(
    time: float,
    object_name: str,
    T_world_object: np.ndarray,
    belt_speed: float,
    belt_dir: np.ndarray,
    bins: Mapping[str, np.ndarray],
    bias: PersonBias,
    rng: np.random.Generator,
) -> HumanView:
    """What the person sees of the true state: the object's pose ``T_world_object`` (4x4), the belt's
    true surface speed (m/s) and direction (world frame), each bin's true floor centre (world frame)."""
    seen_bins = {color: np.asarray(pos) + np.r_[rng.normal(0, 0.005, 2), 0.0] for color, pos in bins.items()}
    yaw = float(np.arctan2(T_world_object[1, 0], T_world_object[0, 0]))
    return HumanView(
        time=time,
        object_name=object_name,
        object_pos=T_world_object[:3, 3] + np.r_[bias.offset, 0.0] + rng.normal(0, 0.003, 3),
        object_yaw=yaw + bias.yaw + float(rng.normal(0, 0.05)),
        belt_speed=belt_speed * (1 + bias.belt_scale),
        belt_dir=np.asarray(belt_dir),
        bin_pos=seen_bins,
    )
