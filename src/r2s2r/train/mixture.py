"""``Mixture``: how each training batch is split between the real dataset and the sim datasets.

Two modes, both recorded in the checkpoint:

- **quota** (``ratio`` r given): every batch holds exactly the same number of samples from each
  source, the largest-remainder apportionment of the batch size to the weights: real r, the sim
  datasets 1 - r shared in proportion to their frame counts;
- **natural** (``ratio`` None): every sample is drawn uniformly from all frames of all sources
  together, so sources appear in proportion to their sizes on average (counts vary per batch).

Within a source, samples are (episode, t) windows drawn uniformly with replacement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from r2s2r.data.sampler import WindowSampler
from r2s2r.errors import ConfigError


def apportion(weights: np.ndarray, total: int) -> np.ndarray:
    """Integer counts summing to ``total`` closest to ``weights / sum * total`` (largest remainder;
    ties go to the earlier source)."""
    w = np.asarray(weights, dtype=np.float64)
    exact = w / w.sum() * total
    counts = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: total - int(counts.sum())]] += 1
    return counts


class Mixture:
    """Sources (name -> WindowSampler, the real one first) and the split of a batch of ``batch_size``."""

    def __init__(self, samplers: Mapping[str, WindowSampler], ratio: float | None, batch_size: int) -> None:
        if not samplers:
            raise ConfigError("mixture: expected at least one source")
        self.samplers = dict(samplers)
        self.names = tuple(self.samplers)
        self.ratio, self.batch_size = ratio, batch_size
        self.frames = np.array([len(s) for s in self.samplers.values()], dtype=np.int64)
        if ratio is None:
            self.weights = self.frames / self.frames.sum()
            self.quota = None
        else:
            if len(self.names) == 1:
                if ratio != 1.0:
                    raise ConfigError(f"ratio {ratio}: with no sim dataset the real share must be 1 (or natural)")
            elif isinstance(ratio, bool) or not 0.0 < ratio < 1.0:
                raise ConfigError(f"ratio: expected the real share of each batch in (0, 1), got {ratio!r}")
            sims = self.frames[1:] / self.frames[1:].sum() * (1.0 - ratio) if len(self.names) > 1 else []
            self.weights = np.array([ratio, *sims])
            self.quota = apportion(self.weights, batch_size)
            empty = [n for n, c in zip(self.names, self.quota, strict=True) if c == 0]
            if empty:
                raise ConfigError(
                    f"ratio {ratio} with batch size {batch_size} gives source(s) {empty} no sample per batch; "
                    "raise the batch size or change the ratio"
                )

    def plan(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Sample indices per source (positions in that source's ``WindowSampler``) of one batch."""
        if self.quota is None:
            flat = rng.integers(0, int(self.frames.sum()), size=self.batch_size)
            edges = np.concatenate([[0], np.cumsum(self.frames)])
            which = np.searchsorted(edges, flat, side="right") - 1
            return {name: flat[which == i] - edges[i] for i, name in enumerate(self.names)}
        return {
            name: rng.integers(0, f, size=int(c))
            for name, f, c in zip(self.names, self.frames, self.quota, strict=True)
        }

    def describe(self) -> dict[str, Any]:
        """The mixture as recorded in the checkpoint."""
        return {
            "mode": "natural" if self.quota is None else "quota",
            "ratio": self.ratio,
            "batch_size": self.batch_size,
            "weights": {n: float(w) for n, w in zip(self.names, self.weights, strict=True)},
            "per_batch": None
            if self.quota is None
            else {n: int(c) for n, c in zip(self.names, self.quota, strict=True)},
            "frames": {n: int(f) for n, f in zip(self.names, self.frames, strict=True)},
        }
