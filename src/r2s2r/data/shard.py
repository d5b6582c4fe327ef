"""Shard files: the HDF5 layout of episodes (``data/demo_<i>``) and crash-safe writing of a whole file.

Layout (what MimicGen, robomimic and Isaac Lab Mimic read)::

    data                      attrs: total (frames in this file)
    data/demo_<i>             attrs: num_samples (T), provenance (JSON text)
    data/demo_<i>/actions     (T, A)
    data/demo_<i>/states      (T, S)
    data/demo_<i>/obs/<key>   (T, ...)   images chunked (1, H, W, C), gzip level 1
    data/demo_<i>/datagen_info/...       optional, nested groups of (T, ...) arrays
    data/demo_<i>/extras/<name>          optional per-episode arrays (any shape), gzip level 1

Files carry no timestamps (``track_times=False``), so the same episodes give the same bytes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from r2s2r.atomic import temp_beside
from r2s2r.data.episode import Episode, datagen_leaves
from r2s2r.data.features import Feature
from r2s2r.data.provenance import Provenance

GZIP_LEVEL = 1


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Make a rename in ``folder`` durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_h5_atomic(path: Path, fill: Callable[[h5py.File], None]) -> str:
    """Build an HDF5 file with ``fill`` under a temporary name, fsync it, rename it to ``path``.

    Returns the sha256 of the file's bytes. A process killed at any moment leaves either no file at
    ``path`` or the complete one (plus possibly a ``.<name>.*.tmp`` file that the writer removes).
    """
    fd, tmp = temp_beside(path)
    os.close(fd)
    try:
        with h5py.File(tmp, "w", libver="earliest", track_order=False) as f:
            fill(f)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        sha = sha256_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return sha


def write_episode(data: h5py.Group, index: int, episode: Episode, features: tuple[Feature, ...]) -> None:
    """Write ``episode`` (already checked against ``features``) as ``data/demo_<index>``."""
    g = data.create_group(f"demo_{index}")
    arrays = episode.arrays()
    for f in features:
        kwargs: dict[str, Any] = {}
        if f.is_image:
            kwargs = dict(chunks=(1, *f.shape), compression="gzip", compression_opts=GZIP_LEVEL)
        g.create_dataset(f.name, data=arrays[f.name], track_times=False, **kwargs)
    for name, x in datagen_leaves(episode.datagen_info).items():
        g.create_dataset(name, data=x, track_times=False)
    for name in sorted(episode.extras):
        x = episode.extras[name]
        kwargs = dict(compression="gzip", compression_opts=GZIP_LEVEL) if x.size > 1024 else {}
        g.create_dataset(f"extras/{name}", data=x, track_times=False, **kwargs)
    g.attrs["num_samples"] = np.int64(episode.num_samples)
    g.attrs["provenance"] = episode.provenance.dumps()


def _read_tree(group: h5py.Group) -> dict[str, Any]:
    return {k: _read_tree(v) if isinstance(v, h5py.Group) else v[()] for k, v in group.items()}


def read_episode(group: h5py.Group, features: tuple[Feature, ...], provenance: Provenance) -> Episode:
    """The episode stored in ``group`` (``data/demo_<i>``), all arrays read into memory."""
    arrays = {f.name: group[f.name][()] for f in features}
    obs = {f.obs_key: arrays[f.name] for f in features if f.obs_key is not None}
    datagen = _read_tree(group["datagen_info"]) if "datagen_info" in group else {}
    extras = _read_tree(group["extras"]) if "extras" in group else {}
    return Episode(obs, arrays["actions"], arrays["states"], provenance, datagen, extras)
