"""Generation throughput: admitted episodes per hour per worker and the overhead over the floor.

    .venv/bin/python benchmarks/generate_speed.py [--behavior teleop|mimic|planner ...] [--world FILE]
        [--demos DIR] [--n 200] [--workers 2] [--image-size 96]

Runs ``r2s2r.generate.run.generate`` for each behaviour named (fresh temporary folder, seed 0,
the default condition mix) and prints, per behaviour: attempts, admitted, admission rate, the
failure taxonomy, admitted trajectories per hour per worker, and the overhead ratio: wall time x
workers against the floor measured in the same run (physics + rendering of every attempt,
admitted or rejected). What sits between floor and wall: resets (model compilation), planning,
recording and shipping episodes between processes, writing shards. Shared noisy machine: read
the ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from r2s2r.generate.attempt import BehaviorInputs, GenerationSpec
from r2s2r.generate.mix import ConditionMix
from r2s2r.generate.one import BEHAVIORS
from r2s2r.generate.run import RunConfig, generate
from r2s2r.world.cell import CellConfig
from r2s2r.world.params import WorldParams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--behavior", nargs="+", default=["teleop"], choices=sorted(BEHAVIORS))
    ap.add_argument("--world", type=Path, default=None, help="WorldParams JSON (default: the nominal spec)")
    ap.add_argument("--demos", type=Path, default=None, help="real demonstrations (the mimic behaviour)")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--image-size", type=int, default=96)
    args = ap.parse_args()
    world = WorldParams.load(args.world) if args.world else WorldParams.nominal()
    console = Console(width=180)
    table = Table(title=f"generation, n={args.n}, {args.workers} workers, {args.image_size} px, {platform.node()}")
    for col in ("behavior", "attempts", "admitted", "rate", "failures", "per h per worker", "wall s",
                "floor s", "plan s", "wall x workers / floor"):  # fmt: skip
        table.add_column(col)
    for name in args.behavior:
        cell = CellConfig(image_size=args.image_size)
        spec = GenerationSpec(BehaviorInputs(world, args.demos), BEHAVIORS[name], cell, ConditionMix(), seed=0)
        with tempfile.TemporaryDirectory() as tmp:
            console.print(f"[dim]{name}: generating {args.n} ...[/]")
            s = generate(Path(tmp) / name, spec, RunConfig(n=args.n, workers=args.workers), {"bench": name})
        fails = ", ".join(f"{k} {v}" for k, v in s["failures"].items()) or "none"
        table.add_row(name, str(s["attempts"]), str(s["admitted"]), f"{s['admission_rate']:.0%}", fails,
                      f"{s['admitted_per_hour_per_worker']:.0f}", f"{s['wall_s']:.0f}", f"{s['floor_s']:.0f}",
                      f"{s['seconds']['plan']:.0f}", f"{s['worker_s'] / s['floor_s']:.2f}")  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    main()
