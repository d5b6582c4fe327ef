"""``Episode``: one demonstration's per-frame arrays plus its provenance, and its check against features."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from r2s2r.data.features import Feature
from r2s2r.data.object_state import MAY_BE_UNKNOWN
from r2s2r.data.provenance import Provenance
from r2s2r.errors import ConfigError

_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True, eq=False)
class Episode:
    """T frames: ``obs[key]`` (T, ...), ``actions`` (T, A), ``states`` (T, S), optional MimicGen
    ``datagen_info`` (a nested dict whose leaves are per-frame arrays (T, ...)), and ``provenance``.

    ``extras``: per-episode arrays of any shape (not per frame), e.g. a demonstration's first-frame
    full-resolution head stereo pair ``head_left_full``/``head_right_full`` (H, W, 3) uint8, which
    perception uses and policies never see. Stored at ``data/demo_<i>/extras/<name>``."""

    obs: Mapping[str, np.ndarray]
    actions: np.ndarray
    states: np.ndarray
    provenance: Provenance
    datagen_info: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def num_samples(self) -> int:
        return len(self.actions)

    def arrays(self) -> dict[str, np.ndarray]:
        """Feature name -> array: ``actions``, ``states`` and ``obs/<key>``."""
        out = {"actions": self.actions, "states": self.states}
        out.update({f"obs/{k}": v for k, v in self.obs.items()})
        return out


def datagen_leaves(tree: Mapping[str, Any], prefix: str = "datagen_info") -> dict[str, np.ndarray]:
    """Flat ``datagen_info/a/b`` -> array view of a nested datagen_info dict."""
    out: dict[str, np.ndarray] = {}
    for k in sorted(tree):
        v = tree[k]
        if not isinstance(k, str) or not _KEY.match(k):
            raise ConfigError(f"{prefix}: key {k!r} must be letters, digits, '_', '-' or '.'")
        if isinstance(v, Mapping):
            out.update(datagen_leaves(v, f"{prefix}/{k}"))
        else:
            out[f"{prefix}/{k}"] = v
    return out


def check_episode(episode: Episode, features: tuple[Feature, ...]) -> None:
    """Raise ConfigError naming the feature and what was expected if ``episode`` does not fit ``features``."""
    if not isinstance(episode, Episode):
        raise ConfigError(f"expected an Episode, got {type(episode).__name__}")
    if not isinstance(episode.provenance, Provenance):
        raise ConfigError(f"episode.provenance: expected a Provenance, got {type(episode.provenance).__name__}")
    declared = {f.obs_key for f in features if f.obs_key is not None}
    given = set(episode.obs)
    if given != declared:
        raise ConfigError(
            f"episode.obs: keys {sorted(given)}; expected {sorted(declared)} "
            f"(missing {sorted(declared - given)}, unexpected {sorted(given - declared)})"
        )
    arrays = episode.arrays()
    length = None
    for f in features:
        x = arrays[f.name]
        if not isinstance(x, np.ndarray):
            raise ConfigError(f"{f.name}: expected a numpy array, got {type(x).__name__}")
        if x.dtype != np.dtype(f.dtype):
            raise ConfigError(f"{f.name}: expected dtype {f.dtype}, got {x.dtype}")
        if x.ndim != 1 + len(f.shape) or x.shape[1:] != f.shape:
            raise ConfigError(f"{f.name}: expected shape (T, {', '.join(map(str, f.shape))}), got {x.shape}")
        if length is None:
            length = len(x)
            if length < 1:
                raise ConfigError(f"{f.name}: an episode needs at least one frame, got 0")
        elif len(x) != length:
            raise ConfigError(
                f"{f.name}: length {len(x)} differs from {features[0].name} length {length}; "
                "every per-frame array needs the same number of frames"
            )
        if x.dtype.kind == "f":
            finite = np.isfinite(x) | (np.isnan(x) if f.name in MAY_BE_UNKNOWN else False)
            if not finite.all():
                bad = int(np.argwhere(~finite.reshape(len(x), -1))[0, 0])
                what = "finite values or NaN (unknown)" if f.name in MAY_BE_UNKNOWN else "finite values"
                raise ConfigError(f"{f.name}: non-finite value at frame {bad}; expected {what}")
    if not isinstance(episode.datagen_info, Mapping):
        raise ConfigError(f"datagen_info: expected a dict, got {type(episode.datagen_info).__name__}")
    for name, x in datagen_leaves(episode.datagen_info).items():
        if not isinstance(x, np.ndarray) or x.dtype.kind not in "biuf":
            raise ConfigError(f"{name}: expected a numeric/bool numpy array, got {type(x).__name__}")
        if x.ndim < 1 or len(x) != length:
            raise ConfigError(f"{name}: expected a per-frame array with {length} frames, got shape {x.shape}")
    if not isinstance(episode.extras, Mapping):
        raise ConfigError(f"extras: expected a dict of arrays, got {type(episode.extras).__name__}")
    for k, x in episode.extras.items():
        if not isinstance(k, str) or not _KEY.match(k):
            raise ConfigError(f"extras: key {k!r} must be letters, digits, '_', '-' or '.'")
        if not isinstance(x, np.ndarray) or x.dtype.kind not in "biuf":
            raise ConfigError(f"extras/{k}: expected a numeric/bool numpy array, got {type(x).__name__}")
