"""``Feature``: the name, per-frame shape, dtype and unit of one per-frame array of an episode.

Names are ``actions``, ``states`` or ``obs/<key>``. A feature with dtype ``uint8`` and shape
(H, W, C) is an image: it is stored chunked per frame with gzip level 1 and left out of the
normalisation statistics.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from r2s2r.errors import ConfigError

DTYPES = ("uint8", "int32", "int64", "float32", "float64", "bool")
REQUIRED = ("actions", "states")
DEFAULT_CAMERAS = ("head_left", "right_wrist", "left_wrist")
_NAME = re.compile(r"^(actions|states|obs/[A-Za-z0-9_]+)$")


@dataclass(frozen=True)
class Feature:
    """One per-frame array: stored as an HDF5 dataset of shape (T, *shape) at ``data/demo_<i>/<name>``."""

    name: str  # "actions", "states" or "obs/<key>"
    shape: tuple[int, ...]  # per frame
    dtype: str  # numpy dtype name, one of DTYPES
    unit: str = "1"  # "rad", "px", "1", ...

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigError(f"feature name {self.name!r}: expected 'actions', 'states' or 'obs/<key>'")
        shape = tuple(self.shape)
        if not all(isinstance(n, int | np.integer) and not isinstance(n, bool) and n > 0 for n in shape):
            raise ConfigError(f"feature {self.name}: shape {self.shape!r} must be positive integers")
        object.__setattr__(self, "shape", tuple(int(n) for n in shape))
        if self.dtype not in DTYPES:
            raise ConfigError(f"feature {self.name}: dtype {self.dtype!r}; expected one of {list(DTYPES)}")
        if not isinstance(self.unit, str):
            raise ConfigError(f"feature {self.name}: unit must be a string, got {self.unit!r}")

    @property
    def is_image(self) -> bool:
        return self.dtype == "uint8" and len(self.shape) == 3 and self.shape[2] in (1, 3, 4)

    @property
    def obs_key(self) -> str | None:
        """``head_left`` for ``obs/head_left``; None for actions/states."""
        return self.name[4:] if self.name.startswith("obs/") else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "unit": self.unit}

    @classmethod
    def from_json(cls, data: Any, where: str = "feature") -> Feature:
        if not isinstance(data, dict) or set(data) != {"name", "shape", "dtype", "unit"}:
            raise ConfigError(f"{where}: expected an object with keys name, shape, dtype, unit; got {data!r}")
        if not isinstance(data["shape"], list):
            raise ConfigError(f"{where}: shape must be a list, got {data['shape']!r}")
        try:
            return cls(data["name"], tuple(data["shape"]), data["dtype"], data["unit"])
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None


def canonical_features(features: Iterable[Feature]) -> tuple[Feature, ...]:
    """Features sorted by name, checked for duplicates and for the required ``actions`` and ``states``."""
    features = tuple(features)
    for f in features:
        if not isinstance(f, Feature):
            raise ConfigError(f"features: expected Feature values, got {f!r}")
    names = [f.name for f in features]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"features: duplicate name(s) {dup}")
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        raise ConfigError(f"features: missing required feature(s) {missing}; every dataset has {list(REQUIRED)}")
    return tuple(sorted(features, key=lambda f: f.name))


def standard_features(
    state_dim: int,
    cameras: tuple[str, ...] = DEFAULT_CAMERAS,
    image_size: tuple[int, int] = (96, 96),
    proprio_dim: int = 27,
    action_dim: int = 27,
) -> tuple[Feature, ...]:
    """The cell's features: RGB cameras (H, W, 3) uint8, ``proprio`` and ``actions`` in rad, float64 ``states``."""
    h, w = image_size
    feats = [Feature(f"obs/{c}", (h, w, 3), "uint8", "px") for c in cameras]
    feats += [
        Feature("obs/proprio", (proprio_dim,), "float32", "rad"),
        Feature("actions", (action_dim,), "float32", "rad"),
        Feature("states", (state_dim,), "float64", "1"),
    ]
    return canonical_features(feats)
