"""``DatasetWriter``: crash-safe, resumable writing of episodes into a dataset folder.

Every ``add`` writes the episode to its own staging file ``stage_<i>.h5`` (temporary name, fsync,
rename) and then rewrites ``manifest.json`` atomically to list it: the episode is durable when
``add`` returns. When ``shard_episodes`` staged episodes have accumulated (and on ``close``) they
are copied into one sealed ``shard_<first>.h5`` (temporary name, fsync, rename), the manifest is
atomically switched to the shard, and only then are the staging files deleted. The manifest is
the single source of truth: at every instant it names complete files only, so a writer killed at
any moment leaves a dataset holding exactly the episodes whose ``add`` returned. Reopening removes
files the manifest does not name (temporary files, orphaned staging or shard files) and resumes.
Every file's ``data`` group carries robomimic's ``env_args`` (``r2s2r.data.robomimic``).
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from r2s2r.data.episode import Episode, check_episode
from r2s2r.data.features import Feature, canonical_features
from r2s2r.data.manifest import MANIFEST, SHARD_NAME, EpisodeEntry, Manifest, group_name
from r2s2r.data.provenance import plain_json
from r2s2r.data.robomimic import ENV_ARGS, env_args_json
from r2s2r.data.shard import fsync_dir, sha256_file, write_episode, write_h5_atomic
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.files import output_dir

LOCK = ".writer.lock"
_TEMP = re.compile(r"^\.(manifest\.json|(stage|shard)_\d+\.h5)\..*\.tmp$")


def _feature_mismatch(stored: tuple[Feature, ...], given: tuple[Feature, ...]) -> str:
    s, g = {f.name: f for f in stored}, {f.name: f for f in given}
    parts = []
    if set(s) - set(g):
        parts.append(f"stored only: {sorted(set(s) - set(g))}")
    if set(g) - set(s):
        parts.append(f"given only: {sorted(set(g) - set(s))}")
    for name in sorted(set(s) & set(g)):
        if s[name] != g[name]:
            a, b = s[name], g[name]
            parts.append(f"{name}: stored {a.shape} {a.dtype} [{a.unit}], given {b.shape} {b.dtype} [{b.unit}]")
    return "; ".join(parts)


class DatasetWriter:
    """Append episodes to the dataset at ``path``, creating it or resuming it.

    >>> with DatasetWriter(path, standard_features(state_dim=40), control_rate_hz=10.0) as w:
    ...     for k in range(n):
    ...         if k not in w.keys():
    ...             w.add(make_episode(k))  # provenance.key = k
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        features: Iterable[Feature],
        control_rate_hz: float,
        info: dict[str, Any] | None = None,
        shard_episodes: int = 16,
    ) -> None:
        if isinstance(shard_episodes, bool) or not isinstance(shard_episodes, int) or shard_episodes < 1:
            raise ConfigError(f"shard_episodes: expected a positive integer, got {shard_episodes!r}")
        self.path = Path(path)
        self.shard_episodes = shard_episodes
        features = canonical_features(features)  # bad input fails before anything is created
        Manifest(features, control_rate_hz, info or {})
        output_dir(self.path, "a dataset folder")
        self._lock = self._acquire_lock()
        try:
            self._manifest = self._open(features, control_rate_hz, info)
        except BaseException:
            self._release_lock()
            raise
        self._keys = {e.provenance.key for e in self._manifest.episodes if e.provenance.key is not None}
        self._closed = False
        self._seal_if_full()

    # ---- opening and resuming -------------------------------------------------------------------

    def _acquire_lock(self) -> int:
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise R2S2RError(f"{self.path}: another DatasetWriter has this dataset open") from None
        return fd

    def _release_lock(self) -> None:
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        os.close(self._lock)

    def _open(self, features: tuple[Feature, ...], rate: float, info: dict[str, Any] | None) -> Manifest:
        if not (self.path / MANIFEST).exists():
            stray = sorted(p.name for p in self.path.iterdir() if SHARD_NAME.match(p.name))
            if stray:
                raise R2S2RError(f"{self.path}: holds shard files {stray[:5]} but no {MANIFEST}; refusing to reuse it")
            manifest = Manifest(features, rate, info or {})
            manifest.save(self.path)
            fsync_dir(self.path)
        else:
            manifest = Manifest.load(self.path)
            where = self.path / MANIFEST
            if manifest.features != features:
                raise R2S2RError(f"{where}: features differ ({_feature_mismatch(manifest.features, features)})")
            if manifest.control_rate_hz != float(rate):
                raise R2S2RError(f"{where}: control_rate_hz is {manifest.control_rate_hz}, given {rate}")
            if info is not None and plain_json(info, "info") != manifest.info:
                raise R2S2RError(f"{where}: info differs from the stored info {manifest.info!r:.300}")
        self._remove_unreferenced(manifest)
        for name in manifest.shards:
            if not (self.path / name).is_file():
                held = manifest.shard_episodes(name)
                raise R2S2RError(f"{self.path / name}: missing; it holds episodes {held[0]}-{held[-1]}")
        return manifest

    def _remove_unreferenced(self, manifest: Manifest) -> None:
        for p in self.path.iterdir():
            if (SHARD_NAME.match(p.name) and p.name not in manifest.shards) or _TEMP.match(p.name):
                p.unlink(missing_ok=True)

    # ---- writing ---------------------------------------------------------------------------------

    @property
    def features(self) -> tuple[Feature, ...]:
        return self._manifest.features

    @property
    def manifest(self) -> Manifest:
        return self._manifest

    def __len__(self) -> int:
        return len(self._manifest.episodes)

    def keys(self) -> set[int]:
        """Provenance keys of the stored episodes: skip these when resuming a run."""
        return set(self._keys)

    def add(self, episode: Episode) -> int:
        """Store ``episode`` durably; returns its index. Bad input raises ConfigError, a duplicate key R2S2RError."""
        if self._closed:
            raise R2S2RError(f"{self.path}: the writer is closed")
        check_episode(episode, self._manifest.features)
        key = episode.provenance.key
        if key is not None and key in self._keys:
            raise R2S2RError(f"{self.path}: an episode with provenance key {key} is already stored")
        index = len(self._manifest.episodes)
        name = f"stage_{index:06d}.h5"

        def fill(f: h5py.File) -> None:
            data = f.create_group("data")
            write_episode(data, index, episode, self._manifest.features)
            data.attrs["total"] = np.int64(episode.num_samples)
            data.attrs[ENV_ARGS] = env_args_json(self._manifest)

        sha = write_h5_atomic(self.path / name, fill)
        entry = EpisodeEntry(index, name, group_name(index), episode.num_samples, episode.provenance)
        m = self._manifest
        self._commit(dataclasses.replace(m, episodes=(*m.episodes, entry), shards={**m.shards, name: sha}))
        if key is not None:
            self._keys.add(key)
        self._seal_if_full()
        return index

    def _commit(self, manifest: Manifest) -> None:
        manifest.save(self.path)
        fsync_dir(self.path)
        self._manifest = manifest

    def _staged(self) -> list[EpisodeEntry]:
        return [e for e in self._manifest.episodes if e.shard.startswith("stage_")]

    def _seal_if_full(self) -> None:
        staged = self._staged()
        for start in range(0, len(staged) - self.shard_episodes + 1, self.shard_episodes):
            self._seal(staged[start : start + self.shard_episodes])

    def _seal(self, entries: list[EpisodeEntry]) -> None:
        """Copy staged episodes into one shard, switch the manifest to it, then delete the staging files."""
        m = self._manifest
        for e in entries:
            if sha256_file(self.path / e.shard) != m.shards[e.shard]:
                raise R2S2RError(f"{self.path / e.shard}: sha256 differs from the manifest (episode {e.index})")
        name = f"shard_{entries[0].index:06d}.h5"

        def fill(f: h5py.File) -> None:
            data = f.create_group("data")
            for e in entries:
                with h5py.File(self.path / e.shard, "r") as src:
                    src.copy(src[e.group], data, name=f"demo_{e.index}")
            data.attrs["total"] = np.int64(sum(e.num_samples for e in entries))
            data.attrs[ENV_ARGS] = env_args_json(m)

        sha = write_h5_atomic(self.path / name, fill)
        moved = {e.index for e in entries}
        episodes = tuple(dataclasses.replace(e, shard=name) if e.index in moved else e for e in m.episodes)
        shards = {k: v for k, v in m.shards.items() if k not in {e.shard for e in entries}} | {name: sha}
        self._commit(dataclasses.replace(m, episodes=episodes, shards=shards))
        for e in entries:
            (self.path / e.shard).unlink(missing_ok=True)

    # ---- closing ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Seal the remaining staged episodes into a (possibly smaller) shard and release the folder."""
        if self._closed:
            return
        try:
            staged = self._staged()
            if staged:
                self._seal(staged)
        finally:
            self._closed = True
            self._release_lock()

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
