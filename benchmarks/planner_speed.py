"""Planner behaviour: admission rate and planning time per episode against the physics floor.

    .venv/bin/python benchmarks/planner_speed.py [--n 40] [--kinds nominal belt_speed novel_object]
        [--image-size 96] [--world FILE]

For each condition kind, ``--n`` episodes (attempt k draws from ``default_rng([0, k])``, as a
generation run does) of ``MotionPlanner`` in one ``SimCell`` with the three policy cameras, run
through ``generate.rollout`` (execution under contact physics, judge admission). Grasps are
sampled once per object before the episodes (their time is reported per object) so the plan times
are those of a warm worker. Printed per kind: attempts, admitted, admission rate, the failure
taxonomy, planning time per episode (mean, median, 90th percentile), the floor measured in the
same run (physics + rendering of the episode's control steps), and plan / floor.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import Counter
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from r2s2r.behavior.planner import MotionPlanner
from r2s2r.generate.rollout import rollout
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import KINDS, sample_condition
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import WorldParams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--kinds", nargs="+", default=["nominal", "belt_speed", "novel_object"], choices=KINDS)
    ap.add_argument("--image-size", type=int, default=96)
    ap.add_argument("--world", type=Path, default=None, help="WorldParams JSON (default: the nominal spec)")
    args = ap.parse_args()
    world = WorldParams.load(args.world) if args.world else WorldParams.nominal()
    console = Console(width=160)
    planner = MotionPlanner()
    grasp_s = {}
    for name in CATALOG:
        t0 = time.perf_counter()
        n = len(planner.sampler.grasps(name))
        grasp_s[name] = (time.perf_counter() - t0, n)
    cell = SimCell(world, CellConfig(image_size=args.image_size))
    table = Table(title=f"planner, n={args.n} per kind, {args.image_size} px, 1 process, {platform.node()}")
    for col in ("kind", "attempts", "admitted", "rate", "failures", "plan mean s", "plan median s",
                "plan p90 s", "floor s/episode", "steps/episode", "plan / floor"):  # fmt: skip
        table.add_column(col)
    for kind in args.kinds:
        plan, floor, steps, fails, ok = [], [], [], Counter(), 0
        for k in range(args.n):
            rng = np.random.default_rng([0, k])
            res = rollout(cell, planner, sample_condition(kind, rng), rng, {"seed": 0, "key": k})
            ok += res.success
            if not res.success:
                fails[res.failure] += 1
            plan.append(res.seconds["plan"])
            floor.append(res.seconds["step"])
            steps.append(res.steps)
            console.print(f"[dim]{kind} {k}: {res.failure or 'admitted'}, plan {res.seconds['plan']:.2f} s[/]")
        plan_a, floor_a = np.array(plan), np.array(floor)
        failures = ", ".join(f"{f} {c}" for f, c in fails.most_common()) or "none"
        table.add_row(
            kind, str(args.n), str(ok), f"{ok / args.n:.0%}", failures,
            f"{plan_a.mean():.2f}", f"{np.median(plan_a):.2f}", f"{np.percentile(plan_a, 90):.2f}",
            f"{floor_a.mean():.2f}", f"{np.mean(steps):.0f}", f"{plan_a.sum() / max(floor_a.sum(), 1e-9):.2f}",
        )  # fmt: skip
    cell.close()
    console.print(table)
    g = Table(title="grasp sampling (once per object and worker)")
    for col in ("object", "grasps", "seconds"):
        g.add_column(col)
    for name, (sec, n) in grasp_s.items():
        g.add_row(name, str(n), f"{sec:.2f}")
    console.print(g)


if __name__ == "__main__":
    main()
