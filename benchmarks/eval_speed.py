"""Wall time of a 50-trial evaluation on the lab twin against its floor, measured in the same run.

    .venv/bin/python benchmarks/eval_speed.py [--lab 0] [--batch 4] [--runs scripted:1 scripted:2 random:2]

Each run is ``policy:workers``. ``random`` is the uniformly random chunk policy looking at the three
standard policy cameras at 96x96 (like a trained policy: the lab renders them at every re-plan,
and skips the frames in between, ``RealCell.act(observe=False)``);
``scripted`` is the teleop operator (no policy camera). The floor is the compute the trials
themselves cost: the lab's physics, rendering, safety filter and judge (timed around every
``LabTwin.reset``/``act`` call in the lab processes) and a per-trial policy's compute (it runs
next to its lab), spread ideally over the workers, plus a chunk policy's batched passes (in the
evaluating process, while the labs wait). ``wall / floor`` is then what the evaluation adds: process start-up, moving
observations between processes, batching, waves waiting for their slowest trial, bookkeeping.
Runs of one policy with different worker counts must give identical outcomes (checked).
"""

from __future__ import annotations

import argparse
import os
import platform

import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco loads)

# isort: split
from rich.console import Console
from rich.table import Table

from r2s2r.evaluate.policies import RandomPolicy, ScriptedOperator
from r2s2r.evaluate.runner import EvalConfig, evaluate

POLICIES = {"scripted": ScriptedOperator, "random": RandomPolicy}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lab", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--runs", nargs="+", default=["scripted:1", "scripted:2", "random:2"])
    args = ap.parse_args()
    console = Console(width=150)
    console.print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"lab {args.lab}, batch {args.batch}, 50 trials (24 nominal, 7/7/6/6 shifted)"
    )
    table = Table("policy", "workers", "success", "steps", "wall s", "lab s", "policy s", "floor s", "wall / floor")
    traces: dict[str, list] = {}
    for run in args.runs:
        name, workers = run.split(":")
        workers = int(workers)
        res = evaluate(POLICIES[name](), args.lab, EvalConfig(batch=args.batch, workers=workers), name=name)
        t = res.timing
        floor = (t["lab_seconds"] + t["trial_policy_seconds"]) / t["workers"] + t["chunk_policy_seconds"]
        o = res.overall()
        table.add_row(
            name,
            str(workers),
            f"{o.successes}/{o.trials}",
            str(sum(x.steps for x in res.outcomes)),
            f"{t['wall_seconds']:.1f}",
            f"{t['lab_seconds']:.1f}",
            f"{t['trial_policy_seconds'] + t['chunk_policy_seconds']:.1f}",
            f"{floor:.1f}",
            f"{t['wall_seconds'] / floor:.2f}",
        )
        replay = [(x.success, x.failure, x.steps, x.trace) for x in res.outcomes]
        if traces.setdefault(name, replay) != replay:
            raise SystemExit(f"{name}: outcomes differ between worker counts")
        console.print(f"{run}: " + ", ".join(f"{k} {r}" for k, r in res.by_kind().items()))
    console.print(table)


if __name__ == "__main__":
    main()
