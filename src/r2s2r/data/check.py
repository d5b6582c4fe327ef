"""``check_dataset``: verify a dataset folder (manifest, shard checksums, every episode's layout)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from r2s2r.data.manifest import SHARD_NAME, EpisodeEntry, Manifest
from r2s2r.data.object_state import MAY_BE_UNKNOWN
from r2s2r.data.provenance import Provenance
from r2s2r.data.shard import sha256_file
from r2s2r.errors import R2S2RError


def span(indices: list[int]) -> str:
    """``0-15`` / ``3`` / ``(none)``: the episodes a shard holds, compactly (they are consecutive)."""
    if not indices:
        return "(none)"
    return str(indices[0]) if len(indices) == 1 else f"{indices[0]}-{indices[-1]}"


@dataclass(frozen=True)
class ShardReport:
    name: str
    episodes: tuple[int, ...]
    num_frames: int
    num_bytes: int
    problem: str | None  # None when the shard is intact


@dataclass(frozen=True)
class CheckReport:
    path: Path
    schema_version: int
    num_episodes: int
    num_frames: int
    shards: tuple[ShardReport, ...]
    orphans: tuple[str, ...]  # shard-like files the manifest does not name (a writer removes them on reopen)

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(s.problem for s in self.shards if s.problem is not None)

    @property
    def ok(self) -> bool:
        return not self.problems


def _check_episode(g: h5py.Group, e: EpisodeEntry, manifest: Manifest) -> str | None:
    n = int(g.attrs.get("num_samples", -1))
    if n != e.num_samples:
        return f"{e.group}: num_samples {n if n >= 0 else 'missing'}; manifest says {e.num_samples}"
    try:
        prov = Provenance.from_json(json.loads(g.attrs["provenance"]))
    except (KeyError, ValueError, R2S2RError) as err:
        return f"{e.group}: provenance attribute unreadable ({err})"
    if prov != e.provenance:
        return f"{e.group}: provenance differs from the manifest's"
    for f in manifest.features:
        ds = g.get(f.name)
        if not isinstance(ds, h5py.Dataset):
            return f"{e.group}: missing dataset {f.name}"
        want = (e.num_samples, *f.shape)
        if ds.shape != want or ds.dtype != np.dtype(f.dtype):
            return f"{e.group}/{f.name}: {ds.shape} {ds.dtype}; expected {want} {f.dtype}"
        x = ds[()] if not f.is_image and ds.dtype.kind == "f" else None
        if x is not None and not (np.isfinite(x) | (np.isnan(x) & (f.name in MAY_BE_UNKNOWN))).all():
            return f"{e.group}/{f.name}: non-finite values" + (" other than NaN" if f.name in MAY_BE_UNKNOWN else "")
    if "datagen_info" in g:
        leaves: list[h5py.Dataset] = []
        g["datagen_info"].visititems(lambda _, obj: leaves.append(obj) if isinstance(obj, h5py.Dataset) else None)
        for ds in leaves:
            if ds.ndim < 1 or ds.shape[0] != e.num_samples:
                return f"{ds.name}: shape {ds.shape}; expected {e.num_samples} frames"
    return None


def _check_shard(path: Path, sha: str, entries: list[EpisodeEntry], manifest: Manifest) -> str | None:
    if not path.is_file():
        return f"{path.name}: missing"
    if sha256_file(path) != sha:
        return f"{path.name}: sha256 differs from the manifest (corrupt or modified)"
    try:
        with h5py.File(path, "r") as f:
            data = f.get("data")
            if not isinstance(data, h5py.Group):
                return f"{path.name}: no group 'data'"
            total = sum(e.num_samples for e in entries)
            stored = int(data.attrs.get("total", -1))
            if stored != total:
                return f"{path.name}: data attr total {stored if stored >= 0 else 'missing'}; expected {total}"
            names = sorted(data)
            want = sorted(e.group.split("/")[1] for e in entries)
            if names != want:
                return f"{path.name}: holds groups {names[:8]}; expected {want[:8]}"
            for e in entries:
                problem = _check_episode(data[e.group.split("/")[1]], e, manifest)
                if problem:
                    return f"{path.name}: {problem}"
    except (OSError, KeyError, ValueError) as err:
        return f"{path.name}: unreadable HDF5 ({err})"
    return None


def check_dataset(path: str | os.PathLike[str], raise_on_error: bool = True) -> CheckReport:
    """Verify the manifest, every shard's sha256, and each episode's datasets (shapes, dtypes,
    ``num_samples``, provenance). A bad shard raises R2S2RError naming the file and the episodes it
    holds (or, with ``raise_on_error=False``, is reported in ``CheckReport.problems``)."""
    path = Path(path)
    manifest = Manifest.load(path)
    shards = []
    for name, sha in sorted(manifest.shards.items()):
        entries = [e for e in manifest.episodes if e.shard == name]
        problem = _check_shard(path / name, sha, entries, manifest)
        if problem:
            problem = f"{problem} [episodes {span([e.index for e in entries])}]"
        size = (path / name).stat().st_size if (path / name).is_file() else 0
        shards.append(
            ShardReport(name, tuple(e.index for e in entries), sum(e.num_samples for e in entries), size, problem)
        )
    orphans = tuple(
        sorted(p.name for p in path.iterdir() if SHARD_NAME.match(p.name) and p.name not in manifest.shards)
    )
    report = CheckReport(
        path, manifest.schema_version, len(manifest.episodes), manifest.num_frames, tuple(shards), orphans
    )
    if raise_on_error and not report.ok:
        raise R2S2RError(f"{path}: dataset check failed:\n  " + "\n  ".join(report.problems))
    return report
