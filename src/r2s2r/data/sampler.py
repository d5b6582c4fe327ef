"""``WindowSampler``: training batches of (observation at t, action chunk t..t+horizon-1) from a dataset."""

from __future__ import annotations

from collections.abc import Sequence

import h5py
import numpy as np

from r2s2r.data.dataset import Dataset
from r2s2r.data.features import DEFAULT_CAMERAS
from r2s2r.errors import ConfigError, UnknownNameError

DEFAULT_OBS_KEYS = (*DEFAULT_CAMERAS, "proprio")


class WindowSampler:
    """Every (episode, t) pair of ``dataset`` (or of the given ``episodes``) as one sample.

    A batch holds ``obs/<key>`` at frame t (images uint8 (B, H, W, C), others as stored), ``actions``
    (B, horizon, A) for frames t..t+horizon-1 where frames past the episode end repeat its last action,
    ``action_pad_mask`` (B, horizon) bool, True where padded, and ``episode``/``t`` (B,) int64.
    Non-image arrays are held in memory; image frames are read from HDF5 one frame at a time.
    """

    def __init__(
        self,
        dataset: Dataset,
        horizon: int = 16,
        obs_keys: Sequence[str] = DEFAULT_OBS_KEYS,
        episodes: Sequence[int] | None = None,
    ) -> None:
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ConfigError(f"horizon: expected a positive integer, got {horizon!r}")
        feats = dataset.features
        known = tuple(f.obs_key for f in feats.values() if f.obs_key is not None)
        for key in obs_keys:
            if key not in known:
                raise UnknownNameError("observation key", key, known)
        self.dataset, self.horizon, self.obs_keys = dataset, horizon, tuple(obs_keys)
        self.episodes = np.asarray(range(len(dataset)) if episodes is None else episodes, dtype=np.int64)
        if len(self.episodes) == 0:
            raise ConfigError(f"{dataset.path}: no episodes to sample from")
        self._image_shapes = {k: feats[f"obs/{k}"].shape for k in self.obs_keys if feats[f"obs/{k}"].is_image}
        self._image_keys = list(self._image_shapes)
        lowdim = ["actions"] + [f"obs/{k}" for k in self.obs_keys if k not in self._image_keys]
        lengths = np.array([dataset.num_samples(int(e)) for e in self.episodes], dtype=np.int64)
        self._start = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # first flat frame of each listed episode
        self._length = lengths
        self._lowdim = {
            name: np.concatenate([dataset.group(int(e))[name][()] for e in self.episodes]) for name in lowdim
        }
        slot = np.repeat(np.arange(len(self.episodes)), lengths)
        t = np.arange(int(lengths.sum())) - self._start[slot]
        self.index = np.stack([self.episodes[slot], t], axis=1)  # (N, 2): (episode, t)
        self._slot = slot
        self._images: dict[tuple[int, str], h5py.Dataset] = {}

    def __len__(self) -> int:
        return len(self.index)

    def _image(self, slot: int, key: str) -> h5py.Dataset:
        ds = self._images.get((slot, key))
        if ds is None:
            ds = self._images[(slot, key)] = self.dataset.group(int(self.episodes[slot]))[f"obs/{key}"]
        return ds

    def sample(self, indices: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        """The batch of samples ``indices`` (positions in ``index``)."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.ndim != 1 or (len(idx) and (idx.min() < -len(self) or idx.max() >= len(self))):
            raise IndexError(f"sample indices must be a 1-D array in [0, {len(self)}), got {indices!r:.100}")
        idx = idx % len(self)
        slot, t = self._slot[idx], self.index[idx, 1]
        flat = self._start[slot] + t
        batch: dict[str, np.ndarray] = {"episode": self.index[idx, 0].copy(), "t": t.copy()}
        for key in self.obs_keys:
            if key in self._image_keys:
                out = np.empty((len(idx), *self._image_shapes[key]), dtype=np.uint8)
                for b, (s, tt) in enumerate(zip(slot.tolist(), t.tolist(), strict=True)):
                    out[b] = self._image(s, key)[tt]  # frame by frame: fancy indexing is 20-40x slower
                batch[f"obs/{key}"] = out
            else:
                batch[f"obs/{key}"] = self._lowdim[f"obs/{key}"][flat]
        steps = t[:, None] + np.arange(self.horizon)
        last = self._length[slot][:, None] - 1
        batch["action_pad_mask"] = steps > last
        batch["actions"] = self._lowdim["actions"][self._start[slot][:, None] + np.minimum(steps, last)]
        return batch

    def sample_random(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """A batch of ``batch_size`` samples drawn uniformly (with replacement) using ``rng``."""
        return self.sample(rng.integers(0, len(self), size=batch_size))
