"""Statistics of success rates: Wilson score intervals, paired comparisons, 2x2 effects.

Conventions: every interval is two-sided at ``confidence`` (default 0.95); rates and differences
are fractions in [0, 1] / [-1, 1], never percent.

- ``wilson``: the Wilson score interval of one success rate (Wilson 1927), as
  ``statsmodels.stats.proportion.proportion_confint(method="wilson")``; exactly 0 (1) at the
  lower (upper) end when there are no successes (failures).
- ``paired_comparison``: two policies on the *same* trials. The difference of success rates with
  Newcombe's hybrid score interval for paired proportions (Newcombe 1998, method 10: Wilson
  intervals of both margins, combined with the 2x2 table's phi correlation, continuity-corrected
  as Newcombe does: ad - bc is shrunk toward 0 by n/2 when positive), and the exact
  McNemar test (two-sided binomial test of the discordant pairs, p = 1/2).
- ``contrast``: a linear combination of success rates of independent samples with the MOVER-Wilson
  interval (Zou & Donner 2008); for weights (1, -1) it is Newcombe's hybrid score interval of a
  difference of independent proportions.
- ``factorial_effects``: the 2x2 design (two factors, levels 0/1): each factor's main effect
  averaged over the other factor's levels, and their interaction, as MOVER-Wilson contrasts. The
  four policies are treated as independent samples; when they ran on the same trials and their
  outcomes are positively correlated (the usual case) these intervals are conservative.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from r2s2r.errors import ConfigError


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence: expected a level in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _check_counts(k: int, n: int) -> tuple[int, int]:
    if int(k) != k or int(n) != n or n < 1 or not 0 <= k <= n:
        raise ConfigError(f"success count: expected integers 0 <= k <= n with n >= 1, got k={k!r}, n={n!r}")
    return int(k), int(n)


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval (low, high) of the success rate ``k / n``."""
    k, n = _check_counts(k, n)
    z = _z(confidence)
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class Rate:
    """A success rate with its Wilson score interval."""

    successes: int
    trials: int
    low: float
    high: float
    confidence: float = 0.95

    @property
    def rate(self) -> float:
        return self.successes / self.trials

    def __str__(self) -> str:
        return f"{self.successes}/{self.trials} ({self.rate:.0%}, {_pct_interval(self.low, self.high)})"


def wilson(k: int, n: int, confidence: float = 0.95) -> Rate:
    """``Rate`` of ``k`` successes in ``n`` trials with its Wilson interval."""
    low, high = wilson_interval(k, n, confidence)
    return Rate(int(k), int(n), low, high, confidence)


