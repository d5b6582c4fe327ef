"""Filming a study's clips: replayed from the evaluation's kept actions against whole waves run again.

    .venv/bin/python benchmarks/film_speed.py --policy RUN_DIR [--lab 0] [--profile quick] [--workers 2]

Evaluates the policy (a training run folder) on the profile's lab trial list with the study's
settings (``r2s2r.study.steps.eval_config``), chooses the trials the report films
(``r2s2r.study.clips.choose_clips``), then films them twice in the same run: without the evaluation's
record (their waves run again with the policy, as every filming did before evaluations kept their
actions) and replayed from it (the chosen trials alone, no policy). Both must repeat every recorded
rollout and give the same frames (checked). The evaluation's own wall time is the peer for both.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco loads)

# isort: split
import av
import numpy as np
from rich.console import Console
from rich.table import Table

from r2s2r.evaluate.film import film_trials
from r2s2r.evaluate.runner import evaluate
from r2s2r.policy import load_policy
from r2s2r.study.clips import choose_clips
from r2s2r.study.profiles import get_profile
from r2s2r.study.steps import eval_config


def _pixels(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", type=Path, required=True, help="a training run folder (r2s2r train --out)")
    ap.add_argument("--lab", type=int, default=0)
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    console = Console(width=150)
    p = get_profile(args.profile).replace(lab=args.lab)
    config = eval_config(p, args.workers)
    policy = load_policy(args.policy)
    console.print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, lab {args.lab}, "
        f"{p.trials.total} trials, batch {config.batch}, {config.workers} workers, policy {args.policy}"
    )
    with tempfile.TemporaryDirectory(prefix="r2s2r-film-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        res = evaluate(policy, p.lab, config, out=root / "eval", name="policy")
        t_eval = time.perf_counter() - t0
        chosen = choose_clips(res.outcomes, config.batch)
        waves = len({i // config.batch for i in chosen})
        t0 = time.perf_counter()
        rerun = film_trials(policy, res, config, chosen, root / "rerun")
        t_rerun = time.perf_counter() - t0
        t0 = time.perf_counter()
        replayed = film_trials(policy, res, config, chosen, root / "replay", recorded=root / "eval")
        t_replay = time.perf_counter() - t0
        for i in chosen:
            a, b = (_pixels(d / rerun[i].video) for d in (root / "rerun", root / "replay"))
            if len(a) != len(b) or not all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)):
                raise SystemExit(f"trial {i}: the replayed video's frames differ from the re-run's")
        steps = sum(replayed[i].steps for i in chosen)
    table = Table("what", "trials", "wall s", "x evaluation", "x wave re-runs")
    table.add_row(f"evaluation ({res.overall().successes}/{len(res.outcomes)} success)", str(len(res.outcomes)),
                  f"{t_eval:.1f}", "1.00", "")  # fmt: skip
    table.add_row(f"film by wave re-runs ({waves} waves)", str(len(chosen)), f"{t_rerun:.1f}",
                  f"{t_rerun / t_eval:.2f}", "1.00")  # fmt: skip
    table.add_row(f"film by replay ({steps} steps filmed)", str(len(chosen)), f"{t_replay:.1f}",
                  f"{t_replay / t_eval:.2f}", f"{t_replay / t_rerun:.2f}")  # fmt: skip
    console.print(table)
    console.print("same outcomes and identical frames: checked")


if __name__ == "__main__":
    main()
