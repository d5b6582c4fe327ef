"""Sim-vs-lab agreement: Pearson r, SIMPLER's MMRV, paired per-trial agreement, bootstrap intervals."""

import io
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from r2s2r.errors import R2S2RError
from r2s2r.evaluate.agreement import (
    agreement,
    bootstrap,
    check_paired,
    mmrv,
    paired_agreement,
    pearson,
    pearson_note,
)
from r2s2r.evaluate.agreement_report import agreement_figure, agreement_table, write_agreement
from r2s2r.evaluate.results import EvalResults, TrialOutcome
from r2s2r.evaluate.trials import TrialPlan, make_trials

R3 = (0.2, 0.5, 0.9)  # lab success rates of three policies


def test_perfect_agreement_has_mmrv_zero_and_r_one():
    sim = [0.5 * r + 0.1 for r in R3]  # a linear function of the lab rates
    assert mmrv(sim, R3) == 0.0
    assert pearson(sim, R3) == pytest.approx(1.0, abs=1e-12)
    assert pearson_note(sim, R3) is None
    # Same order without a linear relation: no rank violation, r below 1.
    assert mmrv([0.1, 0.3, 0.4], R3) == 0.0
    assert 0.9 < pearson([0.1, 0.3, 0.4], R3) < 1.0


def test_a_full_inversion():
    # S = 1.1 - R reverses every pair. Violations per policy i (max over j of |R_i - R_j|):
    # i=0: j=1 gap 0.3, j=2 gap 0.7 -> 0.7; i=1: j=0 0.3, j=2 0.4 -> 0.4; i=2: j=0 0.7, j=1 0.4 -> 0.7.
    # MMRV = (0.7 + 0.4 + 0.7) / 3 = 0.6.
    sim = [0.9, 0.6, 0.2]
    assert mmrv(sim, R3) == pytest.approx(0.6)
    assert pearson(sim, R3) == pytest.approx(-1.0, abs=1e-12)


def test_ties_use_strict_comparisons():
    # R = (0.5, 0.5, 0.8), S = (0.3, 0.6, 0.6).
    # Pair (0, 1): the lab ties them -> gap 0, never counts (though the sim orders them).
    # Pair (0, 2): S0 < S2 and R0 < R2 -> agree.
    # Pair (1, 2): the sim ties them, the lab has R2 > R1. For i=1: (S1 > S2) = F, (R1 > R2) = F -> no
    # violation; for i=2: (S2 > S1) = F, (R2 > R1) = T -> violation, gap 0.3.
    # MMRV = (0 + 0 + 0.3) / 3 = 0.1.
    assert mmrv([0.3, 0.6, 0.6], [0.5, 0.5, 0.8]) == pytest.approx(0.1)
    # A sim that ties every policy violates each pair the lab orders once (for the higher one):
    # R3: i=1 max(0.3) -> 0.3, i=2 max(0.7, 0.4) -> 0.7, i=0 nothing -> MMRV = 1.0 / 3.
    assert mmrv([0.4, 0.4, 0.4], R3) == pytest.approx(1.0 / 3)
    # A lab that ties every policy leaves nothing to violate.
    assert mmrv([0.1, 0.9, 0.5], [0.6, 0.6, 0.6]) == 0.0


def test_a_worked_example():
    # R = (0.1, 0.4, 0.6, 0.9), S = (0.2, 0.5, 0.3, 0.7): the sim swaps policies 1 and 2 only.
    # MMRV: i=1 (S1 > S2 but R1 < R2) gap 0.2; i=2 gap 0.2; others 0 -> (0 + 0.2 + 0.2 + 0) / 4 = 0.1.
    # Pearson: mean R 0.5, mean S 0.425; dR = (-0.4, -0.1, 0.1, 0.4), dS = (-0.225, 0.075, -0.125, 0.275);
    # sum dR dS = 0.09 - 0.0075 - 0.0125 + 0.11 = 0.18; sum dR^2 = 0.34; sum dS^2 = 0.1475;
    # r = 0.18 / sqrt(0.34 * 0.1475) = 0.18 / 0.2239420 = 0.803780.
    sim, lab = [0.2, 0.5, 0.3, 0.7], [0.1, 0.4, 0.6, 0.9]
    assert mmrv(sim, lab) == pytest.approx(0.1)
    assert pearson(sim, lab) == pytest.approx(0.803780, abs=1e-6)
    assert pearson(sim, lab) == pytest.approx(np.corrcoef(sim, lab)[0, 1])


