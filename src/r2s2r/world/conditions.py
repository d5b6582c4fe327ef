"""Trial conditions: nominal and the shifts (lighting, belt speed, novel object, combined).

Real demonstrations only ever use ``nominal``; simulation covers every kind. Ranges:

============== =====================================================================
kind           what is drawn
============== =====================================================================
nominal        known object; belt speed 0.05-0.10 m/s; lab lighting (scale 0.9-1.1,
               no tint, key light azimuth +-0.1 rad); lateral offset +-0.06 m;
               start 0.10-0.25 m upstream of the belt centre; yaw +-pi
lighting       as nominal, but key light scale 0.35-0.6 or 1.5-2.0, a warm or cool
               tint (channel gains 0.75-1.25) and azimuth +-1.2 rad
belt_speed     as nominal, but belt speed 0.12-0.18 m/s
novel_object   as nominal, but a novel object (other shape or size, same colours)
combined       two or three of the shifts above together
============== =====================================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.world.objects import CATALOG, KNOWN_OBJECTS, NOVEL_OBJECTS

KINDS = ("nominal", "lighting", "belt_speed", "novel_object", "combined")
NOMINAL_SPEED = (0.05, 0.10)
FAST_SPEED = (0.12, 0.18)
MAX_SPEED = 0.25
LATERAL = 0.06
START = (-0.25, -0.10)


@dataclass(frozen=True)
class Condition:
    """One trial's setup. Positions are in the belt frame (x along travel, origin at centre)."""

    kind: str
    object: str
    belt_speed: float  # commanded belt speed, m/s
    start_x: float  # object's initial position along the belt, m (negative = upstream)
    lateral: float  # object's initial offset across the belt, m
    yaw: float  # object's initial yaw about the belt normal, rad
    light_scale: float = 1.0  # key light intensity relative to lab lighting
    light_tint: tuple[float, float, float] = (1.0, 1.0, 1.0)
    light_azimuth: float = 0.0  # rotation of the key light direction about world z, rad

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UnknownNameError("condition kind", self.kind, KINDS)
        if self.object not in CATALOG:
            raise UnknownNameError("object", self.object, tuple(CATALOG))
        checks = (
            ("belt_speed", self.belt_speed, 0.0, MAX_SPEED),
            ("start_x", self.start_x, -0.5, 0.4),
            ("lateral", self.lateral, -0.1, 0.1),
            ("yaw", self.yaw, -math.pi, math.pi),
            ("light_scale", self.light_scale, 0.2, 2.5),
            ("light_azimuth", self.light_azimuth, -math.pi, math.pi),
        )
        for name, value, lo, hi in checks:
            if not (lo <= value <= hi) or not math.isfinite(value):
                raise ConfigError(f"condition.{name}: expected a value in [{lo}, {hi}], got {value!r}")
        if len(self.light_tint) != 3 or not all(0.5 <= t <= 1.5 for t in self.light_tint):
            raise ConfigError(f"condition.light_tint: expected 3 gains in [0.5, 1.5], got {self.light_tint!r}")
        if self.kind == "nominal":
            if CATALOG[self.object].novel:
                raise ConfigError(f"condition: a nominal trial uses a known object, got novel {self.object!r}")
            if not NOMINAL_SPEED[0] - 1e-9 <= self.belt_speed <= NOMINAL_SPEED[1] + 1e-9:
                raise ConfigError(
                    f"condition.belt_speed: nominal trials use {NOMINAL_SPEED} m/s, got {self.belt_speed}"
                )

    @property
    def color(self) -> str:
        return CATALOG[self.object].color


def sample_condition(kind: str, rng: np.random.Generator) -> Condition:
    """Draw a condition of ``kind`` (see the module docstring for the ranges)."""
    if kind not in KINDS:
        raise UnknownNameError("condition kind", kind, KINDS)
    base = Condition(
        kind="nominal",
        object=str(rng.choice(KNOWN_OBJECTS)),
        belt_speed=float(rng.uniform(*NOMINAL_SPEED)),
        start_x=float(rng.uniform(*START)),
        lateral=float(rng.uniform(-LATERAL, LATERAL)),
        yaw=float(rng.uniform(-math.pi, math.pi)),
        light_scale=float(rng.uniform(0.9, 1.1)),
        light_azimuth=float(rng.uniform(-0.1, 0.1)),
    )
    if kind == "nominal":
        return base
    shifts = {"lighting", "belt_speed", "novel_object"}
    if kind == "combined":
        n = int(rng.integers(2, 4))
        chosen = set(rng.choice(sorted(shifts), size=n, replace=False).tolist())
    else:
        chosen = {kind}
    changes: dict = {"kind": kind}
    if "lighting" in chosen:
        dim = rng.random() < 0.5
        changes["light_scale"] = float(rng.uniform(0.35, 0.6) if dim else rng.uniform(1.5, 2.0))
        changes["light_tint"] = tuple(float(g) for g in rng.uniform(0.75, 1.25, size=3))
        changes["light_azimuth"] = float(rng.uniform(-1.2, 1.2))
    if "belt_speed" in chosen:
        changes["belt_speed"] = float(rng.uniform(*FAST_SPEED))
    if "novel_object" in chosen:
        changes["object"] = str(rng.choice(NOVEL_OBJECTS))
    return replace(base, **changes)
