"""Admission rate of MimicGen-style generation on the nominal range, per simulated world.

Usage: python benchmarks/mimic_admission.py --demos DIR --world grounded.json [--world ungrounded.json]
       [--attempts 30] [--seed 0] [--condition nominal]

Prints one row per world: attempts, admitted, admission rate, failure reasons and seconds per
attempt; and, as the peer measured on the same demonstrations, the teleoperator's attempt success
rate on the lab (the demonstrations' provenance ``attempts``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import r2s2r  # noqa: F401  (sets MUJOCO_GL)
from r2s2r.behavior.mimic import MimicBehavior
from r2s2r.data import Dataset
from r2s2r.generate.admission import run_attempts
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.params import WorldParams


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demos", type=Path, required=True)
    ap.add_argument("--world", type=Path, action="append", required=True)
    ap.add_argument("--attempts", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--condition", default="nominal")
    args = ap.parse_args()
    with Dataset(args.demos) as ds:
        demos = len(ds)
        tries = sum(ds.provenance(i).attempts for i in range(demos))
    print(f"{demos} real demonstrations; teleoperator success on the lab {demos}/{tries} = {demos / tries:.0%}")
    print(f"{'world':<28} {'sources':>7} {'attempts':>8} {'admitted':>8} {'rate':>6} {'s/attempt':>9}  failures")
    for path in args.world:
        world = WorldParams.load(path)
        t0 = time.perf_counter()
        beh = MimicBehavior.from_dataset(args.demos, world)
        prep = time.perf_counter() - t0
        cell = SimCell(world, CellConfig(image_size=96))
        stats = run_attempts(cell, beh, args.condition, args.attempts, args.seed)
        cell.close()
        fails = ", ".join(f"{k} {v}" for k, v in sorted(stats.failures.items())) or "none"
        print(
            f"{path.parent.name + '/' + path.name:<28} {len(beh.sources):>7} {stats.attempts:>8} {stats.admitted:>8} "
            f"{stats.rate:>6.0%} {stats.seconds / max(stats.attempts, 1):>9.2f}  {fails}"
            f" (sources prepared in {prep:.1f} s)"
        )


if __name__ == "__main__":
    main()