def _pct_interval(low: float, high: float, signed: bool = False) -> str:
    fmt = "{:+.0f}" if signed else "{:.0f}"
    return f"[{fmt.format(100 * low)}, {fmt.format(100 * high)}]%"


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (A succeeded alone, B alone)."""
    if min(only_a, only_b) < 0 or int(only_a) != only_a or int(only_b) != only_b:
        raise ConfigError(f"McNemar: expected non-negative discordant counts, got {only_a!r}, {only_b!r}")
    n = int(only_a + only_b)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(int(min(only_a, only_b)) + 1))  # exact: P(X <= min) * 2^n
    return min(1.0, 2.0 * tail / 2**n)


@dataclass(frozen=True)
class Effect:
    """An estimated difference or contrast of success rates with its interval (fractions)."""

    estimate: float
    low: float
    high: float
    confidence: float = 0.95

    def __str__(self) -> str:
        return f"{100 * self.estimate:+.0f} pts {_pct_interval(self.low, self.high, signed=True)}"


@dataclass(frozen=True)
class PairedComparison:
    """Policy A against policy B on the same ``n`` trials: the 2x2 table of outcomes, the
    difference of success rates (A - B) with Newcombe's paired interval, and the exact McNemar
    p-value."""

    n: int
    both: int  # trials both policies succeeded on
    only_a: int
    only_b: int
    neither: int
    difference: Effect
    p_value: float


def paired_comparison(a: Sequence[bool], b: Sequence[bool], confidence: float = 0.95) -> PairedComparison:
    """Compare per-trial successes ``a`` and ``b`` of two policies on the same trials, in order."""
    if len(a) != len(b) or len(a) == 0:
        raise ConfigError(f"paired comparison: expected outcomes of the same trials, got {len(a)} and {len(b)}")
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = len(a)
    neither = n - both - only_a - only_b
    diff = newcombe_paired(both, only_a, only_b, neither, confidence)
    return PairedComparison(n, both, only_a, only_b, neither, diff, mcnemar_exact(only_a, only_b))


def newcombe_paired(both: int, only_a: int, only_b: int, neither: int, confidence: float = 0.95) -> Effect:
    """Newcombe's hybrid score interval (1998, method 10) for p_A - p_B from a paired 2x2 table."""
    counts = (both, only_a, only_b, neither)
    if any(c < 0 or int(c) != c for c in counts) or sum(counts) < 1:
        raise ConfigError(f"paired table: expected non-negative counts with a positive total, got {counts}")
    n = sum(counts)
    ka, kb = both + only_a, both + only_b
    pa, pb = ka / n, kb / n
    la, ua = wilson_interval(ka, n, confidence)
    lb, ub = wilson_interval(kb, n, confidence)
    denom = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    # Newcombe's phi with its continuity correction: ad - bc is shrunk by n/2 toward 0 when positive.
    cross = both * neither - only_a * only_b
    cross = cross - n / 2 if cross > n / 2 else min(cross, 0)
    phi = 0.0 if denom == 0 else cross / math.sqrt(denom)
    d = pa - pb
    dl = math.sqrt(max(0.0, (pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2))
    du = math.sqrt(max(0.0, (ua - pa) ** 2 - 2 * phi * (ua - pa) * (pb - lb) + (pb - lb) ** 2))
    return Effect(d, max(-1.0, d - dl), min(1.0, d + du), confidence)


def contrast(counts: Sequence[tuple[int, int]], weights: Sequence[float], confidence: float = 0.95) -> Effect:
    """sum_j w_j p_j over independent success rates p_j = k_j / n_j, with the MOVER-Wilson interval."""
    if len(counts) != len(weights) or not counts:
        raise ConfigError(f"contrast: expected one weight per rate, got {len(counts)} rates, {len(weights)} weights")
    est, lo2, hi2 = 0.0, 0.0, 0.0
    for (k, n), w in zip(counts, weights, strict=True):
        p = _check_counts(k, n)[0] / n
        low, high = wilson_interval(k, n, confidence)
        est += w * p
        ends = (w * low, w * high)
        lo2 += (w * p - min(ends)) ** 2
        hi2 += (max(ends) - w * p) ** 2
    return Effect(est, est - math.sqrt(lo2), est + math.sqrt(hi2), confidence)


# Weights of the 2x2 contrasts over the cells (A level, B level) = (0,0), (0,1), (1,0), (1,1).
_CELLS = ((0, 0), (0, 1), (1, 0), (1, 1))
_EFFECT_WEIGHTS = {
    "A": (-0.5, -0.5, 0.5, 0.5),
    "B": (-0.5, 0.5, -0.5, 0.5),
    "AxB": (1.0, -1.0, -1.0, 1.0),
}


def factorial_effects(
    cells: Mapping[tuple[int, int], tuple[int, int]],
    names: tuple[str, str] = ("A", "B"),
    confidence: float = 0.95,
) -> dict[str, Effect]:
    """Main effects and interaction of a 2x2 design from (successes, trials) per cell.

    ``cells[(a, b)]`` holds the counts of the policy with factor A at level ``a`` and B at ``b``.
    Main effect of A = mean over B of (p(1, b) - p(0, b)); interaction = (p11 - p01) - (p10 - p00),
    how much more A helps with B at level 1 than at level 0. Keys: the two names and
    ``"<A> x <B>"``.
    """
    if set(cells) != set(_CELLS):
        raise ConfigError(f"2x2 design: expected cells {list(_CELLS)}, got {sorted(cells)}")
    counts = [cells[c] for c in _CELLS]
    labels = {"A": names[0], "B": names[1], "AxB": f"{names[0]} x {names[1]}"}
    return {labels[key]: contrast(counts, w, confidence) for key, w in _EFFECT_WEIGHTS.items()}
