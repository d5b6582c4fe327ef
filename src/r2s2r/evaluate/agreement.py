"""Does the simulator rank policies the way the lab does? Sim-vs-lab agreement, SIMPLER-style.

Every policy ``i`` is evaluated on the *same* trial list in the lab (success rate ``R_i``) and in a
simulated world (``S_i``). Across the ``N`` policies (Li et al. 2024, "Evaluating Real-World Robot
Manipulation Policies in Simulation", SIMPLER):

- ``pearson``: Pearson's r of ``S`` against ``R``. Undefined when ``S`` or ``R`` is constant (zero
  variance: every policy scored the same there): r is then NaN, and ``pearson_note`` says why.
- ``mmrv``: the Mean Maximum Rank Violation, exactly as SIMPLER defines it, with strict comparisons::

      MMRV = (1/N) sum_i max_j |R_i - R_j| * 1[(S_i > S_j) != (R_i > R_j)]

  0 when the simulator orders every pair as the lab does; a pair the lab ties (``R_i == R_j``)
  never counts (its gap is 0); a pair the lab orders but the sim ties counts once, for the policy
  the lab ranks higher. Lower is better; at most the largest lab gap.
- ``paired_agreement``: per trial of one policy, how often the sim outcome equals the lab outcome.
- ``agreement``: all of the above for a set of (sim, lab) result pairs, with bootstrap percentile
  intervals for r and MMRV: trials are resampled (with replacement) *jointly*, the same trial
  indices for the sim and the lab of every policy, from a generator seeded by ``seed``.

Rates are fractions in [0, 1]. All results of one agreement must share one trial list (same
digest), so trial ``k`` is the same condition, object, belt speed and seed everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.evaluate.results import EvalResults


@dataclass(frozen=True)
class Interval:
    """A bootstrap percentile interval; ``defined`` counts the resamples where the statistic was
    defined (r is undefined on a resample where a vector is constant); NaN ends when none was."""

    low: float
    high: float
    confidence: float
    defined: int
    resamples: int

    def __str__(self) -> str:
        return f"[{self.low:.2f}, {self.high:.2f}]"


@dataclass(frozen=True)
class TrialAgreement:
    """One policy's outcomes, trial by trial, in the sim and in the lab."""

    policy: str
    both_success: int
    both_failure: int
    sim_only: int  # success in the sim, failure in the lab
    lab_only: int  # failure in the sim, success in the lab

    @property
    def trials(self) -> int:
        return self.both_success + self.both_failure + self.sim_only + self.lab_only

    @property
    def same(self) -> int:
        return self.both_success + self.both_failure

    @property
    def rate(self) -> float:
        """Fraction of trials whose sim outcome equals the lab outcome."""
        return self.same / self.trials


@dataclass(frozen=True)
class Agreement:
    """Sim-vs-lab agreement across ``policies`` (success rates in policy order)."""

    policies: tuple[str, ...]
    sim: tuple[float, ...]
    lab: tuple[float, ...]
    pearson: float  # NaN when undefined (see ``pearson_note``)
    pearson_note: str | None
    pearson_interval: Interval
    mmrv: float
    mmrv_interval: Interval
    per_trial: tuple[TrialAgreement, ...]
    trial_list: str  # the shared trial list's digest
    seed: int


