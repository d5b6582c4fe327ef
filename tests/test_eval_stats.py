"""Statistics of evaluation: Wilson intervals, paired comparisons, 2x2 effects (against statsmodels)."""

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from r2s2r.errors import R2S2RError
from r2s2r.evaluate.stats import (
    contrast,
    factorial_effects,
    mcnemar_exact,
    newcombe_paired,
    paired_comparison,
    wilson,
    wilson_interval,
)

GRID = [(k, n) for n in (1, 2, 3, 6, 7, 24, 26, 50, 200) for k in sorted({0, 1, n // 3, n // 2, n - 1, n})]


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_wilson_matches_statsmodels_on_a_grid_including_0_and_n(confidence):
    for k, n in GRID:
        lo, hi = wilson_interval(k, n, confidence)
        ref_lo, ref_hi = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
        assert lo == pytest.approx(ref_lo, abs=1e-12), (k, n)
        assert hi == pytest.approx(ref_hi, abs=1e-12), (k, n)
        assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert wilson_interval(0, 24)[0] == 0.0 and wilson_interval(24, 24)[1] == 1.0


def test_rate_reads_like_the_study():
    r = wilson(17, 24)
    assert (r.successes, r.trials) == (17, 24) and r.rate == pytest.approx(17 / 24)
    assert str(r) == "17/24 (71%, [51, 85]%)"


@pytest.mark.parametrize("k,n", [(-1, 5), (6, 5), (0, 0), (1.5, 3)])
def test_bad_counts_raise(k, n):
    with pytest.raises(R2S2RError, match="success count"):
        wilson_interval(k, n)
    with pytest.raises(R2S2RError, match="confidence"):
        wilson_interval(1, 2, confidence=95)


def test_exact_mcnemar_matches_statsmodels():
    for b, c in [(0, 0), (0, 1), (1, 5), (5, 1), (3, 3), (0, 12), (10, 21), (7, 2)]:
        ref = mcnemar([[4, b], [c, 6]], exact=True).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(ref, abs=1e-12)


def test_paired_interval_without_correlation_is_the_independent_newcombe_interval():
    # ad == bc makes phi = 0: the paired interval reduces to Newcombe's hybrid score interval of
    # two independent proportions with the same margins (statsmodels "newcomb").
    # Newcombe shrinks ad - bc by n/2 toward 0, so 0 <= ad - bc <= n/2 (3, 2, 2, 2) counts as well.
    for a, b, c, d in [(2, 3, 4, 6), (6, 2, 3, 1), (0, 4, 0, 9), (12, 0, 6, 0), (3, 2, 2, 2)]:
        n = a + b + c + d
        eff = newcombe_paired(a, b, c, d)
        lo, hi = confint_proportions_2indep(a + b, n, a + c, n, method="newcomb", compare="diff")
        assert eff.estimate == pytest.approx((b - c) / n)
        assert (eff.low, eff.high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


def test_positive_correlation_narrows_the_paired_interval():
    # Same margins (17/24 vs 12/24), concordant vs independent-like tables.
    corr = newcombe_paired(12, 5, 0, 7)
    indep_like = newcombe_paired(9, 8, 3, 4)
    assert corr.estimate == pytest.approx(indep_like.estimate)
    assert corr.high - corr.low < indep_like.high - indep_like.low
    assert corr.low > 0 > indep_like.low  # the paired design reveals what margins alone cannot


@pytest.mark.parametrize("cells", [(0.5, 0.2, 0.05, 0.25), (0.3, 0.1, 0.1, 0.5), (0.8, 0.1, 0.02, 0.08)])
def test_paired_interval_covers_the_true_difference(cells):
    # Coverage of the 95 % interval over simulated 50-trial paired evaluations: each trial's
    # (both, only A, only B, neither) outcome is drawn with probabilities ``cells``.
    rng = np.random.default_rng(0)
    tables = rng.multinomial(50, cells, size=2000)
    true = cells[1] - cells[2]
    hits = [(e := newcombe_paired(*t)).low <= true <= e.high for t in tables.tolist()]
    assert 0.93 <= np.mean(hits) <= 0.99


def test_paired_comparison_counts_and_test():
    a = [True] * 10 + [True] * 6 + [False] * 1 + [False] * 3
    b = [True] * 10 + [False] * 6 + [True] * 1 + [False] * 3
    cmp = paired_comparison(a, b)
    assert (cmp.n, cmp.both, cmp.only_a, cmp.only_b, cmp.neither) == (20, 10, 6, 1, 3)
    assert cmp.difference.estimate == pytest.approx(5 / 20)
    assert cmp.p_value == pytest.approx(mcnemar([[10, 6], [1, 3]], exact=True).pvalue)
    same = paired_comparison(a, a)
    assert same.difference.estimate == 0 and same.p_value == 1.0
    assert same.difference.low < 0 < same.difference.high
    with pytest.raises(R2S2RError, match="same trials"):
        paired_comparison(a, b[:-1])


def test_contrast_of_two_rates_is_newcombes_difference():
    for k1, n1, k2, n2 in [(17, 24, 12, 24), (0, 26, 5, 26), (50, 50, 31, 50), (3, 7, 6, 9)]:
        eff = contrast([(k1, n1), (k2, n2)], [1, -1])
        lo, hi = confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
        assert (eff.low, eff.high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


def test_factorial_effects_recover_main_effects_and_interaction():
    cells = {(0, 0): (10, 50), (0, 1): (20, 50), (1, 0): (30, 50), (1, 1): (45, 50)}
    eff = factorial_effects(cells, names=("world", "behavior"))
    assert set(eff) == {"world", "behavior", "world x behavior"}
    assert eff["world"].estimate == pytest.approx(((30 - 10) + (45 - 20)) / 2 / 50)
    assert eff["behavior"].estimate == pytest.approx(((20 - 10) + (45 - 30)) / 2 / 50)
    assert eff["world x behavior"].estimate == pytest.approx(((45 - 20) - (30 - 10)) / 50)
    for e in eff.values():
        assert e.low < e.estimate < e.high
    # Averaging over two cells makes a main effect's interval narrower than one simple difference.
    simple = contrast([cells[(1, 0)], cells[(0, 0)]], [1, -1])
    assert eff["world"].high - eff["world"].low < simple.high - simple.low
    assert eff["world"].low > 0  # a clear main effect is declared
    assert eff["world x behavior"].low < 0 < eff["world x behavior"].high  # a small interaction is not
    with pytest.raises(R2S2RError, match="2x2 design"):
        factorial_effects({(0, 0): (1, 2)})
