"""``Stats``: per-feature normalisation statistics of a dataset's non-image features, cached in ``stats.json``."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from r2s2r import atomic
from r2s2r.data.dataset import Dataset
from r2s2r.errors import ConfigError, R2S2RError, UnknownNameError

STATS = "stats.json"
MODES = ("zscore", "quantile")
FIELDS = ("mean", "std", "min", "max", "q01", "q99")
EPS = 1e-6  # a spread below this (a joint that never moves) normalises with scale 1


@dataclass(frozen=True, eq=False)
class FeatureStats:
    """Statistics over all frames, each of the feature's per-frame shape (float64)."""

    mean: np.ndarray
    std: np.ndarray  # population std (ddof=0)
    min: np.ndarray
    max: np.ndarray
    q01: np.ndarray  # 1 % quantile (numpy's linear interpolation)
    q99: np.ndarray

    def center_scale(self, mode: str) -> tuple[np.ndarray, np.ndarray]:
        if mode == "zscore":
            center, spread = self.mean, self.std
        elif mode == "quantile":
            center, spread = (self.q99 + self.q01) / 2, (self.q99 - self.q01) / 2
        else:
            raise UnknownNameError("normalisation mode", mode, MODES)
        return center, np.where(spread > EPS, spread, 1.0)


@dataclass(frozen=True, eq=False)
class Stats:
    """Statistics per non-image feature and the manifest content hash they were computed from.

    ``normalize(name, x, "zscore")`` is (x - mean) / std; ``"quantile"`` maps [q01, q99] to [-1, 1]
    (values outside the range are not clipped, so ``unnormalize`` inverts both exactly).
    """

    features: dict[str, FeatureStats]
    content_hash: str

    def _get(self, name: str) -> FeatureStats:
        if name not in self.features:
            raise UnknownNameError("stats feature", name, tuple(self.features))
        return self.features[name]

    def normalize(self, name: str, x: np.ndarray, mode: str = "zscore") -> np.ndarray:
        center, scale = self._get(name).center_scale(mode)
        x = np.asarray(x)
        dtype = x.dtype if x.dtype.kind == "f" else np.float64
        return ((x - center.astype(dtype)) / scale.astype(dtype)).astype(dtype, copy=False)

    def unnormalize(self, name: str, x: np.ndarray, mode: str = "zscore") -> np.ndarray:
        center, scale = self._get(name).center_scale(mode)
        x = np.asarray(x)
        dtype = x.dtype if x.dtype.kind == "f" else np.float64
        return (x * scale.astype(dtype) + center.astype(dtype)).astype(dtype, copy=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "content_hash": self.content_hash,
            "features": {n: {k: getattr(s, k).tolist() for k in FIELDS} for n, s in sorted(self.features.items())},
        }

    @classmethod
    def from_json(cls, data: Any, where: str = STATS) -> Stats:
        try:
            feats = {
                name: FeatureStats(**{k: np.asarray(d[k], dtype=np.float64) for k in FIELDS})
                for name, d in data["features"].items()
            }
            return cls(feats, str(data["content_hash"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise R2S2RError(f"{where}: not a stats file ({e!r}); expected content_hash and features") from None


def feature_stats(x: np.ndarray) -> FeatureStats:
    """Statistics of frames ``x`` (N, ...) over the first axis; NaN (unknown, see ``MAY_BE_UNKNOWN``)
    values are left out (a column with no known value gets NaN statistics)."""
    x = np.asarray(x, dtype=np.float64)
    if not np.isnan(x).any():
        q01, q99 = np.quantile(x, [0.01, 0.99], axis=0)
        return FeatureStats(x.mean(0), x.std(0), x.min(0), x.max(0), q01, q99)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        q01, q99 = np.nanquantile(x, [0.01, 0.99], axis=0)
        return FeatureStats(np.nanmean(x, 0), np.nanstd(x, 0), np.nanmin(x, 0), np.nanmax(x, 0), q01, q99)


def _frames(datasets: Sequence[Dataset], name: str) -> np.ndarray:
    return np.concatenate([ds.group(i)[name][()] for ds in datasets for i in range(len(ds))])


def _compute(dataset: Dataset) -> Stats:
    names = [f.name for f in dataset.manifest.features if not f.is_image]
    if dataset.num_frames == 0:
        raise ConfigError(f"{dataset.path}: no frames to compute statistics from")
    return Stats({name: feature_stats(_frames([dataset], name)) for name in names}, dataset.manifest.content_hash())


def pooled_stats(datasets: Sequence[Dataset], names: Sequence[str]) -> Stats:
    """Statistics of features ``names`` over all frames of all ``datasets`` together (each frame
    counts once); the content hash is the SHA-256 of the datasets' manifest hashes, in order."""
    for ds in datasets:
        if ds.num_frames == 0:
            raise ConfigError(f"{ds.path}: no frames to compute statistics from")
        for name in names:
            if name not in ds.features or ds.features[name].is_image:
                raise ConfigError(f"{ds.path}: has no non-image feature {name!r} to compute statistics of")
    digest = hashlib.sha256("\n".join(ds.manifest.content_hash() for ds in datasets).encode()).hexdigest()
    return Stats({name: feature_stats(_frames(datasets, name)) for name in names}, digest)


def compute_stats(dataset: Dataset, cache: bool = True) -> Stats:
    """Statistics of every non-image feature over all frames of ``dataset``.

    With ``cache``, ``stats.json`` beside the data is used when its content hash still matches the
    manifest, and otherwise (re)written atomically.
    """
    path = dataset.path / STATS
    want = dataset.manifest.content_hash()
    if cache and path.is_file():
        try:
            stats = Stats.from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
            if stats.content_hash == want:
                return stats
        except (R2S2RError, ValueError, OSError):
            pass  # unreadable or stale: recompute and overwrite
    stats = _compute(dataset)
    if cache:
        atomic.write_json(path, stats.to_json())
    return stats
