"""The agreement table and figure: lab vs each simulated world's success per policy, and per world
Pearson r and MMRV with bootstrap intervals and the per-trial agreement (``evaluate.agreement``).

``agreement_table`` pairs results by policy name: every world must hold results of every lab policy,
all on the lab's one trial list. ``write_agreement`` writes ``agreement.md``, ``agreement.json`` and
``agreement.png`` (a scatter of sim against lab success, one marker per world, Wilson intervals as
error bars, the diagonal where a world would agree exactly), each atomically.
"""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from r2s2r import atomic
from r2s2r.errors import ConfigError
from r2s2r.evaluate.agreement import Agreement, agreement
from r2s2r.evaluate.results import EvalResults
from r2s2r.evaluate.stats import Rate
from r2s2r.evaluate.tables import markdown_table
from r2s2r.files import output_dir

TABLE_FILE, JSON_FILE, FIGURE_FILE = "agreement.md", "agreement.json", "agreement.png"


@dataclass(frozen=True)
class AgreementTable:
    """Per policy its lab success and each world's; per world its agreement with the lab."""

    policies: tuple[str, ...]
    lab: tuple[Rate, ...]
    sims: dict[str, tuple[Rate, ...]]  # world name -> success per policy (policy order)
    agreements: dict[str, Agreement]  # world name -> agreement with the lab

    def to_json(self) -> dict:
        def clean(obj):  # NaN (an undefined r) as null: strict JSON
            if isinstance(obj, float) and math.isnan(obj):
                return None
            if isinstance(obj, dict):
                return {k: clean(v) for k, v in obj.items()}
            if isinstance(obj, (list, tuple)):
                return [clean(v) for v in obj]
            return obj

        return clean(
            {
                "policies": list(self.policies),
                "lab": [dataclasses.asdict(r) for r in self.lab],
                "sims": {w: [dataclasses.asdict(r) for r in rates] for w, rates in self.sims.items()},
                "agreements": {w: dataclasses.asdict(a) for w, a in self.agreements.items()},
            }
        )


