"""``ConditionMix``: which fraction of generated episodes falls under each condition kind.

One value for all four grounding configurations (so they differ only in world and behaviour),
recorded in every generated dataset's manifest. The ranges of each kind are those of
``r2s2r.world.conditions`` (nominal belt 0.05-0.10 m/s, fast belt 0.12-0.18 m/s, lighting scale
0.35-0.6 or 1.5-2.0 with tint and azimuth, novel objects, combinations of two or three shifts).
Real demonstrations are nominal only; simulation is where the shifted conditions come from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.world.conditions import KINDS, Condition, sample_condition


@dataclass(frozen=True)
class ConditionMix:
    """Fractions per condition kind (they must sum to 1)."""

    nominal: float = 0.4
    lighting: float = 0.15
    belt_speed: float = 0.15
    novel_object: float = 0.15
    combined: float = 0.15

    def __post_init__(self) -> None:
        fr = self.fractions
        bad = {k: v for k, v in fr.items() if not (math.isfinite(v) and 0.0 <= v <= 1.0)}
        if bad:
            raise ConfigError(f"condition mix: expected fractions in [0, 1], got {bad}")
        if abs(sum(fr.values()) - 1.0) > 1e-6:
            raise ConfigError(f"condition mix: expected fractions summing to 1, got {sum(fr.values()):.6f} ({fr})")

    @property
    def fractions(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in KINDS}

    def sample(self, rng: np.random.Generator) -> Condition:
        """One condition: its kind by the mix, then its values by the kind's ranges."""
        p = np.array([self.fractions[k] for k in KINDS])
        kind = KINDS[int(rng.choice(len(KINDS), p=p / p.sum()))]
        return sample_condition(kind, rng)
