"""``run_study``: plan, print the plan and its expected time, run the stages (cached), write the report.

Outputs in ``out``: ``stages/<stage>-<hash>/`` (each stage's files and ``stage.json``),
``results.json`` (every number of the report), ``report.md``, ``success.png``, ``training.png``,
``agreement.png`` (sim vs lab success, when the study evaluated in simulated worlds),
``report.html`` (the same report as one self-contained page: figures and the filmed trials embedded)
and ``study.json`` (profile, design, plan, wall time of this run).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from r2s2r import atomic
from r2s2r.errors import R2S2RError
from r2s2r.evaluate.agreement_report import agreement_figure
from r2s2r.files import output_dir
from r2s2r.study.design import Design, get_design
from r2s2r.study.figures import success_figure, training_figure
from r2s2r.study.html import report_html
from r2s2r.study.profiles import StudyProfile, get_profile
from r2s2r.study.report import report_markdown
from r2s2r.study.runner import StudyPlan, default_workers, expected_wall_s, plan_study, run_plan, stage_table
from r2s2r.study.stages import machine
from r2s2r.study.summary import summarize_study

STAGES_DIR = "stages"
RESULTS, REPORT, PAGE, STUDY = "results.json", "report.md", "report.html", "study.json"


def source_commit() -> str:
    """The git commit of the r2s2r source tree, or "unknown" outside a checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
        return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def print_plan(plan: StudyPlan, rows: list[dict[str, Any]], console: Console, title: str) -> float:
    """Print the plan's table; returns its expected wall seconds (``expected_wall_s``)."""
    table = Table(title=title)
    for col in ("stage", "what", "status", "expected"):
        table.add_column(col)
    for r in rows:
        est = 0.0 if r["cached"] else r["estimate_s"]
        status = "cached" if r["cached"] else "to run" + (", side by side" if r["side_by_side"] else "")
        table.add_row(r["stage"], r["what"], status, f"{est / 60:.1f} min")
    total = expected_wall_s(plan, {r["stage"]: r["cached"] for r in rows})
    table.add_row("", "[bold]total (wall)[/]", "", f"[bold]{total / 60:.0f} min[/]")
    console.print(table)
    return total


def run_study(
    out: Path,
    profile_name: str = "quick",
    profile: StudyProfile | None = None,
    design_name: str | None = None,
    workers: int | None = None,
    dry_run: bool = False,
    console: Console | None = None,
    command: str | None = None,
) -> dict[str, Any] | None:
    """Run (or resume) a study into ``out``; returns the results (None for a dry run).

    ``profile`` overrides the registry's profile of ``profile_name`` (e.g. with changed sizes);
    ``design_name`` defaults to the profile's design."""
    out = output_dir(out, "a study folder", "--out", create=False)
    console = console or Console(stderr=True)
    profile = profile or get_profile(profile_name)
    design_name = design_name or profile.design
    design: Design = get_design(design_name)
    if workers is not None and workers < 1:
        raise R2S2RError(f"--workers: expected a number of processes >= 1 (omit it for one per core), got {workers}")
    workers = workers or default_workers()
    root = out / STAGES_DIR
    plan = plan_study(profile, design, root, workers, console)
    rows = stage_table(plan, root)
    title = f"study plan: {design_name} design, {profile_name} profile, lab {profile.lab}, {workers} workers -> {out}"
    expected = print_plan(plan, rows, console, title)
    if dry_run:
        return None
    t0 = time.perf_counter()
    started, commit = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), source_commit()  # the code that runs
    records = run_plan(plan, root, console)
    results = summarize_study(plan, records, profile_name, profile, design_name, design)
    wall = time.perf_counter() - t0
    cached = sum(r.cached for r in records.values())
    side = any(s.side_by_side for s in plan.stages)
    total_min = sum(r.seconds for r in records.values()) / 60
    header = {
        "command": f"`{command or 'r2s2r study run --profile ' + profile_name}`",
        "r2s2r commit": commit,
        "started": started,
        "wall time of this run": f"{wall / 60:.1f} min ({cached} of {len(records)} stages were cached); "
        f"sum of all stage times {total_min:.1f} min"
        + (f" (the training stages ran side by side on {plan.cores} cores)" if side else ""),
        "machine": machine(),
    }
    atomic.remove_stale_temps(out, recursive=False)  # of a run killed while it wrote these files
    atomic.write_json(out / RESULTS, results)
    atomic.write_bytes(out / "success.png", success_figure(results))
    atomic.write_bytes(out / "training.png", training_figure(results))
    if (shown := results["agreement_anchored"] or results["agreement"]) is not None:
        atomic.write_bytes(out / "agreement.png", agreement_figure(shown))
    atomic.write_text(out / REPORT, report_markdown(results, header))
    atomic.write_text(out / PAGE, report_html(results, header, out))
    atomic.write_json(
        out / STUDY,
        {
            "profile": {"name": profile_name, **dataclasses.asdict(profile)},
            "design": design_name,
            "workers": workers,
            "plan": rows,
            "expected_s": expected,
            "wall_s": wall,
            "header": header,
            "argv": sys.argv,
        },
    )
    console.print(f"report: {out / REPORT} and {out / PAGE}")
    return results