def test_pearson_is_nan_with_a_reason_when_a_vector_is_constant():
    assert math.isnan(pearson([0.3, 0.3, 0.3], R3))
    assert "same sim success rate" in pearson_note([0.3, 0.3, 0.3], R3)
    assert math.isnan(pearson(R3, [0.0, 0.0, 0.0]))
    assert "same lab success rate" in pearson_note(R3, [0.0, 0.0, 0.0])
    assert "sim and lab" in pearson_note([1.0, 1.0], [0.0, 0.0])


def test_bad_rate_vectors_are_refused():
    with pytest.raises(R2S2RError, match="one sim and one lab"):
        mmrv([0.1, 0.2], [0.1, 0.2, 0.3])
    with pytest.raises(R2S2RError, match="at least two policies"):
        pearson([0.1], [0.2])
    with pytest.raises(R2S2RError, match="finite"):
        mmrv([0.1, float("nan")], [0.1, 0.2])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=2, max_size=8), st.sampled_from(["square", "affine", "log"]))
def test_mmrv_is_zero_when_the_sim_is_an_increasing_function_of_the_lab(counts, f):
    lab = np.array(counts) / 50
    sim = {"square": lab**2, "affine": 0.3 * lab + 0.2, "log": np.log1p(lab)}[f]
    assert mmrv(sim, lab) == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=2, max_size=8))
def test_mmrv_lies_between_zero_and_the_largest_lab_gap(pairs):
    sim, lab = (np.array(v) / 20 for v in zip(*pairs, strict=True))
    value = mmrv(sim, lab)
    assert 0.0 <= value <= np.ptp(lab) + 1e-12
    assert mmrv(lab, lab) == 0.0
    r = pearson(sim, lab)
    assert math.isnan(r) == (np.ptp(sim) == 0 or np.ptp(lab) == 0)
    assert math.isnan(r) or -1.0 <= r <= 1.0


# --- results of evaluations -------------------------------------------------------------------
PLAN = TrialPlan(nominal=6, lighting=2, belt_speed=0, novel_object=0, combined=0)


def _results(policy: str, wins: list[bool], lab: int = 0) -> EvalResults:
    """Results of ``policy`` on lab ``lab``'s trial list with the given successes."""
    trials = make_trials(lab, PLAN)
    outcomes = tuple(
        TrialOutcome(t.index, t.kind, w, None if w else "missed", 10, 1.0, w, w, {}, "0" * 16, 0.0, 0.0)
        for t, w in zip(trials, wins, strict=True)
    )
    return EvalResults(policy, lab, {}, trials, outcomes)


def test_paired_agreement_counts_trial_by_trial():
    sim = _results("a", [True, True, False, False, True, False, True, False])
    lab = _results("a", [True, False, False, True, True, False, False, False])
    pa = paired_agreement(sim, lab)
    assert (pa.both_success, pa.both_failure, pa.sim_only, pa.lab_only) == (2, 3, 2, 1)
    assert pa.trials == 8 and pa.same == 5 and pa.rate == pytest.approx(5 / 8)


def test_results_of_different_trial_lists_are_refused():
    wins = [True] * 8
    with pytest.raises(R2S2RError, match="different trials"):
        paired_agreement(_results("a", wins, lab=0), _results("a", wins, lab=1))
    check_paired(_results("a", wins), _results("b", wins))  # same list: accepted
    pairs = [(_results("a", wins, 0), _results("a", wins, 0)), (_results("b", wins, 1), _results("b", wins, 1))]
    with pytest.raises(R2S2RError, match="one trial list"):
        agreement(pairs)


WINS = {  # policy -> (sim, lab) per-trial outcomes on PLAN's 8 trials
    "weak": ("10000000", "10000000"),
    "mid": ("11100000", "11010100"),
    "good": ("11110110", "11111011"),
}


def _pairs():
    def flags(text):
        return [c == "1" for c in text]

    return [(_results(p, flags(s)), _results(p, flags(r))) for p, (s, r) in WINS.items()]


