"""``Dataset``: read access to a dataset folder (manifest + shard files), episode by episode or frame by frame."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py

from r2s2r.data.check import span
from r2s2r.data.episode import Episode
from r2s2r.data.features import Feature
from r2s2r.data.manifest import EpisodeEntry, Manifest
from r2s2r.data.provenance import Provenance
from r2s2r.data.shard import read_episode, sha256_file
from r2s2r.errors import R2S2RError

CHUNK_CACHE_BYTES = 1 << 17  # per open HDF5 dataset; random frame reads rarely hit a cache anyway


class Dataset:
    """A dataset folder opened for reading. Shard files are opened on first use and kept open until
    ``close()`` (or the end of a ``with`` block) for fast random access.

    Integrity on read: when this reader first opens a shard (once per shard per reader; training
    and generation keep one reader per dataset per process) it checks the file's sha256 against the
    manifest, the check ``r2s2r data check`` makes, so training or generation never reads a corrupt or
    modified shard. Measured cost (2-core shared CPU, page-cached 16-episode shards of 100 frames):
    ~1 ms per MB (0.9-1.0 GB/s), 30 ms for a 29 MB shard at 48 px and 120 ms for 105 MB at 96 px, 8 %
    of reading that shard's episodes once; nothing after. A 556 MB real dataset (100 demos at 96 px)
    costs ~0.6 s per process at start, against minutes to hours of training or generation.
    ``verify=False`` skips it (for tools that check shards themselves)."""

    def __init__(
        self, path: str | os.PathLike[str], chunk_cache_bytes: int = CHUNK_CACHE_BYTES, verify: bool = True
    ) -> None:
        self.path = Path(path)
        self.manifest = Manifest.load(self.path)
        self._chunk_cache_bytes = chunk_cache_bytes
        self._verify = verify
        self._files: dict[str, h5py.File] = {}

    # ---- metadata --------------------------------------------------------------------------------

    @property
    def features(self) -> dict[str, Feature]:
        """Feature name (``actions``, ``states``, ``obs/<key>``) -> Feature."""
        return {f.name: f for f in self.manifest.features}

    @property
    def info(self) -> dict[str, Any]:
        return self.manifest.info

    @property
    def control_rate_hz(self) -> float:
        return self.manifest.control_rate_hz

    @property
    def num_frames(self) -> int:
        return self.manifest.num_frames

    def __len__(self) -> int:
        return len(self.manifest.episodes)

    def entry(self, i: int) -> EpisodeEntry:
        n = len(self.manifest.episodes)
        if not -n <= i < n:
            raise IndexError(f"episode {i} out of range for a dataset of {n} episodes ({self.path})")
        return self.manifest.episodes[i]

    def provenance(self, i: int) -> Provenance:
        return self.entry(i).provenance

    def num_samples(self, i: int) -> int:
        return self.entry(i).num_samples

    # ---- data ------------------------------------------------------------------------------------

    def _file(self, shard: str) -> h5py.File:
        f = self._files.get(shard)
        if f is None:
            path = self.path / shard
            held = span(self.manifest.shard_episodes(shard))
            try:
                if self._verify and sha256_file(path) != self.manifest.shards[shard]:
                    raise R2S2RError(
                        f"{path}: sha256 differs from the manifest (corrupt or modified shard holding episodes "
                        f"{held}); expected the bytes the manifest records: restore the file or regenerate the "
                        f"dataset (`r2s2r data check {self.path}` lists every bad shard)"
                    )
                f = h5py.File(path, "r", rdcc_nbytes=self._chunk_cache_bytes)
            except (OSError, ValueError) as e:
                raise R2S2RError(
                    f"{path}: cannot open shard holding episodes {held} ({e}); "
                    "run check_dataset, or reopen the dataset if a writer compacted it meanwhile"
                ) from None
            self._files[shard] = f
        return f

    def group(self, i: int) -> h5py.Group:
        """The open HDF5 group ``data/demo_<i>`` (index its datasets frame by frame: ``ds[t]``)."""
        e = self.entry(i)
        f = self._file(e.shard)
        try:
            return f[e.group]
        except KeyError:
            raise R2S2RError(f"{self.path / e.shard}: has no group {e.group!r} (episode {e.index})") from None

    def episode(self, i: int) -> Episode:
        """Episode ``i`` with all its arrays read into memory."""
        return read_episode(self.group(i), self.manifest.features, self.entry(i).provenance)

    def episodes(self) -> Iterator[Episode]:
        """Episodes in index order, each read when the iteration reaches it."""
        for i in range(len(self)):
            yield self.episode(i)

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r}, episodes={len(self)}, frames={self.num_frames})"
