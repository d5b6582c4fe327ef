"""Study designs as data: which policies to train (real demos, sim datasets, ratio) and how to compare them.

A design names policies. Each policy trains on the real demonstrations (all of them, or the first
``n_real``) and zero or more simulated datasets, one per grounding configuration
(``SimConfig``: world x behaviour, each grounded or ungrounded). A design may declare a 2x2
factorial layout (four policy names in the order A0B0, A0B1, A1B0, A1B1) for main effects and the
interaction, and a baseline every other policy is compared with trial by trial.

The registry ``DESIGNS`` holds the study's design and the other designs the paper mentions (the
diagnostic 10-real policy, a co-training ratio sweep); a new design is one more entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r.errors import ConfigError, UnknownNameError

LEVELS = ("grounded", "ungrounded")


@dataclass(frozen=True)
class SimConfig:
    """One grounding configuration of simulated data: the world and the behaviour, each grounded or not."""

    world: str
    behavior: str

    def __post_init__(self) -> None:
        for field, value in (("world", self.world), ("behavior", self.behavior)):
            if value not in LEVELS:
                raise UnknownNameError(f"{field} grounding", value, LEVELS)

    @property
    def name(self) -> str:
        """Short name, e.g. ``gw-ub`` (grounded world, ungrounded behaviour): folder and table label."""
        return f"{self.world[0]}w-{self.behavior[0]}b"

    @property
    def label(self) -> str:
        return f"{self.world} world + {self.behavior} behaviour"


GW_GB, GW_UB = SimConfig("grounded", "grounded"), SimConfig("grounded", "ungrounded")
UW_GB, UW_UB = SimConfig("ungrounded", "grounded"), SimConfig("ungrounded", "ungrounded")
ALL_CONFIGS = (GW_GB, GW_UB, UW_GB, UW_UB)


@dataclass(frozen=True)
class PolicySpec:
    """A policy to train and evaluate.

    ``n_real``: how many real demonstrations (None: the profile's count). ``ratio``: the real share
    of every batch when there are sim datasets (None: the profile's ratio)."""

    name: str
    sims: tuple[SimConfig, ...] = ()
    n_real: int | None = None
    ratio: float | None = None

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "-_+" for c in self.name):
            raise ConfigError(f"policy name {self.name!r}: expected letters, digits, '-', '_' or '+'")
        if self.n_real is not None and self.n_real < 1:
            raise ConfigError(f"policy {self.name}: n_real expected >= 1, got {self.n_real}")
        if self.ratio is not None and not 0 < self.ratio <= 1:
            raise ConfigError(f"policy {self.name}: ratio expected in (0, 1], got {self.ratio}")


@dataclass(frozen=True)
class Design:
    """Policies, the baseline they are compared with, and an optional 2x2 layout."""

    summary: str
    policies: tuple[PolicySpec, ...]
    baseline: str
    factors: tuple[str, str] | None = None  # names of factors A and B
    cells: tuple[str, str, str, str] | None = None  # policy names at A0B0, A0B1, A1B0, A1B1

    def __post_init__(self) -> None:
        names = [p.name for p in self.policies]
        if len(set(names)) != len(names):
            raise ConfigError(f"design: policy names must be unique, got {names}")
        if self.baseline not in names:
            raise ConfigError(f"design: baseline {self.baseline!r} is not one of its policies {names}")
        if (self.factors is None) != (self.cells is None):
            raise ConfigError("design: a 2x2 layout needs both factors and cells")
        for c in self.cells or ():
            if c not in names:
                raise ConfigError(f"design: 2x2 cell {c!r} is not one of its policies {names}")

    def policy(self, name: str) -> PolicySpec:
        return next(p for p in self.policies if p.name == name)

    @property
    def sim_configs(self) -> tuple[SimConfig, ...]:
        """The grounding configurations any policy uses, in first-use order."""
        seen: dict[SimConfig, None] = {}
        for p in self.policies:
            seen.update(dict.fromkeys(p.sims))
        return tuple(seen)


def _cotrained(cfg: SimConfig, **kw) -> PolicySpec:
    return PolicySpec(f"real+{cfg.name}", (cfg,), **kw)


DESIGNS: dict[str, Design] = {
    "grounding": Design(
        "the study's 2x2: real-only and co-trained with each grounding configuration (same real demos, "
        "same sim count, same ratio)",
        (PolicySpec("real-only"), *(_cotrained(c) for c in ALL_CONFIGS)),
        baseline="real-only",
        factors=("world grounding", "behaviour grounding"),
        # level 0 = ungrounded, level 1 = grounded: A0B0 = uw-ub, A0B1 = uw-gb, A1B0 = gw-ub, A1B1 = gw-gb
        cells=("real+uw-ub", "real+uw-gb", "real+gw-ub", "real+gw-gb"),
    ),
    "diagnostic": Design(
        "the paper's diagnostic policy: 10 real demonstrations + fully ungrounded sim, against 10 real alone",
        (PolicySpec("real10-only", n_real=10), PolicySpec("real10+uw-ub", (UW_UB,), n_real=10)),
        baseline="real10-only",
    ),
    "ratio": Design(
        "co-training ratio sweep with fully grounded sim: real share 0.25, 0.5, 0.75 of every batch",
        (
            PolicySpec("real-only"),
            *(PolicySpec(f"real{int(r * 100)}+gw-gb", (GW_GB,), ratio=r) for r in (0.25, 0.5, 0.75)),
        ),
        baseline="real-only",
    ),
}


def get_design(name: str) -> Design:
    """The design called ``name``; an unknown name raises UnknownNameError with a "did you mean" hint."""
    if name not in DESIGNS:
        raise UnknownNameError("study design", name, tuple(DESIGNS))
    return DESIGNS[name]
