"""The trial list of a lab: a fixed, seeded set of trials every policy is evaluated on.

The study evaluates each policy on 50 trials: 24 nominal and 26 shifted, split over lighting,
belt speed, novel object and combined shifts (7/7/6/6 by default). Trial ``j`` of kind ``K``
draws its condition and its lab trial seed from ``(lab, plan seed, K, j)`` only, so the same
lab and plan give the same trials for every policy and every run, and enlarging one kind keeps
every other trial as it was. The list stores the condition values themselves.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.world.conditions import KINDS, Condition, sample_condition

_SALT = 0x7E1A15  # separates trial-list draws from every other use of the same seeds


@dataclass(frozen=True)
class TrialPlan:
    """How many trials of each condition kind, and the seed of their draw."""

    nominal: int = 24
    lighting: int = 7
    belt_speed: int = 7
    novel_object: int = 6
    combined: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        for kind in KINDS:
            n = getattr(self, kind)
            if not isinstance(n, int) or n < 0:
                raise ConfigError(f"trial plan: expected a non-negative number of {kind} trials, got {n!r}")
        if self.total < 1:
            raise ConfigError("trial plan: expected at least one trial")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"trial plan: expected a non-negative seed, got {self.seed!r}")

    @property
    def counts(self) -> dict[str, int]:
        return {kind: getattr(self, kind) for kind in KINDS}

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Trial:
    """One trial: its position in the list, its condition and the seed the lab is reset with."""

    index: int
    condition: Condition
    seed: int

    @property
    def kind(self) -> str:
        return self.condition.kind


@dataclass(frozen=True)
class TrialList:
    """The trials of one lab under one plan, in order (nominal first, then each shift)."""

    lab: int
    plan: TrialPlan
    trials: tuple[Trial, ...]

    def __len__(self) -> int:
        return len(self.trials)

    def to_json(self) -> dict:
        return {
            "lab": self.lab,
            "plan": dataclasses.asdict(self.plan),
            "trials": [{"index": t.index, "seed": t.seed, "condition": dataclasses.asdict(t.condition)} for t in self],
        }

    @classmethod
    def from_json(cls, obj: dict) -> TrialList:
        try:
            trials = tuple(
                Trial(
                    int(t["index"]),
                    Condition(**{**t["condition"], "light_tint": tuple(t["condition"]["light_tint"])}),
                    int(t["seed"]),
                )
                for t in obj["trials"]
            )
            return cls(int(obj["lab"]), TrialPlan(**obj["plan"]), trials)
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"trial list: expected lab, plan and trials with index/seed/condition ({e})") from e

    def digest(self) -> str:
        """Content hash of the list (same trials, same digest)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __iter__(self):
        return iter(self.trials)


def make_trials(lab: int, plan: TrialPlan = TrialPlan()) -> TrialList:
    """The fixed trial list of lab ``lab`` under ``plan``."""
    if not isinstance(lab, (int, np.integer)) or lab < 0:
        raise ConfigError(f"lab seed: expected a non-negative integer, got {lab!r}")
    trials = []
    for k, kind in enumerate(KINDS):
        for j in range(plan.counts[kind]):
            rng = np.random.default_rng([_SALT, int(lab), plan.seed, k, j])
            cond = sample_condition(kind, rng)
            trials.append(Trial(len(trials), cond, int(rng.integers(2**31))))
    return TrialList(int(lab), plan, tuple(trials))
