"""Markdown tables of evaluation results: one policy, several policies, a 2x2 design."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from r2s2r.evaluate.results import EvalResults
from r2s2r.evaluate.stats import Effect, PairedComparison, Rate
from r2s2r.world.conditions import KINDS

LABELS = {
    "nominal": "nominal",
    "lighting": "lighting",
    "belt_speed": "belt speed",
    "novel_object": "novel object",
    "combined": "combined",
}


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A markdown table as lines: the header row, the rule, one line per row."""
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]


def _rate_cells(r: Rate) -> list[str]:
    return [f"{r.successes}/{r.trials}", f"{r.rate:.0%}", f"[{r.low:.0%}, {r.high:.0%}]"]


def results_table(res: EvalResults) -> str:
    """One policy: success per condition with 95 % Wilson intervals, failure modes, safety."""
    rows = [[LABELS[k], *_rate_cells(r)] for k, r in res.by_kind().items()]
    shifted = res.shifted()
    if shifted is not None and "nominal" in res.by_kind():
        rows.append(["all shifts", *_rate_cells(shifted)])
    rows.append(["**overall**", *_rate_cells(res.overall())])
    conf = f"{res.overall().confidence:.0%}"
    lines = [
        f"# {res.policy} on {res.where()}",
        "",
        f"{len(res.outcomes)} trials (trial list {res.trials.digest()}); policy seed {res.settings.get('seed')}, "
        f"batch {res.settings.get('batch')}, max {res.settings.get('max_duration')} s per trial.",
        "",
        *markdown_table(["condition", "success", "rate", f"{conf} Wilson CI"], rows),
        "",
    ]
    failures = res.failures()
    lines.append("Failures: " + (", ".join(f"{k} {v}" for k, v in failures.items()) if failures else "none") + ".")
    ok = [o.duration for o in res.outcomes if o.success]
    if ok:
        lines.append(f"Successful trials took {sum(ok) / len(ok):.1f} s on average ({min(ok):.1f}-{max(ok):.1f} s).")
    safety = res.safety_totals()
    changed = ", ".join(f"{k} {v}" for k, v in safety.items()) if safety else "none"
    per_trial = ", ".join(f"{k} {v / len(res.outcomes):.1f}" for k, v in safety.items())
    lines.append(f"Safety filter changes (commands): {changed}" + (f" (per trial: {per_trial})." if safety else "."))
    jumps = [o.replan_jump for o in res.outcomes if o.replan_jump is not None]
    if jumps:
        lines.append(f"Mean arm-joint jump at a re-plan: {sum(jumps) / len(jumps):.3f} rad (largest joint, per trial).")
    return "\n".join(lines) + "\n"


def _label(res: EvalResults) -> str:
    """The policy, and the simulated world it ran in if not the lab."""
    return res.policy if res.cell is None else f"{res.policy} (world {res.cell['world_hash']})"


def comparison_table(results: Sequence[EvalResults], paired: Mapping[int, PairedComparison] | None = None) -> str:
    """Several policies side by side: per-condition success counts and the overall rate with its
    interval; with ``paired`` (policy index -> comparison against the first policy) the paired
    difference, its interval, the discordant trials and the exact McNemar p-value."""
    kinds = [k for k in KINDS if any(k in r.by_kind() for r in results)]
    header = ["policy", *(LABELS[k] for k in kinds), "overall", "95% Wilson CI"]
    rows = []
    for r in results:
        by = r.by_kind()
        o = r.overall()
        cells = [f"{by[k].successes}/{by[k].trials}" if k in by else "-" for k in kinds]
        rows.append([_label(r), *cells, f"{o.successes}/{o.trials} ({o.rate:.0%})", f"[{o.low:.0%}, {o.high:.0%}]"])
    lines = markdown_table(header, rows)
    if paired:
        ref = _label(results[0])
        lines += ["", f"Paired against {ref} (same trials):", ""]
        prow = []
        for i, c in sorted(paired.items()):
            d = c.difference
            prow.append(
                [
                    _label(results[i]),
                    f"{100 * d.estimate:+.0f}",
                    f"[{100 * d.low:+.0f}, {100 * d.high:+.0f}]",
                    f"{c.only_a} / {c.only_b}",
                    f"{c.p_value:.3g}",
                ]
            )
        lines += markdown_table(
            ["policy", f"minus {ref} (pts)", "95% Newcombe CI", f"only it / only {ref}", "exact McNemar p"], prow
        )
    return "\n".join(lines) + "\n"


def effects_table(effects: Mapping[str, Effect], cells: Mapping[tuple[int, int], str]) -> str:
    """A 2x2 design: which policy is in which cell, and the main effects and interaction."""
    lines = ["2x2 design (levels 0/1):", ""]
    lines += markdown_table(["cell", "policy"], [[f"{a}{b}", cells[(a, b)]] for a, b in sorted(cells)])
    lines += [""]
    rows = [
        [name, f"{100 * e.estimate:+.1f}", f"[{100 * e.low:+.1f}, {100 * e.high:+.1f}]"] for name, e in effects.items()
    ]
    lines += markdown_table(["effect", "success (pts)", "95% MOVER-Wilson CI"], rows)
    lines += [
        "",
        "Main effect: change in success rate from level 0 to 1, averaged over the other factor; interaction: "
        "(p11 - p01) - (p10 - p00). Intervals treat the four policies as independent samples "
        "(conservative for paired trials).",
    ]
    return "\n".join(lines) + "\n"
