"""Dataset store speed: random training batches from HDF5 shards against in-memory arrays, size and write rate.

    .venv/bin/python benchmarks/data_read.py [--episodes 20] [--frames 150] [--batch 64] [--repeats 30]

Builds a temporary dataset of render-like synthetic episodes (three 96x96x3 cameras with mild sensor
noise, 27-D proprio and actions, a 60-D float64 state, MimicGen datagen_info), then times
``WindowSampler.sample_random`` against the floor measured in the same run: the same (episode, t)
pairs gathered from numpy arrays already in memory. This machine is shared and noisy: read the
ratios, not the times.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from r2s2r.data import Dataset, DatasetWriter, WindowSampler, compute_stats, standard_features, synthetic_episode


def _median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--horizon", type=int, default=16)
    args = ap.parse_args()
    console = Console()
    feats = standard_features(state_dim=60)
    episodes = [synthetic_episode(feats, args.frames, np.random.default_rng(k), key=k) for k in range(args.episodes)]
    frames = args.episodes * args.frames

    with tempfile.TemporaryDirectory(prefix="r2s2r-data-bench-") as tmp:
        path = Path(tmp) / "ds"
        t0 = time.perf_counter()
        with DatasetWriter(path, feats, 10.0, shard_episodes=8) as w:
            for ep in episodes:
                w.add(ep)
        write_s = time.perf_counter() - t0
        disk = sum(p.stat().st_size for p in path.glob("shard_*.h5"))
        raw = sum(sum(a.nbytes for a in ep.arrays().values()) for ep in episodes)

        with Dataset(path) as ds:
            sampler = WindowSampler(ds, horizon=args.horizon)
            sampler.sample_random(args.batch, np.random.default_rng(0))  # open files and datasets once
            rng = np.random.default_rng(1)
            store_ms = _median_ms(lambda: sampler.sample_random(args.batch, rng), args.repeats)

            # floor: the same gather from arrays already in memory
            mem = {k: np.concatenate([ep.obs[k] for ep in episodes]) for k in sampler.obs_keys}
            actions = np.concatenate([ep.actions for ep in episodes])
            start = np.arange(args.episodes) * args.frames
            rng_floor = np.random.default_rng(1)

            def floor() -> dict[str, np.ndarray]:
                idx = rng_floor.integers(0, len(sampler), size=args.batch)
                e, t = sampler.index[idx, 0], sampler.index[idx, 1]
                out = {f"obs/{k}": v[start[e] + t] for k, v in mem.items()}
                steps = t[:, None] + np.arange(args.horizon)
                last = args.frames - 1
                out["action_pad_mask"] = steps > last
                out["actions"] = actions[start[e][:, None] + np.minimum(steps, last)]
                return out

            floor_ms = _median_ms(floor, args.repeats)
            episode_ms = _median_ms(lambda: ds.episode(int(rng.integers(len(ds)))), 10)
            t0 = time.perf_counter()
            compute_stats(ds, cache=False)
            stats_ms = 1000 * (time.perf_counter() - t0)

    table = Table(title=f"data store: {args.episodes} episodes x {args.frames} frames, 3 cameras 96x96x3")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("note")
    table.add_row(f"sample_random({args.batch}) (ms, median)", f"{store_ms:.1f}", f"horizon {args.horizon}")
    table.add_row(f"same {args.batch} frames from memory (ms)", f"{floor_ms:.2f}", "floor, same run")
    table.add_row("ratio store / memory", f"{store_ms / floor_ms:.0f}x", "gzip-1 decompression of 192 frames")
    table.add_row("full episode read (ms)", f"{episode_ms:.1f}", f"{args.frames} frames, all arrays")
    table.add_row("bytes on disk per frame", f"{disk / frames:,.0f}", f"raw {raw / frames:,.0f} (x{raw / disk:.2f})")
    table.add_row("write throughput (frames/s)", f"{frames / write_s:,.0f}", "add + fsync + seal into shards")
    table.add_row("compute_stats (ms)", f"{stats_ms:.0f}", "actions, proprio, states")
    console.print(table)
    cpu = platform.processor() or platform.machine()
    console.print(f"machine: {platform.platform()}, {cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}")


if __name__ == "__main__":
    main()
