"""Results of an evaluation: per-trial outcomes on a trial list, their summaries, ``results.json``.

``results.json`` holds everything a comparison needs: the policy's name, the lab, the cell the trials
ran in (the lab twin, or a simulated world: its file and content hash), the settings, the trial list
itself (conditions and seeds), and per trial: success, failure mode, duration,
the safety filter's changes, the rollout's trace hash and (optionally) its video.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from r2s2r import atomic
from r2s2r.errors import ConfigError
from r2s2r.evaluate.stats import Rate, wilson
from r2s2r.evaluate.trials import TrialList
from r2s2r.world.conditions import KINDS

SCHEMA = 1
RESULTS_FILE = "results.json"
TABLE_FILE = "results.md"


@dataclass(frozen=True)
class TrialOutcome:
    """One trial's result. ``duration`` is trial time (s); ``lab_seconds`` / ``policy_seconds`` the
    compute spent in the lab (physics, rendering, safety, judge) and in a per-trial policy."""

    index: int
    kind: str
    success: bool
    failure: str | None
    steps: int
    duration: float
    lifted: bool
    touched: bool
    safety: dict[str, int]
    trace: str
    lab_seconds: float
    policy_seconds: float
    video: str | None = None
    # chunk policies: mean over re-plans of the largest arm-joint change (rad) from the last executed
    # action to the first of the next chunk's (the jump a re-plan makes); None for trial policies
    replan_jump: float | None = None
    # chunk policies evaluated with shaping: steps whose command the shaping changed (rate or range)
    shaped: int | None = None


@dataclass(frozen=True)
class EvalResults:
    """A policy's outcomes on a lab's trial list (in trial order), run in that lab or in a simulated world."""

    policy: str
    lab: int
    settings: dict
    trials: TrialList
    outcomes: tuple[TrialOutcome, ...]
    timing: dict[str, float] = field(default_factory=dict)
    # where the trials ran: None, the lab twin ``lab``; else a simulated world, recorded as
    # {"kind": "world", "world": its file, "world_hash": WorldParams.content_hash() as rendered, "shadows":
    # rendered with shadows (``WorldCell``)}
    cell: dict | None = None

    def __post_init__(self) -> None:
        if [o.index for o in self.outcomes] != [t.index for t in self.trials]:
            raise ConfigError(f"results of {self.policy!r}: expected one outcome per trial, in trial order")
        if self.cell is not None and _cell_record(self.cell, f"results of {self.policy!r}") != self.cell:
            raise ConfigError(
                f"results of {self.policy!r}: cell: expected None (the lab twin) or a world record, got {self.cell!r}"
            )

    def where(self) -> str:
        """Where the trials ran, in words: ``lab 1`` or ``world FILE (hash H, lab 1's trials)``."""
        if self.cell is None:
            return f"lab {self.lab}"
        shadows = ", with shadows" if self.cell["shadows"] else ""
        return f"world {self.cell['world']} (hash {self.cell['world_hash']}{shadows}, lab {self.lab}'s trials)"

    # --- summaries ------------------------------------------------------------------------
    def successes(self) -> list[bool]:
        return [o.success for o in self.outcomes]

    def overall(self) -> Rate:
        return wilson(sum(self.successes()), len(self.outcomes))

    def by_kind(self) -> dict[str, Rate]:
        """Success rate per condition kind present in the trial list (Appendix E style)."""
        out = {}
        for kind in KINDS:
            hits = [o.success for o in self.outcomes if o.kind == kind]
            if hits:
                out[kind] = wilson(sum(hits), len(hits))
        return out

    def shifted(self) -> Rate | None:
        """Success rate over every shifted (non-nominal) trial, if any."""
        hits = [o.success for o in self.outcomes if o.kind != "nominal"]
        return wilson(sum(hits), len(hits)) if hits else None

    def failures(self) -> dict[str, int]:
        return dict(Counter(o.failure for o in self.outcomes if not o.success).most_common())

    def safety_totals(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for o in self.outcomes:
            total.update(o.safety)
        return dict(sorted(total.items()))

    # --- files ----------------------------------------------------------------------------
    def to_json(self) -> dict:
        summary = {
            "overall": dataclasses.asdict(self.overall()),
            "by_kind": {k: dataclasses.asdict(r) for k, r in self.by_kind().items()},
            "failures": self.failures(),
            "safety": self.safety_totals(),
        }
        return {
            "schema": SCHEMA,
            "policy": self.policy,
            "lab": self.lab,
            "cell": self.cell if self.cell is not None else {"kind": "lab", "lab": self.lab},
            "settings": self.settings,
            "summary": summary,
            "timing": self.timing,
            "trial_list": self.trials.to_json(),
            "trials_digest": self.trials.digest(),
            "outcomes": [dataclasses.asdict(o) for o in self.outcomes],
        }

    @classmethod
    def from_json(cls, obj: dict, source: str = "results") -> EvalResults:
        if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
            raise ConfigError(f"{source}: expected r2s2r evaluation results (schema {SCHEMA})")
        try:
            trials = TrialList.from_json(obj["trial_list"])
            outcomes = tuple(TrialOutcome(**o) for o in obj["outcomes"])
            cell = _cell_record(obj.get("cell"), source)
            lab = int(obj["lab"])
            return cls(obj["policy"], lab, obj["settings"], trials, outcomes, obj.get("timing", {}), cell)
        except (KeyError, TypeError) as e:
            raise ConfigError(f"{source}: malformed evaluation results ({e})") from e

    def save(self, out: Path) -> Path:
        """Write ``out/results.json`` and the markdown table ``out/results.md`` (atomically)."""
        from r2s2r.evaluate.tables import results_table

        atomic.write_json(out / RESULTS_FILE, self.to_json())
        atomic.write_text(out / TABLE_FILE, results_table(self))
        return out / RESULTS_FILE

    @classmethod
    def load(cls, path: Path) -> EvalResults:
        """From ``results.json`` or the folder holding it."""
        path = Path(path)
        file = path / RESULTS_FILE if path.is_dir() else path
        if not file.is_file():
            raise ConfigError(f"{path}: expected an evaluation folder with {RESULTS_FILE} or the file itself")
        try:
            obj = json.loads(file.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(f"{file}: not valid JSON ({e})") from e
        return cls.from_json(obj, str(file))


def _cell_record(obj: object, source: str) -> dict | None:
    """A ``cell`` record, checked: None for the lab twin (also a file written before cells were
    recorded), else ``{"kind": "world", "world": FILE, "world_hash": HASH, "shadows": BOOL}`` (False in a
    file written before sim evaluations could render shadows)."""
    if obj is None or (isinstance(obj, dict) and obj.get("kind") == "lab"):
        return None
    if not (isinstance(obj, dict) and obj.get("kind") == "world" and {"world", "world_hash"} <= set(obj)):
        raise ConfigError(
            f"{source}: cell: expected {{'kind': 'lab', ...}} or {{'kind': 'world', 'world': FILE, 'world_hash': H}}, "
            f"got {obj!r}"
        )
    shadows = obj.get("shadows", False)
    if not isinstance(shadows, bool):
        raise ConfigError(f"{source}: cell: shadows expected true or false, got {shadows!r}")
    return {"kind": "world", "world": str(obj["world"]), "world_hash": str(obj["world_hash"]), "shadows": shadows}
