"""Checkpoint folders: written atomically by training, read (and verified) by ``load_policy``.

A run folder holds ``step_<NNNNNNNN>/`` checkpoints, a ``latest`` file naming the newest one and,
when the run validates on held-out demonstrations, a ``best`` file naming the latest checkpoint whose
held-out open-loop error is within ``TrainConfig.best_tolerance`` of the lowest (kept when older
checkpoints are removed)::

    run/latest                     "step_00004000"
    run/best                       "step_00003000"
    run/step_00004000/config.json  format, version, step, policy config, training metadata, sha256 of every file
    run/step_00004000/stats.json   normalisation statistics (actions, obs/proprio)
    run/step_00004000/model.safetensors   the policy's (EMA) weights
    run/step_00004000/...          training state (train.safetensors, train_state.json)

A checkpoint is written into a temporary folder, fsynced and renamed into place; only then is
``latest`` rewritten atomically. A run killed at any moment leaves ``latest`` naming a complete
checkpoint. ``config.json`` is written last and lists the SHA-256 of every other file, so a
corrupt or edited file is detected on load.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from r2s2r import atomic
from r2s2r.data.shard import fsync_dir
from r2s2r.data.stats import Stats
from r2s2r.dataclass_json import from_jsonable, to_jsonable
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.files import output_dir, read_bytes, read_json, read_text
from r2s2r.policy.config import PolicyConfig
from r2s2r.policy.model import FlowTransformer
from r2s2r.policy.normalize import Normalizer, normalized_dims
from r2s2r.policy.policy import Policy

FORMAT, VERSION = "r2s2r-policy", 1
CONFIG, STATS_FILE, WEIGHTS, LATEST, BEST = "config.json", "stats.json", "model.safetensors", "latest", "best"
_STEP = re.compile(r"^step_(\d{8})$")


def step_name(step: int) -> str:
    return f"step_{step:08d}"


def tensors_bytes(tensors: dict[str, torch.Tensor]) -> bytes:
    """safetensors bytes of CPU copies of ``tensors``."""
    return st_save({k: v.detach().cpu().contiguous().clone() for k, v in tensors.items()})


def _fsync_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(path, 0o644)


def write_checkpoint(run_dir: Path, step: int, meta: dict[str, Any], files: dict[str, bytes], keep: int = 2) -> Path:
    """Write checkpoint ``step`` of ``run_dir`` atomically, point ``latest`` at it and remove all but
    the newest ``keep`` checkpoints. ``meta`` goes into config.json with the files' SHA-256."""
    run_dir = output_dir(run_dir, "a training run folder")
    final = run_dir / step_name(step)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=run_dir))
    try:
        for name, data in files.items():
            _fsync_file(tmp / name, data)
        digests = {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}
        config = {"format": FORMAT, "version": VERSION, "step": step, **meta, "files": digests}
        _fsync_file(tmp / CONFIG, (json.dumps(config, indent=2, sort_keys=True) + "\n").encode())
        os.chmod(tmp, 0o755)
        fsync_dir(tmp)
        if final.exists():  # left by a run killed before it updated ``latest``: not referenced
            shutil.rmtree(final)
        os.rename(tmp, final)
        fsync_dir(run_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    atomic.write_text(run_dir / LATEST, final.name + "\n")
    best = _named(run_dir, BEST)
    for old in sorted(p for p in run_dir.iterdir() if _STEP.match(p.name))[:-keep]:
        if old != final and old.name != best:
            shutil.rmtree(old)
    return final


def mark_best(run_dir: Path, checkpoint: Path, keep: int = 2) -> None:
    """Name ``checkpoint`` (a step folder of ``run_dir``) the run's best, atomically; the previous
    best folder is removed unless it is among the newest ``keep`` checkpoints."""
    previous = _named(run_dir, BEST)
    atomic.write_text(Path(run_dir) / BEST, Path(checkpoint).name + "\n")
    if previous and previous != Path(checkpoint).name:
        kept = sorted(p.name for p in Path(run_dir).iterdir() if _STEP.match(p.name))
        if previous in kept[:-keep]:
            shutil.rmtree(Path(run_dir) / previous, ignore_errors=True)


def _named(run_dir: Path, pointer: str) -> str | None:
    path = Path(run_dir) / pointer
    if not path.is_file():
        return None
    name = read_text(path, f"the name of the {pointer} checkpoint").strip()
    if not _STEP.match(name):
        raise R2S2RError(f"{path}: expected a checkpoint name like step_00000100, got {name!r:.60}")
    return name


def clean_run_dir(run_dir: Path) -> None:
    """Remove temporary checkpoint folders a killed run left in ``run_dir``."""
    for p in Path(run_dir).glob(".step_*.tmp"):
        shutil.rmtree(p, ignore_errors=True)


def resolve_checkpoint(path: Path, best: bool = False) -> Path:
    """The checkpoint folder ``path`` names: a run folder (its ``latest``, or with ``best`` its
    ``best`` when it has one) or a ``step_*`` folder."""
    path = Path(path)
    name = (_named(path, BEST) if best else None) or _named(path, LATEST)
    if name is not None:
        path = path / name
    if not (path / CONFIG).is_file():
        raise R2S2RError(f"{path}: not a checkpoint folder (no {CONFIG} and no {LATEST} file)")
    return path


def read_checkpoint(path: Path, verify: Iterable[str] | None = None, best: bool = False) -> tuple[Path, dict[str, Any]]:
    """(checkpoint folder, config.json contents) of ``path`` (see ``resolve_checkpoint``); the
    SHA-256 of the files in ``verify`` (default: all listed) is checked. Missing, corrupt or
    foreign files raise R2S2RError."""
    ckpt = resolve_checkpoint(path, best)
    meta = read_json(ckpt / CONFIG, "the checkpoint config JSON a training run writes")
    if meta.get("format") != FORMAT:
        raise R2S2RError(f"{ckpt / CONFIG}: not an r2s2r policy checkpoint (expected format {FORMAT!r})")
    if meta.get("version") != VERSION:
        raise R2S2RError(f"{ckpt / CONFIG}: checkpoint version {meta.get('version')!r}, this r2s2r reads {VERSION}")
    files = meta.get("files")
    if not isinstance(files, dict):
        raise R2S2RError(f"{ckpt / CONFIG}: no 'files' table of SHA-256 digests")
    for name in files if verify is None else verify:
        if name not in files:
            raise R2S2RError(f"{ckpt / CONFIG}: lists no file {name!r}; expected {sorted(files)}")
        p = ckpt / name
        if not p.is_file():
            raise R2S2RError(f"{p}: missing from the checkpoint")
        if hashlib.sha256(read_bytes(p, f"the checkpoint file {name}")).hexdigest() != files[name]:
            raise R2S2RError(f"{p}: SHA-256 differs from the one recorded in {CONFIG} (corrupt or modified)")
    return ckpt, meta


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    data = read_bytes(path, "a safetensors weights file")
    try:
        return st_load(data)
    except (SafetensorError, ValueError) as e:
        raise R2S2RError(f"{path}: not a readable safetensors file ({e})") from None


def policy_config(meta: dict[str, Any], where: Path) -> PolicyConfig:
    try:
        return from_jsonable(PolicyConfig, meta.get("policy"), "policy")
    except ConfigError as e:
        raise R2S2RError(f"{where / CONFIG}: {e}") from None


def read_stats(ckpt: Path) -> Stats:
    data = read_json(ckpt / STATS_FILE, "the normalisation statistics JSON of a checkpoint")
    return Stats.from_json(data, str(ckpt / STATS_FILE))


def check_state(own: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor], where: Path) -> None:
    """R2S2RError unless ``tensors`` has exactly the names and shapes of state dict ``own``."""
    missing, unexpected = sorted(set(own) - set(tensors)), sorted(set(tensors) - set(own))
    wrong = [k for k in own if k in tensors and tuple(own[k].shape) != tuple(tensors[k].shape)]
    if missing or unexpected or wrong:
        shapes = [f"{k}: {tuple(tensors[k].shape)} vs {tuple(own[k].shape)}" for k in wrong[:3]]
        raise R2S2RError(
            f"{where}: weights do not match the configured model (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]}, shape mismatches {shapes})"
        )


