"""``r2s2r train heldout``: a run's open-loop action error on demonstrations, against holding still.

The error a training run logs at each checkpoint (``r2s2r.train.validation``) is measured on its own
held-out share of the real demonstrations, ten of a hundred: its 95 % interval over those episodes is
some +-0.1 wide in units of the hold-still error. Demonstrations collected afterwards, never trained on,
measure it as precisely as one likes (40 fresh demos: +-0.05). Given the run's own training dataset, the
command measures the run's held-out episodes with the run's probe (seed and frame count), reproducing the
training log's numbers exactly; given any other dataset, all of its episodes. A sim dataset the run
trained on is refused: its episodes are not held out.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r.data.dataset import Dataset
from r2s2r.errors import ConfigError
from r2s2r.train.validation import OpenLoopError, OpenLoopProbe


@dataclasses.dataclass(frozen=True)
class HeldOutRow:
    """One checkpoint's open-loop error on a set of demonstrations."""

    checkpoint: str  # step_NNNNNNNN
    episodes: int  # the demonstrations measured
    frames: int  # the frames sampled from them
    own_split: bool  # the run's own held-out episodes (as its training log measured them)
    error: OpenLoopError

    def record(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint,
            "episodes": self.episodes,
            "frames": self.frames,
            "own_split": self.own_split,
            **self.error.record(),
        }


def _checkpoints(run: Path, steps: tuple[int, ...]) -> list[Path]:
    """The step folders of ``run`` to measure: ``steps`` (each must be kept), else the run's best (or latest)."""
    from r2s2r.policy.checkpoint import resolve_checkpoint, step_name

    if not steps:
        return [resolve_checkpoint(run, best=True)]
    kept = sorted(p.name for p in Path(run).iterdir() if p.is_dir() and p.name.startswith("step_"))
    missing = [s for s in steps if step_name(s) not in kept]
    if missing:
        raise ConfigError(f"{run}: no checkpoints of steps {missing}; it keeps {kept or 'none'}")
    return [Path(run) / step_name(s) for s in steps]


def _episodes(meta: dict[str, Any], ds: Dataset) -> tuple[np.ndarray, bool]:
    """The episodes of ``ds`` the checkpoint never trained on, and whether they are its own held-out split."""
    hashes = {s.get("content_hash"): s for s in meta.get("sources", [])}
    source = hashes.get(ds.manifest.content_hash())
    if source is None:
        return np.arange(len(ds)), False
    if source.get("name") != "real" or not source.get("held_out"):
        raise ConfigError(
            f"{ds.path}: the run trained on every episode of this dataset (its {source.get('name')} source); "
            "give demonstrations it did not train on"
        )
    return np.asarray(source["held_out"], dtype=int), True


def heldout_errors(
    run: Path, demos: Path, steps: tuple[int, ...] = (), frames: int | None = None, seed: int | None = None
) -> list[HeldOutRow]:
    """The open-loop error of checkpoints ``steps`` of ``run`` (default: its best) on the episodes of
    ``demos`` it did not train on; ``frames`` sampled (default: the run's probe count on its own split,
    1024 on other demonstrations) by ``seed`` (default: the run's)."""
    from r2s2r.policy.checkpoint import load_policy, read_checkpoint

    if frames is not None and (isinstance(frames, bool) or not isinstance(frames, int) or frames < 1):
        raise ConfigError(f"--frames: expected a positive number of frames, got {frames!r}")
    rows = []
    with Dataset(demos) as ds:
        for ckpt in _checkpoints(run, steps):
            _, meta = read_checkpoint(ckpt, verify=())
            episodes, own = _episodes(meta, ds)
            train = meta.get("train", {})
            n = frames if frames is not None else (int(train.get("probe_samples", 256)) if own else 1024)
            policy = load_policy(ckpt)
            draw = int(train.get("seed", 0)) if seed is None else seed
            probe = OpenLoopProbe(ds, episodes, policy.config, draw, n)
            error = probe.evaluate(policy.model, policy.normalizer)
            rows.append(HeldOutRow(ckpt.name, len(episodes), len(probe.proprio), own, error))
    return rows