def agreement_table(
    lab: Sequence[EvalResults],
    worlds: Mapping[str, Sequence[EvalResults]],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AgreementTable:
    """Agreement of each world (name -> its results, one per policy) with the lab results ``lab``."""
    names = [r.policy for r in lab]
    if len(set(names)) != len(names):
        raise ConfigError(f"agreement table: expected one lab result per policy, got policies {names}")
    if not worlds:
        raise ConfigError("agreement table: expected the results of at least one simulated world")
    sims, agreements = {}, {}
    for world, results in worlds.items():
        by_name = {r.policy: r for r in results}
        missing = [n for n in names if n not in by_name]
        if missing or len(by_name) != len(results):
            raise ConfigError(
                f"agreement table: world {world!r}: expected one result for each lab policy {names}, "
                f"got {[r.policy for r in results]}"
            )
        pairs = [(by_name[n], r) for n, r in zip(names, lab, strict=True)]
        sims[world] = tuple(by_name[n].overall() for n in names)
        agreements[world] = agreement(pairs, resamples, confidence, seed)
    return AgreementTable(tuple(names), tuple(r.overall() for r in lab), sims, agreements)


def _pct(r: dict) -> str:
    return f"{r['successes']}/{r['trials']} ({r['successes'] / r['trials']:.0%})"


# MMRV is shown to 3 decimals: its bar (SIMPLER's <= 0.05) sits where 2 decimals would round 0.051 to "0.05"
MMRV_DIGITS = 3


def _num(x: float | None, digits: int = 2) -> str:
    return "undefined" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _span(i: dict, digits: int = 2) -> str:
    if i["low"] is None or math.isnan(i["low"]):
        return "undefined"
    return f"[{i['low']:.{digits}f}, {i['high']:.{digits}f}]"


# What the agreement rows mean (under the table in agreement.md and in the study report).
AGREEMENT_NOTE = (
    "Pearson r and MMRV (SIMPLER: mean over policies of the largest lab-success gap to a policy the world "
    "orders differently; 0 is perfect) across policies; intervals are bootstrap percentiles over trials, "
    "resampled jointly for the lab and the world of every policy. Same outcome: trials whose success in "
    "the world equals the lab's."
)


def success_rows(t: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the success table (policy, lab, each world) of an agreement table's JSON form
    (``AgreementTable.to_json()``: what a study's ``results.json`` holds)."""
    worlds = list(t["sims"])
    rows = [
        [p, _pct(lab), *(_pct(t["sims"][w][i]) for w in worlds)]
        for i, (p, lab) in enumerate(zip(t["policies"], t["lab"], strict=True))
    ]
    return ["policy", "lab", *worlds], rows


def agreement_rows(t: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows (one per world: r, MMRV, their intervals, trials with the lab's outcome) of an
    agreement table's JSON form."""
    rows = []
    for w, a in t["agreements"].items():
        trials = sum(p["both_success"] + p["both_failure"] + p["sim_only"] + p["lab_only"] for p in a["per_trial"])
        same = sum(p["both_success"] + p["both_failure"] for p in a["per_trial"])
        rows.append(
            [
                w,
                _num(a["pearson"]),
                _span(a["pearson_interval"]),
                _num(a["mmrv"], MMRV_DIGITS),
                _span(a["mmrv_interval"], MMRV_DIGITS),
                f"{same}/{trials} ({same / trials:.0%})",
            ]
        )
    conf = f"{next(iter(t['agreements'].values()))['mmrv_interval']['confidence']:.0%}"
    return ["world", "Pearson r", f"{conf} CI", "MMRV", f"{conf} CI", "same outcome (trials)"], rows


def pearson_notes(t: dict) -> list[str]:
    """Why r is undefined in a world, where it is."""
    return [f"{w}: {a['pearson_note']}." for w, a in t["agreements"].items() if a["pearson_note"]]


def agreement_markdown(table: AgreementTable) -> str:
    t = table.to_json()
    lines = ["# Sim-vs-lab agreement", "", *markdown_table(*success_rows(t)), ""]
    lines += markdown_table(*agreement_rows(t))
    lines += ["", AGREEMENT_NOTE]
    lines += [f"\n{n}" for n in pearson_notes(t)]
    return "\n".join(lines) + "\n"


def agreement_figure(t: dict) -> bytes:
    """Sim against lab success (%) of an agreement table's JSON form, one panel per world: a numbered
    marker per policy (the key under the panels names them), Wilson intervals as error bars, the diagonal
    where the world would agree exactly; PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def pct(rates):
        values = [100 * r["successes"] / r["trials"] for r in rates]
        err = [
            [v - 100 * r["low"] for v, r in zip(values, rates, strict=True)],
            [100 * r["high"] - v for v, r in zip(values, rates, strict=True)],
        ]
        return values, err

    worlds = list(t["sims"])
    fig, axes = plt.subplots(1, len(worlds), figsize=(4.4 * len(worlds), 4.9), sharey=True, squeeze=False)
    x, xerr = pct(t["lab"])
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (ax, world) in enumerate(zip(axes[0], worlds, strict=True)):
        a = t["agreements"][world]
        y, yerr = pct(t["sims"][world])
        ax.plot([0, 100], [0, 100], color="0.6", linestyle="--", linewidth=1)
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="o", capsize=3, alpha=0.8, color=colours[k % len(colours)])
        # one label per cluster of markers (within 5 points of its first): "1,4,9" rather than overprinted digits
        clusters: list[tuple[float, float, list[int]]] = []
        for i, (xi, yi) in enumerate(zip(x, y, strict=True)):
            near = next((c for c in clusters if math.hypot(c[0] - xi, c[1] - yi) < 5), None)
            if near is None:
                clusters.append((xi, yi, [i + 1]))
            else:
                near[2].append(i + 1)
        for xi, yi, numbers in clusters:
            text = ",".join(map(str, numbers))
            ax.annotate(text, (xi, yi), xytext=(6, 4), textcoords="offset points", fontsize=8)
        r, r_span = _num(a["pearson"]), _span(a["pearson_interval"])
        m, m_span = _num(a["mmrv"], MMRV_DIGITS), _span(a["mmrv_interval"], MMRV_DIGITS)
        ax.set_title(f"{world}\nr {r} {r_span}, MMRV {m} {m_span}", fontsize=9)
        ax.set_xlim(-3, 103)
        ax.set_ylim(-3, 103)
        ax.set_xlabel("success on the lab (%)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("success in simulation (%)")
    key = "   ".join(f"{i + 1} {name}" for i, name in enumerate(t["policies"]))
    fig.suptitle("sim vs lab success per policy (95 % Wilson intervals; dashed: sim = lab)", fontsize=10)
    fig.text(0.5, -0.01, key, ha="center", va="top", fontsize=8, wrap=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def write_agreement(out: Path, table: AgreementTable) -> dict[str, Path]:
    """Write ``agreement.md``, ``agreement.json`` and ``agreement.png`` into ``out`` (atomically)."""
    out = output_dir(out, "an agreement folder")
    return {
        "table": atomic.write_text(out / TABLE_FILE, agreement_markdown(table)),
        "json": atomic.write_json(out / JSON_FILE, table.to_json()),
        "figure": atomic.write_bytes(out / FIGURE_FILE, agreement_figure(table.to_json())),
    }
