"""Training lanes: one training on all the cores against several side by side, each on its share.

    .venv/bin/python benchmarks/train_lanes.py [--preset cpu] [--steps 200] [--lanes 2] [--past-cameras CAM ...]

The study trains its policies side by side (``r2s2r.study.runner.training_lanes``: one lane per core,
the cores shared out). This measures, in one run, the same training (``r2s2r.train.train`` on a
synthetic real and sim dataset of 96 px frames, ratio 0.5, as ``train_speed.py`` builds them):

- the reference: one run alone on every core;
- ``--lanes`` runs at once, each in its own spawned process with cores // lanes torch threads;
- with ``--past-cameras``, the same lanes again with the policy reading those cameras' earlier frame
  only (``PolicyConfig.past_cameras``), the preset's other settings unchanged.

It prints seconds per optimiser step of each run and the optimiser steps per second of the whole
machine; the ratio is the lanes' throughput over the reference's (above 1: side by side pays).
Run it alone on the machine; the load average is printed with it.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from train_speed import write


def _train(
    real: Path, sim: Path, out: Path, preset_name: str, steps: int, threads: int, past: tuple[str, ...] | None = None
) -> float:
    """Seconds ``steps`` optimiser steps took on ``threads`` torch threads (in this process); ``past``:
    the policy's ``past_cameras`` instead of the preset's."""
    import torch

    from r2s2r.train import get_preset, train

    torch.set_num_threads(threads)
    base = get_preset(preset_name)
    if past is not None:
        base = dataclasses.replace(base, policy=dataclasses.replace(base.policy, past_cameras=past))
    tc = dataclasses.replace(base.train, steps=steps, ratio=0.5, log_every=max(1, steps // 4), checkpoint_every=steps)
    t0 = time.perf_counter()
    train(real, [sim], out, dataclasses.replace(base, train=tc))
    return time.perf_counter() - t0


def _lanes(pool_args: tuple, real: Path, sim: Path, root: Path, args, threads: int, past) -> tuple[list[float], float]:
    """Each lane's seconds and the wall seconds of ``args.lanes`` trainings at once."""
    t0 = time.perf_counter()
    with cf.ProcessPoolExecutor(args.lanes, *pool_args) as pool:
        futs = [
            pool.submit(_train, real, sim, root / f"lane{i}", args.preset, args.steps, threads, past)
            for i in range(args.lanes)
        ]
        lanes = [f.result() for f in futs]
    return lanes, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lanes", type=int, default=2)
    ap.add_argument("--past-cameras", nargs="*", default=None, help="also: lanes reading these earlier frames only")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    if args.lanes < 2 or args.steps < 1:
        ap.error(f"expected --lanes >= 2 and --steps >= 1, got {args.lanes} and {args.steps}")
    load = os.getloadavg()
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="r2s2r-lanes-") as tmp:
        root = Path(tmp)
        real, sim = write(root / "real", 10, 100, "real", 0), write(root / "sim", 10, 100, "sim", 1000)
        rows = []
        with cf.ProcessPoolExecutor(1, ctx) as pool:  # the reference, in a fresh process too
            alone = pool.submit(_train, real, sim, root / "alone", args.preset, args.steps, cores).result()
        rows.append(("one run", 1, cores, [alone], alone))
        threads = max(1, cores // args.lanes)
        lanes, wall = _lanes((ctx,), real, sim, root / "preset", args, threads, None)
        rows.append(("side by side", args.lanes, threads, lanes, wall))
        if args.past_cameras is not None:
            past = tuple(args.past_cameras)
            lanes, wall = _lanes((ctx,), real, sim, root / "past", args, threads, past)
            name = f"side by side, earlier frames of {', '.join(past) or 'no camera'}"
            rows.append((name, args.lanes, threads, lanes, wall))
    table = Table(title=f"preset {args.preset}, {args.steps} steps a run, {cores} cores, load {load[0]:.2f} at start")
    for col in ("runs", "lanes", "threads each", "s per step (each run)", "steps/s (machine)", "ratio"):
        table.add_column(col, justify="right" if col != "runs" else "left")
    ref = args.steps / alone
    for name, n, th, secs, wall in rows:
        machine = n * args.steps / wall
        per = ", ".join(f"{s / args.steps:.3f}" for s in secs)
        table.add_row(name, str(n), str(th), per, f"{machine:.2f}", f"{machine / ref:.2f}")
    console = Console()
    console.print(table)
    console.print(f"load average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
