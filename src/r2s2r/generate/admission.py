"""Admission statistics: run a behaviour for a number of attempts, count what the judge admits and why
the rest failed, and store the admitted episodes in a dataset.

Attempt ``k`` of a run with seed ``s`` draws its condition and every choice from ``(s, k)`` only,
so a run is reproducible attempt by attempt and the dataset's provenance ``key`` is ``k``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from r2s2r.data import DatasetWriter
from r2s2r.errors import ConfigError
from r2s2r.generate.rollout import Behavior, RolloutResult, rollout
from r2s2r.world.cell import SimCell
from r2s2r.world.conditions import sample_condition


@dataclass
class AdmissionStats:
    """Attempts, admitted episodes and failure reasons (judge's or ``plan:<reason>``) of a run."""

    attempts: int = 0
    admitted: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # wall time of the attempts (reset, plan, physics, rendering, recording)

    @property
    def rate(self) -> float:
        return self.admitted / self.attempts if self.attempts else 0.0

    def count(self, result: RolloutResult) -> None:
        self.attempts += 1
        self.seconds += sum(result.seconds.values())
        if result.success:
            self.admitted += 1
        else:
            self.failures[result.failure] = self.failures.get(result.failure, 0) + 1

    def summary(self) -> str:
        fails = ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items())) or "none"
        return f"{self.admitted}/{self.attempts} admitted ({self.rate:.0%}); failures: {fails}"


def attempt_rng(seed: int, key: int) -> np.random.Generator:
    return np.random.default_rng([seed, key, 0xAD1])


def run_attempts(
    cell: SimCell,
    behavior: Behavior,
    condition_kind: str,
    attempts: int,
    seed: int,
    writer: DatasetWriter | None = None,
    on_attempt: Callable[[int, RolloutResult, AdmissionStats], None] | None = None,
) -> AdmissionStats:
    """``attempts`` rollouts of ``behavior`` in ``cell`` under ``condition_kind`` conditions; admitted
    episodes go to ``writer`` (keys already stored there are skipped, so a rerun resumes)."""
    if attempts < 0:
        raise ConfigError(f"attempts: expected >= 0, got {attempts}")
    stats = AdmissionStats()
    done = writer.keys() if writer is not None else set()
    for k in range(attempts):
        if k in done:
            continue
        rng = attempt_rng(seed, k)
        condition = sample_condition(condition_kind, rng)
        res = rollout(cell, behavior, condition, rng, {"seed": seed, "key": k})
        stats.count(res)
        if res.success and writer is not None:
            writer.add(res.episode)
        if on_attempt is not None:
            on_attempt(k, res, stats)
    return stats
