"""Object masses: weigh every catalog object on the lab's scale.

Each object is weighed ``repeats`` times (the scale shows 0.1 g); the mean is its mass and the
spread of the readings is reported. Masses in kg (reported spreads in g).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.lab.real_cell import RealCell
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import WorldParams


@dataclass(frozen=True)
class MassConfig:
    repeats: int = 3
    max_spread: float = 0.002  # kg between readings of one object beyond which the scale is suspect
    plausible: tuple[float, float] = (0.005, 2.0)  # kg, the range WorldParams accepts

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise ConfigError(f"mass repeats: expected >= 1, got {self.repeats}")


@dataclass(frozen=True)
class ObjectMasses:
    """Measured mass (kg) and reading spread (g, max - min) of each weighed object, by name."""

    masses: tuple[tuple[str, float], ...]
    spread_g: tuple[tuple[str, float], ...]

    def mass(self, name: str) -> float:
        return dict(self.masses)[name]

    def apply_to(self, params: WorldParams) -> WorldParams:
        """``params`` with the measured masses (objects not weighed keep theirs)."""
        measured = dict(self.masses)
        objects = tuple(dataclasses.replace(o, mass=measured.get(o.name, o.mass)) for o in params.objects)
        return params.replace(objects=objects)

    def report(self) -> dict[str, float]:
        return {"mass_max_spread_g": max(s for _, s in self.spread_g)}


def measure_masses(
    lab: RealCell, names: tuple[str, ...] | None = None, config: MassConfig = MassConfig()
) -> ObjectMasses:
    """Weigh ``names`` (default: the whole catalog) ``config.repeats`` times each."""
    names = tuple(CATALOG) if names is None else tuple(names)
    lo, hi = config.plausible
    masses, spreads = [], []
    for name in names:
        readings = np.array([lab.weigh(name) for _ in range(config.repeats)], float)
        spread = float(readings.max() - readings.min())
        mass = float(readings.mean())
        if not lo < mass < hi or spread > config.max_spread:
            raise R2S2RError(
                f"masses: {name} reads {np.round(readings * 1000, 1).tolist()} g; expected a steady reading "
                f"(spread <= {config.max_spread * 1000:.0f} g) between {lo * 1000:.0f} g and {hi * 1000:.0f} g"
            )
        masses.append((name, mass))
        spreads.append((name, 1000 * spread))
    return ObjectMasses(tuple(masses), tuple(spreads))
