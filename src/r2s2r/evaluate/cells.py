"""Where an evaluation's trials run: the lab twin of a seed, or a simulated world.

Each is a small frozen (picklable) value the lab pool sends to its worker processes; ``build``
makes one cell (a ``TrialCell``) per slot, ``describe`` is what ``results.json`` records of it.
Either way the trial list is the lab's (``make_trials(lab, plan)``): a simulated evaluation runs
the very trials (conditions, objects, belt speeds, seeds) the lab ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from r2s2r.lab.real_cell import TrialCell
from r2s2r.world.cell import CellConfig
from r2s2r.world.params import WorldParams


@dataclass(frozen=True)
class LabCell:
    """The lab twin drawn from ``seed``."""

    seed: int

    def build(self, config: CellConfig) -> TrialCell:
        from r2s2r.lab.twin import LabTwin

        return LabTwin(self.seed, config)

    def describe(self) -> dict:
        return {"kind": "lab", "lab": self.seed}


@dataclass(frozen=True)
class WorldCell:
    """A simulated world (``SimulatedCell``) of ``params``, read from ``path``; ``shadows``: rendered
    with ``SHADOWED_RENDER`` (shadows and anti-aliasing, as the photometric calibration fitted the
    lighting) instead of the file's own render settings (a calibration writes lean ones)."""

    params: WorldParams
    path: str
    shadows: bool = False

    @classmethod
    def load(cls, path: str | Path, option: str | None = "--world", shadows: bool = False) -> WorldCell:
        """The world of a WorldParams JSON file (grounded or not); a missing, unreadable or invalid
        file raises an R2S2RError naming it (and ``option``)."""
        return cls(WorldParams.load(path, option, shadows), str(path), shadows)

    def build(self, config: CellConfig) -> TrialCell:
        from r2s2r.lab.simulated_cell import SimulatedCell

        return SimulatedCell(self.params, config)

    def describe(self) -> dict:
        # world_hash: of the params as rendered (with ``shadows``, not the file's own hash)
        return {"kind": "world", "world": self.path, "world_hash": self.params.content_hash(), "shadows": self.shadows}


EvalCell = LabCell | WorldCell