def _vectors(sim: Sequence[float], lab: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    s, r = np.asarray(sim, dtype=float), np.asarray(lab, dtype=float)
    if s.ndim != 1 or s.shape != r.shape:
        raise ConfigError(f"agreement: expected one sim and one lab success rate per policy, got {s.shape}, {r.shape}")
    if len(s) < 2:
        raise ConfigError(f"agreement: expected at least two policies to rank, got {len(s)}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(r))):
        raise ConfigError("agreement: expected finite success rates")
    return s, r


def _pearson_rows(s: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Pearson r along the last axis; NaN where either row is constant."""
    ds = s - s.mean(axis=-1, keepdims=True)
    dr = r - r.mean(axis=-1, keepdims=True)
    ss, rr = (ds * ds).sum(axis=-1), (dr * dr).sum(axis=-1)
    constant = (np.ptp(s, axis=-1) == 0) | (np.ptp(r, axis=-1) == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (ds * dr).sum(axis=-1) / np.sqrt(ss * rr)
    return np.where(constant, np.nan, np.clip(out, -1.0, 1.0))


def _mmrv_rows(s: np.ndarray, r: np.ndarray) -> np.ndarray:
    """MMRV along the last axis (policies), strict comparisons."""
    gap = np.abs(r[..., :, None] - r[..., None, :])
    violated = (s[..., :, None] > s[..., None, :]) != (r[..., :, None] > r[..., None, :])
    return (gap * violated).max(axis=-1).mean(axis=-1)


def pearson(sim: Sequence[float], lab: Sequence[float]) -> float:
    """Pearson's r of sim against lab success rates across policies; NaN when either is constant."""
    s, r = _vectors(sim, lab)
    return float(_pearson_rows(s, r))


def pearson_note(sim: Sequence[float], lab: Sequence[float]) -> str | None:
    """Why ``pearson`` is undefined (NaN) for these rates, or None when it is defined."""
    s, r = _vectors(sim, lab)
    constant = [name for name, v in (("sim", s), ("lab", r)) if np.ptp(v) == 0]
    if not constant:
        return None
    which = " and ".join(constant)
    return f"Pearson r undefined: every policy has the same {which} success rate (zero variance)"


def mmrv(sim: Sequence[float], lab: Sequence[float]) -> float:
    """SIMPLER's Mean Maximum Rank Violation of sim rates ``sim`` against lab rates ``lab``."""
    s, r = _vectors(sim, lab)
    return float(_mmrv_rows(s, r))


def check_paired(sim: EvalResults, lab: EvalResults) -> None:
    """Raise unless ``sim`` and ``lab`` ran the same trial list (same trials, same order)."""
    if sim.trials != lab.trials or sim.trials.digest() != lab.trials.digest():
        raise ConfigError(
            f"sim results of {sim.policy!r} (trial list {sim.trials.digest()}, lab {sim.lab}) and lab results of "
            f"{lab.policy!r} (trial list {lab.trials.digest()}, lab {lab.lab}) ran different trials; agreement "
            "needs the same trial list (evaluate the world with the lab's --lab and the same trial plan)"
        )


def paired_agreement(sim: EvalResults, lab: EvalResults) -> TrialAgreement:
    """Trial by trial, how the sim outcome of a policy compares with its lab outcome."""
    check_paired(sim, lab)
    s, r = np.array(sim.successes(), dtype=bool), np.array(lab.successes(), dtype=bool)
    return TrialAgreement(
        policy=lab.policy,
        both_success=int(np.sum(s & r)),
        both_failure=int(np.sum(~s & ~r)),
        sim_only=int(np.sum(s & ~r)),
        lab_only=int(np.sum(~s & r)),
    )


def _interval(values: np.ndarray, confidence: float) -> Interval:
    ok = values[np.isfinite(values)]
    if ok.size:
        low, high = (float(v) for v in np.quantile(ok, [(1 - confidence) / 2, (1 + confidence) / 2]))
    else:
        low = high = float("nan")
    return Interval(low, high, confidence, int(ok.size), int(values.size))


def bootstrap(
    sim: np.ndarray, lab: np.ndarray, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[Interval, Interval]:
    """Percentile intervals of (Pearson r, MMRV) from per-trial outcomes ``sim`` and ``lab``, each
    (policies, trials) of 0/1: every resample draws trial indices with replacement once and uses
    them for the sim and the lab of every policy. Same inputs and seed, same intervals."""
    s, r = np.asarray(sim, dtype=float), np.asarray(lab, dtype=float)
    if s.ndim != 2 or s.shape != r.shape or s.shape[0] < 2 or s.shape[1] < 1:
        raise ConfigError(
            f"bootstrap: expected sim and lab outcomes of the same shape (policies >= 2, trials >= 1), "
            f"got {s.shape} and {r.shape}"
        )
    if not isinstance(resamples, int) or resamples < 1:
        raise ConfigError(f"bootstrap: expected a positive number of resamples, got {resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"bootstrap: expected a confidence level in (0, 1), got {confidence!r}")
    n = s.shape[1]
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.arange(resamples)[:, None], idx), 1.0)  # how often each trial was drawn
    s_b, r_b = counts @ s.T / n, counts @ r.T / n  # (resamples, policies) success rates
    return _interval(_pearson_rows(s_b, r_b), confidence), _interval(_mmrv_rows(s_b, r_b), confidence)


def agreement(
    pairs: Sequence[tuple[EvalResults, EvalResults]],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Agreement:
    """Agreement of a simulated world with the lab over policies given as (sim, lab) result pairs,
    each pair one policy's evaluations on the same trial list (shared by every pair)."""
    if len(pairs) < 2:
        raise ConfigError(f"agreement: expected (sim, lab) results of at least two policies, got {len(pairs)}")
    per_trial = tuple(paired_agreement(sim, lab) for sim, lab in pairs)
    digests = {lab.trials.digest() for _sim, lab in pairs}
    if len(digests) != 1:
        raise ConfigError(
            f"agreement: expected every policy on one trial list, got trial lists {sorted(digests)}; "
            "evaluate every policy with the same --lab and trial plan"
        )
    s = np.array([sim.successes() for sim, _lab in pairs], dtype=float)
    r = np.array([lab.successes() for _sim, lab in pairs], dtype=float)
    sim_rates, lab_rates = s.mean(axis=1), r.mean(axis=1)
    r_int, m_int = bootstrap(s, r, resamples, confidence, seed)
    return Agreement(
        policies=tuple(lab.policy for _sim, lab in pairs),
        sim=tuple(float(v) for v in sim_rates),
        lab=tuple(float(v) for v in lab_rates),
        pearson=pearson(sim_rates, lab_rates),
        pearson_note=pearson_note(sim_rates, lab_rates),
        pearson_interval=r_int,
        mmrv=mmrv(sim_rates, lab_rates),
        mmrv_interval=m_int,
        per_trial=per_trial,
        trial_list=digests.pop(),
        seed=seed,
    )
