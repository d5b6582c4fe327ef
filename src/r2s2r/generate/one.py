"""``r2s2r generate-one``: plan and execute one simulated episode and write a video of it.

``BEHAVIORS`` maps each ``--behavior`` name to a factory ``(inputs) -> Behavior``; a behaviour
module adds its entry here (imports are lazy: a command loads only what it runs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from r2s2r.errors import R2S2RError, UnknownNameError
from r2s2r.files import output_file
from r2s2r.generate.attempt import BehaviorInputs
from r2s2r.generate.rollout import Behavior, RolloutResult, rollout
from r2s2r.video import TILE_SIZE, VIDEO_CAMERAS, VideoWriter, side_by_side
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import sample_condition
from r2s2r.world.params import WorldParams


def _teleop(inputs: BehaviorInputs) -> Behavior:
    from r2s2r.behavior.sim_teleop import SimTeleop

    return SimTeleop()


def _planner(inputs: BehaviorInputs) -> Behavior:
    from r2s2r.behavior.planner import MotionPlanner

    return MotionPlanner(shared=inputs.shared)


def _mimic(inputs: BehaviorInputs) -> Behavior:
    from r2s2r.behavior.mimic import MimicBehavior

    if inputs.demos is None:
        raise R2S2RError("--behavior mimic transforms real demonstrations: give their dataset with --demos DIR")
    return MimicBehavior.from_dataset(inputs.demos, inputs.world, shared=inputs.shared)


# Factories are module-level functions: worker processes and Ray actors receive them pickled.
BEHAVIORS: dict[str, Callable[[BehaviorInputs], Behavior]] = {
    "teleop": _teleop,  # the human motion model in the simulator (a reference, not a study behaviour)
    "planner": _planner,  # ungrounded behaviour: grasp sampler + motion planner
    "mimic": _mimic,  # grounded behaviour: MimicGen-style transformation of the real demonstrations
}


def make_behavior(name: str, inputs: BehaviorInputs) -> Behavior:
    if name not in BEHAVIORS:
        raise UnknownNameError("behavior", name, tuple(BEHAVIORS))
    return BEHAVIORS[name](inputs)


def generate_one(
    behavior: Behavior,
    world: WorldParams,
    condition_kind: str,
    seed: int,
    video: Path | None = None,
    config: CellConfig = CellConfig(),
) -> RolloutResult:
    """One episode of ``behavior`` in ``world`` under a ``condition_kind`` condition drawn from
    ``seed``; with ``video``, an MP4 of it (none when the episode has no step)."""
    rng = np.random.default_rng([seed, 0x6E1])
    condition = sample_condition(condition_kind, rng)
    cell = SimCell(world, config)
    writer = VideoWriter(video, 1.0 / config.control.control_dt) if video is not None else None

    def film(c: SimCell, _step: int) -> None:
        writer.write(side_by_side([c.render(cam, TILE_SIZE) for cam in VIDEO_CAMERAS]))

    try:
        result = rollout(
            cell,
            behavior,
            condition,
            rng,
            {"seed": seed},
            keep_failures=True,
            on_frame=None if writer is None else film,
        )
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        cell.close()
    if writer is not None:
        writer.close()
    return result


def generate_one_command(
    behavior: str,
    world: Path,
    seed: int = 0,
    condition: str = "nominal",
    video: Path | None = None,
    demos: Path | None = None,
) -> None:
    """Plan and execute one simulated episode, print its outcome, optionally write an MP4 of it.

    Args:
        behavior: Behaviour: one of the registered names (e.g. mimic, planner).
        world: WorldParams JSON of the simulated world (grounded or ungrounded).
        seed: Seed of the condition draw and of the behaviour's choices.
        condition: Condition kind: nominal, lighting, belt_speed, novel_object or combined.
        video: MP4 file to write (head-left and right-wrist views side by side, 10 fps).
        demos: Real demonstrations dataset (behaviours that transform demonstrations need it).
    """
    from rich.console import Console

    if video is not None:
        output_file(video, "an MP4 video", "--video", suffix=".mp4", create=False)
    params = WorldParams.load(world, "--world")
    beh = make_behavior(behavior, BehaviorInputs(world=params, demos=demos))
    res = generate_one(beh, params, condition, seed, video)
    outcome = "success" if res.success else f"failure ({res.failure})"
    secs = ", ".join(f"{k} {v:.2f} s" for k, v in res.seconds.items())
    where = f"; video {video}" if video is not None and res.steps else ""  # no step, no frame, no video
    Console(stderr=True).print(
        f"{behavior} episode, seed {seed}, {condition}: {outcome} in {res.steps} steps ({secs}){where}"
    )
