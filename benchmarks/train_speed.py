"""Training and inference speed of a preset: the data pipeline's overhead and batched chunk latency.

    .venv/bin/python benchmarks/train_speed.py [--preset cpu] [--steps 60] [--threads 2]

Builds a temporary real dataset and a sim dataset of render-like synthetic episodes (three 96x96
cameras, as ``demos collect`` records them) and measures, in the same run:

- training samples/s of ``r2s2r.train.train`` at ratio 0.5: HDF5 reads, resize to the preset's
  resolution, shifts, on the loader thread, overlapped with the optimiser steps; with the default
  frame cache (these small datasets end up cached) and without it (every frame decoded: the case
  of a sim dataset far larger than the cache);
- the floor: the same model and step code on one batch already in memory (no data pipeline);
- ``Policy.predict_chunk`` latency (K Euler steps) for batches of 1 and 50 observations.

The machine is shared and noisy: read the ratio, which is measured in the same run, not the times.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from r2s2r.data import DatasetWriter, standard_features, synthetic_episode
from r2s2r.data.features import canonical_features
from r2s2r.data.object_state import OBJECT_STATE_FEATURE
from r2s2r.policy import count_parameters, load_policy
from r2s2r.policy.policy import obs_keys
from r2s2r.train import get_preset, train
from r2s2r.train.distributed import DistInfo
from r2s2r.train.loop import TrainingRun
from r2s2r.train.pipeline import BatchLoader
from r2s2r.train.sources import open_sources


def write(path: Path, episodes: int, frames: int, source: str, seed: int) -> Path:
    # with the object-state feature: the cpu preset learns it as an auxiliary target
    feats = canonical_features([*standard_features(state_dim=60), OBJECT_STATE_FEATURE])
    with DatasetWriter(path, feats, 10.0, shard_episodes=8) as w:
        for k in range(episodes):
            w.add(synthetic_episode(feats, frames, np.random.default_rng(seed + k), key=k, source=source))
    return path


def floor_steps_per_s(real: Path, sim: Path, out: Path, preset, steps: int) -> float:
    """Optimiser steps/s of the training step on one batch already in memory."""
    sources = open_sources(real, [sim], preset.policy)
    run = TrainingRun(sources, out, preset, DistInfo(0, 1, 0), torch.device("cpu"))
    with BatchLoader(run.mixture, preset.policy, preset.train.shift_px, run.rng, prefetch=0) as loader:
        batch = loader.next()
    run.model.train()
    run.step(run.model, batch, 1)  # warm up
    t0 = time.perf_counter()
    for s in range(steps):
        run.step(run.model, batch, s + 2)
    sources.close()
    return steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--object-state", type=float, default=None, help="auxiliary object-state weight (default: preset)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    console = Console()
    base = get_preset(args.preset)
    if args.object_state is not None:
        base = dataclasses.replace(base, policy=dataclasses.replace(base.policy, object_state=args.object_state))
    log_every = max(1, args.steps // 6)
    preset = dataclasses.replace(
        base,
        train=dataclasses.replace(
            base.train, steps=args.steps, ratio=0.5, log_every=log_every, checkpoint_every=args.steps
        ),
    )
    bs = preset.train.batch_size
    with tempfile.TemporaryDirectory(prefix="r2s2r-train-bench-") as tmp:
        root = Path(tmp)
        real = write(root / "real", args.episodes, args.frames, "real", 0)
        sim = write(root / "sim", args.episodes, args.frames, "sim", 1000)
        floor_before = floor_steps_per_s(real, sim, root / "floor1", preset, max(5, args.steps // 3))
        result = train(real, [sim], root / "run", preset)
        cold = dataclasses.replace(preset, train=dataclasses.replace(preset.train, cache_mb=0))
        uncached = train(real, [sim], root / "cold", cold)
        floor_after = floor_steps_per_s(real, sim, root / "floor2", preset, max(5, args.steps // 3))
        rates = [r["samples_per_s"] for r in result.history[1:]]  # the first window holds the start-up
        pipeline = statistics.median(rates)
        pipeline_cold = statistics.median([r["samples_per_s"] for r in uncached.history[1:]])
        floor = bs * (floor_before + floor_after) / 2
        policy = load_policy(root / "run")
        rng = np.random.default_rng(0)
        latency = {}
        for b in (1, 50):
            s = policy.image_size
            obs = {  # every entry the policy reads (with past_frame: past/<camera>, past/proprio too)
                k: rng.normal(size=(b, 27)).astype(np.float32)
                if k.endswith("proprio")
                else rng.integers(0, 256, size=(b, s, s, 3), dtype=np.uint8)
                for k in obs_keys(policy.config)
            }
            policy.predict_chunk(obs, rng)
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                policy.predict_chunk(obs, rng)
                times.append(time.perf_counter() - t0)
            latency[b] = 1000 * statistics.median(times)

    pc = preset.policy
    title = (
        f"preset {args.preset}: {pc.image_size} px x {len(pc.cameras)} cameras (stored 96 px), "
        f"{count_parameters(policy.model) / 1e6:.2f} M parameters, batch {bs}, {args.threads} threads"
    )
    table = Table(title=title)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("note")
    table.add_row("training samples/s (data store)", f"{pipeline:.0f}", f"median of {len(rates)} windows, ratio 0.5")
    table.add_row("training samples/s (batch in memory)", f"{floor:.0f}", "floor, same run (before + after)")
    table.add_row("pipeline overhead", f"{floor / pipeline - 1:+.1%}", "floor / store - 1")
    table.add_row("training samples/s, no frame cache", f"{pipeline_cold:.0f}", "every frame decoded from HDF5")
    table.add_row(
        "pipeline overhead, no frame cache", f"{floor / pipeline_cold - 1:+.1%}", "worst case: a huge dataset"
    )
    table.add_row("seconds per step", f"{bs / pipeline:.3f}", f"{3000 * bs / pipeline / 60:.1f} min per 3000 steps")
    for b, ms in latency.items():
        table.add_row(
            f"predict_chunk, batch {b} (ms)", f"{ms:.1f}", f"K={pc.euler_steps} Euler steps, H={pc.action_horizon}"
        )
    table.add_row(
        "per observation, batch 50 (ms)",
        f"{latency[50] / 50:.2f}",
        f"{latency[1] / latency[50] * 50:.1f}x batching gain",
    )
    console.print(table)
    cpu = platform.processor() or platform.machine()
    console.print(f"machine: {platform.platform()}, {cpu}, {os.cpu_count()} CPUs, torch {torch.__version__}")


if __name__ == "__main__":
    main()
