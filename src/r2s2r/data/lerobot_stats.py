"""``Summary``: statistics of one LeRobot feature over one episode or a whole dataset, as LeRobot v3.0
stores them in ``meta/stats.json`` and in the ``stats/<feature>/<stat>`` columns of ``meta/episodes``.

Per feature: ``min``, ``max``, ``mean``, ``std`` (population), ``count`` (frames, ``[n]``) and the
quantiles ``q01 q10 q50 q90 q99`` of recent LeRobot versions. A vector feature has them per element
(shape (d,); a scalar (1,)); NaN (an unknown value, see ``MAY_BE_UNKNOWN``) is left out. An image
feature has them per channel over every pixel of every frame, scaled to [0, 1], shape (3, 1, 1).

Whole-dataset statistics aggregate the episodes' as LeRobot does (count-weighted mean, pooled
variance, min of mins, max of maxes), exact for everything but the vector quantiles, which are the
count-weighted mean of the episodes' (LeRobot's approximation too). Image statistics keep a
histogram of the 256 values per channel, so theirs are exact, quantiles included (LeRobot samples
frames; here every frame counts).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
STATS = ("min", "max", "mean", "std", "count", *QUANTILES)


@dataclass(frozen=True, eq=False)
class Summary:
    """Statistics per element (vectors) or per channel (images, with ``hist``: (C, 256) counts)."""

    count: int  # frames
    known: np.ndarray  # values that are not NaN, per element (pixels per channel for images)
    mean: np.ndarray
    var: np.ndarray
    min: np.ndarray
    max: np.ndarray
    quantiles: dict[str, np.ndarray]
    hist: np.ndarray | None = None

    def to_json(self) -> dict[str, Any]:
        """LeRobot's stats entry: lists of floats (NaN, for an element never known, as null)."""
        image = self.hist is not None
        out: dict[str, Any] = {}
        values = {"min": self.min, "max": self.max, "mean": self.mean, "std": np.sqrt(self.var), **self.quantiles}
        for name in STATS:
            if name == "count":
                out[name] = [int(self.count)]
                continue
            v = np.asarray(values[name], dtype=np.float64)
            out[name] = _plain((v / 255.0).reshape(-1, 1, 1) if image else v)
        return out


def _plain(v: np.ndarray) -> Any:
    return [_plain(x) for x in v] if v.ndim else (None if np.isnan(v) else float(v))


def vector_summary(x: np.ndarray) -> Summary:
    """Statistics of frames ``x`` (n,) or (n, d) over the first axis, NaN left out."""
    x = np.asarray(x, dtype=np.float64)
    x = x.reshape(len(x), -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN statistics
        q = np.nanquantile(x, list(QUANTILES.values()), axis=0)
        return Summary(
            count=len(x),
            known=(~np.isnan(x)).sum(0),
            mean=np.nanmean(x, 0),
            var=np.nanvar(x, 0),
            min=np.nanmin(x, 0),
            max=np.nanmax(x, 0),
            quantiles=dict(zip(QUANTILES, q, strict=True)),
        )


def image_summary(frames: np.ndarray) -> Summary:
    """Statistics of uint8 frames (n, H, W, C) per channel, over every pixel."""
    c = frames.shape[-1]
    hist = np.stack([np.bincount(frames[..., k].ravel(), minlength=256) for k in range(c)]).astype(np.int64)
    return _from_hist(hist, len(frames))


def _from_hist(hist: np.ndarray, count: int) -> Summary:
    values = np.arange(256, dtype=np.float64)
    n = hist.sum(1)
    mean = hist @ values / n
    var = hist @ values**2 / n - mean**2
    seen = hist > 0
    lo = np.array([values[s].min() for s in seen])
    hi = np.array([values[s].max() for s in seen])
    quantiles = {name: np.array([_hist_quantile(h, q) for h in hist]) for name, q in QUANTILES.items()}
    return Summary(count, n, mean, np.maximum(var, 0.0), lo, hi, quantiles, hist)


def _hist_quantile(hist: np.ndarray, q: float) -> float:
    """numpy's default (linear) quantile of the values a histogram of 0..255 counts."""
    cum = np.cumsum(hist)
    pos = q * (cum[-1] - 1)
    below, above = int(np.floor(pos)), int(np.ceil(pos))
    v0, v1 = np.searchsorted(cum, below, side="right"), np.searchsorted(cum, above, side="right")
    return float(v0 + (v1 - v0) * (pos - below))


def aggregate(parts: Sequence[Summary]) -> Summary:
    """The statistics of several episodes together (see the module docstring for what is exact)."""
    if parts[0].hist is not None:
        return _from_hist(np.sum([p.hist for p in parts], axis=0), sum(p.count for p in parts))
    w = np.stack([p.known for p in parts]).astype(np.float64)
    total = w.sum(0)

    def wmean(field: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (np.where(w > 0, field, 0.0) * w).sum(0) / total

    means = np.stack([p.mean for p in parts])
    mean = wmean(means)
    var = wmean(np.stack([p.var for p in parts]) + (means - mean) ** 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanmin(np.stack([p.min for p in parts]), 0), np.nanmax(np.stack([p.max for p in parts]), 0)
    quantiles = {name: wmean(np.stack([p.quantiles[name] for p in parts])) for name in QUANTILES}
    return Summary(sum(p.count for p in parts), total.astype(np.int64), mean, var, lo, hi, quantiles)
