"""``FrameReader``: camera frames at the policy's resolution, decoded once and kept up to a byte budget.

Decoding a gzip-compressed 96x96 frame from HDF5 costs ~0.1-0.4 ms of CPU; a training batch of 64
samples x 3 cameras reads 192 of them. Frames are resized to the policy's resolution as they are
read and kept in memory until ``max_bytes`` is used (first come, first kept; nothing is evicted), so
a small real dataset is read from disk once and a large sim dataset partly. The values are the same
whether a frame comes from the cache or from disk.
"""

from __future__ import annotations

from collections.abc import Sequence

import h5py
import numpy as np

from r2s2r.data.dataset import Dataset
from r2s2r.policy.images import resize_images


class FrameReader:
    def __init__(self, datasets: dict[str, Dataset], cameras: Sequence[str], size: int, max_bytes: int) -> None:
        self.datasets, self.cameras, self.size = datasets, tuple(cameras), size
        self.max_bytes, self.bytes = max_bytes, 0
        self._cache: dict[tuple[str, int, int], np.ndarray] = {}  # (source, episode, t) -> (cameras, S, S, 3)
        self._handles: dict[tuple[str, int, str], h5py.Dataset] = {}
        self.reads = self.hits = 0

    def _handle(self, source: str, episode: int, cam: str) -> h5py.Dataset:
        key = (source, episode, cam)
        ds = self._handles.get(key)
        if ds is None:
            ds = self._handles[key] = self.datasets[source].group(episode)[f"obs/{cam}"]
        return ds

    def _frame(self, source: str, episode: int, t: int) -> np.ndarray:
        key = (source, episode, t)
        got = self._cache.get(key)
        if got is not None:
            self.hits += 1
            return got
        self.reads += 1
        # frame by frame (fast in h5py); cameras may be stored at different sizes
        frames = np.empty((len(self.cameras), self.size, self.size, 3), dtype=np.uint8)  # none: a state policy
        for j, c in enumerate(self.cameras):
            frames[j] = resize_images(self._handle(source, episode, c)[t][None], self.size)[0]
        if self.bytes + frames.nbytes <= self.max_bytes:
            self._cache[key] = frames
            self.bytes += frames.nbytes
        return frames

    def read(self, source: str, episodes: np.ndarray, ts: np.ndarray) -> dict[str, np.ndarray]:
        """camera -> uint8 (N, size, size, 3) frames of samples (episodes[i], ts[i]) of ``source``."""
        stack = np.empty((len(episodes), len(self.cameras), self.size, self.size, 3), dtype=np.uint8)
        for i, (e, t) in enumerate(zip(episodes.tolist(), ts.tolist(), strict=True)):
            stack[i] = self._frame(source, e, t)
        return {c: stack[:, j] for j, c in enumerate(self.cameras)}