def load_state(module: torch.nn.Module, tensors: dict[str, torch.Tensor], where: Path) -> None:
    """Load ``tensors`` into ``module`` strictly; names or shapes that differ raise R2S2RError."""
    check_state(module.state_dict(), tensors, where)
    module.load_state_dict(tensors, strict=True)


def policy_meta(config: PolicyConfig) -> dict[str, Any]:
    """The config.json entries the policy is rebuilt from (cameras and image size included)."""
    return {"policy": to_jsonable(config)}


def load_policy(path: Path, device: str = "cpu", best: bool = True) -> Policy:
    """The policy of a checkpoint: a run folder (its ``best`` checkpoint when the run validated on
    held-out demonstrations and ``best`` is true, else its latest) or a ``step_*`` folder.

    Raises R2S2RError when a file is missing, corrupt (SHA-256), or does not match the recorded
    policy config (weights' names and shapes, statistics' dimensions)."""
    ckpt, meta = read_checkpoint(path, verify=(WEIGHTS, STATS_FILE), best=best)
    config = policy_config(meta, ckpt)
    model = FlowTransformer(config)
    load_state(model, read_tensors(ckpt / WEIGHTS), ckpt / WEIGHTS)
    try:
        normalizer = Normalizer(read_stats(ckpt), config.normalization, normalized_dims(config))
    except ConfigError as e:
        raise R2S2RError(f"{ckpt / STATS_FILE}: {e}") from None
    return Policy(config, model, normalizer, device)