def test_agreement_of_a_set_of_policies():
    a = agreement(_pairs(), resamples=500, seed=3)
    assert a.policies == ("weak", "mid", "good")
    assert a.sim == pytest.approx((1 / 8, 3 / 8, 6 / 8)) and a.lab == pytest.approx((1 / 8, 4 / 8, 7 / 8))
    assert a.mmrv == 0.0 and a.pearson == pytest.approx(pearson(a.sim, a.lab)) and a.pearson > 0.95
    assert [t.rate for t in a.per_trial] == pytest.approx([1.0, 5 / 8, 5 / 8])
    assert a.trial_list == make_trials(0, PLAN).digest()
    for interval, point in ((a.pearson_interval, a.pearson), (a.mmrv_interval, a.mmrv)):
        assert interval.low <= point <= interval.high
        assert interval.resamples == 500 and 0 < interval.defined <= 500
    assert a.mmrv_interval.high > 0  # some resamples swap the close policies
    assert a.mmrv_interval.defined == 500


def test_bootstrap_is_deterministic_per_seed_and_resamples_trials_jointly():
    s = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]])
    first = bootstrap(s, s, resamples=300, seed=7)
    assert bootstrap(s, s, resamples=300, seed=7) == first
    assert bootstrap(s, s, resamples=300, seed=8) != first
    # Sim = lab per trial: the same indices for both, so every resample agrees perfectly.
    r_int, m_int = first
    assert (m_int.low, m_int.high) == (0.0, 0.0)
    assert r_int.low == pytest.approx(1.0) and r_int.high == pytest.approx(1.0)
    # Resamples where every policy scores the same leave r undefined: they are not counted.
    flat = np.array([[1, 0], [1, 0]])
    r_flat, _ = bootstrap(flat, np.array([[1, 0], [0, 1]]), resamples=100, seed=0)
    assert r_flat.defined == 0 and math.isnan(r_flat.low)
    with pytest.raises(R2S2RError, match="same shape"):
        bootstrap(s, s[:, :2])


def test_the_agreement_table_and_figure(tmp_path):
    lab = [lab for _sim, lab in _pairs()]
    grounded = [sim for sim, _lab in _pairs()]
    flat = [_results(p, [True, False] * 4) for p in WINS]  # every policy 4/8: r undefined
    table = agreement_table(lab, {"grounded": grounded, "flat": list(reversed(flat))}, resamples=200, seed=1)
    assert table.policies == ("weak", "mid", "good")
    assert [r.successes for r in table.lab] == [1, 4, 7]
    assert [r.successes for r in table.sims["grounded"]] == [1, 3, 6]
    assert table.agreements["grounded"] == agreement(_pairs(), resamples=200, seed=1)
    flat_agreement = table.agreements["flat"]
    assert math.isnan(flat_agreement.pearson) and flat_agreement.pearson_note
    # The flat world ties every policy: each lab-ordered pair counts once, for the higher policy:
    # weak 0, mid max(3/8) , good max(6/8, 3/8) -> (3/8 + 6/8) / 3 = 0.375.
    assert flat_agreement.mmrv == pytest.approx(0.375)

    paths = write_agreement(tmp_path / "agreement", table)
    text = paths["table"].read_text()
    assert "| policy | lab | grounded | flat |" in text
    assert "| weak | 1/8 (12%) | 1/8 (12%) | 4/8 (50%) |" in text
    assert "| flat | undefined | undefined | 0.375 |" in text and "flat: Pearson r undefined" in text
    saved = json.loads(paths["json"].read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert saved["agreements"]["flat"]["pearson"] is None
    assert saved["agreements"]["grounded"]["mmrv"] == 0.0 and saved["policies"] == ["weak", "mid", "good"]
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a panel per world: two worlds draw wider than one (measured 1.47 x: the axis labels are shared), as high
    one = agreement_table(lab, {"grounded": grounded}, resamples=200, seed=1)
    sizes = [Image.open(io.BytesIO(agreement_figure(t.to_json()))).size for t in (one, table)]
    assert 1.3 < sizes[1][0] / sizes[0][0] < 2.3 and abs(sizes[1][1] - sizes[0][1]) <= 0.1 * sizes[0][1], sizes
    assert sorted(p.name for p in (tmp_path / "agreement").iterdir()) == [
        "agreement.json",
        "agreement.md",
        "agreement.png",
    ]


def test_the_agreement_table_needs_every_lab_policy_in_every_world():
    lab = [lab for _sim, lab in _pairs()]
    with pytest.raises(R2S2RError, match="expected one result for each lab policy"):
        agreement_table(lab, {"w": [sim for sim, _lab in _pairs()][:2]})
    with pytest.raises(R2S2RError, match="at least one simulated world"):
        agreement_table(lab, {})
