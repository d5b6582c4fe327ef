"""Comparisons across policies evaluated on the same trial list.

Paired statistics need the same trials in the same order: two results are comparable only when
their trial lists have the same digest (same lab, plan and seeds).
"""

from __future__ import annotations

from collections.abc import Sequence

from r2s2r.errors import ConfigError
from r2s2r.evaluate.results import EvalResults
from r2s2r.evaluate.stats import Effect, PairedComparison, factorial_effects, paired_comparison


def check_same_trials(results: Sequence[EvalResults]) -> None:
    """Raise unless every result was evaluated on the first one's trial list."""
    ref = results[0]
    for r in results[1:]:
        if r.trials.digest() != ref.trials.digest():
            raise ConfigError(
                f"{r.policy!r} (lab {r.lab}, trial list {r.trials.digest()}) and {ref.policy!r} (lab {ref.lab}, "
                f"trial list {ref.trials.digest()}) ran different trials; paired comparisons need the same trial list"
            )


def paired_against_first(results: Sequence[EvalResults], confidence: float = 0.95) -> dict[int, PairedComparison]:
    """Each later policy against the first, trial by trial."""
    check_same_trials(results)
    ref = results[0].successes()
    return {i: paired_comparison(r.successes(), ref, confidence) for i, r in enumerate(results) if i > 0}


def design_effects(
    results: Sequence[EvalResults], names: tuple[str, str], confidence: float = 0.95
) -> tuple[dict[str, Effect], dict[tuple[int, int], str]]:
    """The 2x2 design from four results given in the order A0B0, A0B1, A1B0, A1B1."""
    if len(results) != 4:
        raise ConfigError(f"2x2 design: expected 4 results (A0B0 A0B1 A1B0 A1B1), got {len(results)}")
    check_same_trials(results)
    cells = [(0, 0), (0, 1), (1, 0), (1, 1)]
    counts = {c: (r.overall().successes, r.overall().trials) for c, r in zip(cells, results, strict=True)}
    labels = {c: r.policy for c, r in zip(cells, results, strict=True)}
    return factorial_effects(counts, names, confidence), labels
