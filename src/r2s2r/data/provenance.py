"""``Provenance``: where an episode came from (real or sim, world, behavior, seed, condition, outcome)."""

from __future__ import annotations

import dataclasses
import json
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from r2s2r.dataclass_json import to_jsonable
from r2s2r.errors import ConfigError, R2S2RError, UnknownNameError

SOURCES = ("real", "sim")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def plain_json(value: Any, where: str) -> Any:
    """``value`` as plain JSON (tuples become lists, numpy scalars Python numbers), or ConfigError."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = to_jsonable(value)
    try:
        return json.loads(json.dumps(value, default=_json_default, allow_nan=False, sort_keys=True))
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: expected JSON-serialisable values ({e})") from None


def _int(value: Any, where: str, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{where}: expected an integer{' or null' if optional else ''}, got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where one episode came from. ``key`` is the writer-side identity used to resume without duplicates."""

    source: str  # "real" | "sim"
    world_hash: str
    behavior: str  # "teleop", "mimicgen", "planner", ...
    source_demo: int | None = None  # index of the real demo a generated episode was derived from
    seed: int
    condition: dict[str, Any] = field(default_factory=dict)  # the trial condition, plain JSON
    success: bool = True
    failure: str | None = None  # failure reason when success is False
    attempts: int = 1
    key: int | None = None  # e.g. a generation run's attempt index

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise UnknownNameError("provenance source", str(self.source), SOURCES)
        for name in ("world_hash", "behavior"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"provenance.{name}: expected a string, got {getattr(self, name)!r}")
        set_ = object.__setattr__
        set_(self, "source_demo", _int(self.source_demo, "provenance.source_demo", optional=True))
        set_(self, "seed", _int(self.seed, "provenance.seed"))
        set_(self, "attempts", _int(self.attempts, "provenance.attempts"))
        set_(self, "key", _int(self.key, "provenance.key", optional=True))
        condition = plain_json(self.condition, "provenance.condition")
        if not isinstance(condition, dict):
            raise ConfigError(f"provenance.condition: expected an object, got {self.condition!r}")
        set_(self, "condition", condition)
        if not isinstance(self.success, bool | np.bool_):
            raise ConfigError(f"provenance.success: expected true/false, got {self.success!r}")
        set_(self, "success", bool(self.success))
        if self.failure is not None and not isinstance(self.failure, str):
            raise ConfigError(f"provenance.failure: expected a string or null, got {self.failure!r}")
        if self.success and self.failure is not None:
            raise ConfigError(f"provenance.failure: a successful episode has no failure, got {self.failure!r}")
        if self.attempts < 1:
            raise ConfigError(f"provenance.attempts: expected >= 1, got {self.attempts}")

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def dumps(self) -> str:
        """Canonical JSON text (sorted keys, no whitespace): the HDF5 ``provenance`` attribute."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Any, where: str = "provenance") -> Provenance:
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected an object, got {type(data).__name__}")
        unknown, missing = sorted(set(data) - names), sorted(names - set(data))
        if unknown or missing:
            raise ConfigError(f"{where}: unknown field(s) {unknown}, missing field(s) {missing}")
        try:
            return cls(**data)
        except R2S2RError as e:
            raise ConfigError(f"{where}: {e}") from None
