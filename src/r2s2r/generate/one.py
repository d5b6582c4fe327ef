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
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import sample_condition
from r2s2r.world.params import WorldParams

VIDEO_CAMERAS = ("head_left", "right_wrist")
VIDEO_SIZE = (320, 240)  # per camera tile, px


def _teleop(inputs: BehaviorInputs) -> Behavior:
    from r2s2r.behavior.sim_teleop import SimTeleop

    return SimTeleop()


def _planner(inputs: BehaviorInputs) -> Behavior:
    from r2s2r.behavior.planner import MotionPlanner

    return MotionPlanner()


def _mimic(inputs: BehaviorInputs) -> Behavior:
    from r2s2r.behavior.mimic import MimicBehavior

    if inputs.demos is None:
        raise R2S2RError("--behavior mimic transforms real demonstrations: give their dataset with --demos DIR")
    return MimicBehavior.from_dataset(inputs.demos, inputs.world)


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


class VideoWriter:
    """Frames of ``VIDEO_CAMERAS`` side by side, written as an MP4 (``mp4v``) at the control rate
    to a temporary name and renamed into place by ``close``."""

    def __init__(self, path: Path, fps: float) -> None:
        import cv2

        self.path = path = output_file(path, "an MP4 video", suffix=".mp4")
        self._tmp = path.with_name(f".{path.stem}.tmp.mp4")
        size = (VIDEO_SIZE[0] * len(VIDEO_CAMERAS), VIDEO_SIZE[1])
        self._writer = cv2.VideoWriter(str(self._tmp), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
        if not self._writer.isOpened():
            raise R2S2RError(f"--video: OpenCV cannot write MP4 to {str(path)!r}")
        self.frames = 0

    def add(self, cell: SimCell) -> None:
        self.add_images([cell.render(c, VIDEO_SIZE) for c in VIDEO_CAMERAS])

    def add_images(self, images: list[np.ndarray]) -> None:
        """One frame from given RGB uint8 images of ``VIDEO_CAMERAS`` (any size: each is resized
        to ``VIDEO_SIZE``), e.g. a lab's captures."""
        import cv2

        if len(images) != len(VIDEO_CAMERAS):
            raise R2S2RError(f"video frame: expected {len(VIDEO_CAMERAS)} images {VIDEO_CAMERAS}, got {len(images)}")
        tiles = [
            img if img.shape[1::-1] == VIDEO_SIZE else cv2.resize(img, VIDEO_SIZE, interpolation=cv2.INTER_AREA)
            for img in images
        ]
        self._writer.write(cv2.cvtColor(np.concatenate(tiles, axis=1), cv2.COLOR_RGB2BGR))
        self.frames += 1

    def close(self) -> None:
        self._writer.release()
        self._tmp.replace(self.path)


def generate_one(
    behavior: Behavior,
    world: WorldParams,
    condition_kind: str,
    seed: int,
    video: Path | None = None,
    config: CellConfig = CellConfig(),
) -> RolloutResult:
    """One episode of ``behavior`` in ``world`` under a ``condition_kind`` condition drawn from
    ``seed``; with ``video``, an MP4 of it."""
    rng = np.random.default_rng([seed, 0x6E1])
    condition = sample_condition(condition_kind, rng)
    cell = SimCell(world, config)
    writer = VideoWriter(video, 1.0 / config.control.control_dt) if video is not None else None
    try:
        return rollout(
            cell,
            behavior,
            condition,
            rng,
            {"seed": seed},
            keep_failures=True,
            on_frame=None if writer is None else (lambda c, _step: writer.add(c)),
        )
    finally:
        if writer is not None:
            writer.close()
        cell.close()


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
    where = f"; video {video}" if video is not None else ""
    Console(stderr=True).print(
        f"{behavior} episode, seed {seed}, {condition}: {outcome} in {res.steps} steps ({secs}){where}"
    )
