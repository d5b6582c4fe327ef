"""``Manifest``: the dataset's ``manifest.json`` (features, episodes, shard checksums), validated on load."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from r2s2r import atomic
from r2s2r.data.features import Feature, canonical_features
from r2s2r.data.provenance import Provenance, plain_json
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.files import input_dir, read_json

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
SHARD_NAME = re.compile(r"^(stage|shard)_\d{6,}\.h5$")
_SHA = re.compile(r"^[0-9a-f]{64}$")
_KEYS = ("schema_version", "features", "control_rate_hz", "info", "episodes", "shards")


@dataclass(frozen=True)
class EpisodeEntry:
    """Where episode ``index`` lives: ``group`` (``data/demo_<index>``) inside shard file ``shard``."""

    index: int
    shard: str
    group: str
    num_samples: int
    provenance: Provenance

    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return d | {"provenance": self.provenance.to_json()}

    @classmethod
    def from_json(cls, data: Any, where: str) -> EpisodeEntry:
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(data, dict) or set(data) != set(names):
            raise ConfigError(f"{where}: expected an object with keys {names}, got {data!r:.200}")
        for k, lo in (("index", 0), ("num_samples", 1)):
            if isinstance(data[k], bool) or not isinstance(data[k], int) or data[k] < lo:
                raise ConfigError(f"{where}.{k}: expected an integer >= {lo}, got {data[k]!r}")
        if not isinstance(data["shard"], str) or not isinstance(data["group"], str):
            raise ConfigError(f"{where}: shard and group must be strings")
        prov = Provenance.from_json(data["provenance"], f"{where}.provenance")
        return cls(data["index"], data["shard"], data["group"], data["num_samples"], prov)


def group_name(index: int) -> str:
    return f"data/demo_{index}"


@dataclass(frozen=True)
class Manifest:
    """The dataset's table of contents. Episodes are numbered 0..n-1 in the order they were added."""

    features: tuple[Feature, ...]
    control_rate_hz: float
    info: dict[str, Any] = field(default_factory=dict)
    episodes: tuple[EpisodeEntry, ...] = ()
    shards: dict[str, str] = field(default_factory=dict)  # file name -> sha256 of its bytes
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", canonical_features(self.features))
        rate = self.control_rate_hz
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate) or rate <= 0:
            raise ConfigError(f"control_rate_hz: expected a positive number, got {rate!r}")
        object.__setattr__(self, "control_rate_hz", float(rate))
        info = plain_json(self.info, "info")
        if not isinstance(info, dict):
            raise ConfigError(f"info: expected an object, got {self.info!r}")
        object.__setattr__(self, "info", info)

    @property
    def num_frames(self) -> int:
        return sum(e.num_samples for e in self.episodes)

    def feature(self, name: str) -> Feature:
        for f in self.features:
            if f.name == name:
                return f
        raise KeyError(name)

    def shard_episodes(self, shard: str) -> list[int]:
        return [e.index for e in self.episodes if e.shard == shard]

    def content_hash(self) -> str:
        """sha256 of the features and the episode list (index, length, provenance); not of shard names,
        so compacting staged episodes into a shard keeps it."""
        doc = {
            "features": [f.to_json() for f in self.features],
            "episodes": [[e.index, e.num_samples, e.provenance.to_json()] for e in self.episodes],
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "features": [f.to_json() for f in self.features],
            "control_rate_hz": self.control_rate_hz,
            "info": self.info,
            "episodes": [e.to_json() for e in self.episodes],
            "shards": dict(sorted(self.shards.items())),
        }

    def save(self, folder: str | Path) -> Path:
        """Write ``folder/manifest.json`` atomically (temp name, fsync, rename)."""
        return atomic.write_json(Path(folder) / MANIFEST, self.to_json())

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        if not isinstance(data, dict):
            raise R2S2RError(f"{where}: expected a JSON object, got {type(data).__name__}")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise R2S2RError(f"{where}: schema_version {version!r}; expected {SCHEMA_VERSION}")
        if set(data) != set(_KEYS):
            raise R2S2RError(f"{where}: keys {sorted(data)}; expected {sorted(_KEYS)}")
        try:
            if not isinstance(data["features"], list) or not isinstance(data["episodes"], list):
                raise ConfigError("features and episodes must be lists")
            features = tuple(Feature.from_json(f, f"features[{i}]") for i, f in enumerate(data["features"]))
            episodes = tuple(EpisodeEntry.from_json(e, f"episodes[{i}]") for i, e in enumerate(data["episodes"]))
            shards = data["shards"]
            if not isinstance(shards, dict):
                raise ConfigError(f"shards: expected an object of file name -> sha256, got {shards!r:.200}")
            for name, sha in shards.items():
                if not SHARD_NAME.match(name) or not isinstance(sha, str) or not _SHA.match(sha):
                    raise ConfigError(f"shards[{name!r}]: expected 'shard_<n>.h5'/'stage_<n>.h5' -> sha256 hex")
            for i, e in enumerate(episodes):
                if e.index != i or e.group != group_name(i):
                    raise ConfigError(f"episodes[{i}]: expected index {i} and group {group_name(i)!r}")
                if e.shard not in shards:
                    raise ConfigError(f"episodes[{i}]: shard {e.shard!r} is not listed in shards")
            unused = sorted(set(shards) - {e.shard for e in episodes})
            if unused:
                raise ConfigError(f"shards: {unused} hold no episode")
            return cls(features, data["control_rate_hz"], data["info"], episodes, dict(shards), version)
        except ConfigError as e:
            raise R2S2RError(f"{where}: {e}") from None

    @classmethod
    def load(cls, folder: str | Path) -> Manifest:
        """Read and validate ``folder/manifest.json``; R2S2RError names the file and what was expected."""
        folder = Path(folder)
        if folder.exists():
            input_dir(folder, "a dataset folder written by r2s2r.data.DatasetWriter")
        path = folder / MANIFEST
        if not path.exists():
            raise R2S2RError(f"{path}: no manifest; expected a dataset folder written by r2s2r.data.DatasetWriter")
        return cls.from_json(read_json(path, "a dataset manifest", expect=None), str(path))
