"""Inputs and edits for the fuzz suite (``test_fuzz_inputs``): tiny intact inputs, one-line ways to
break them, and the command lines that read them."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from r2s2r.data import DatasetWriter, standard_features, synthetic_episode
from r2s2r.world.params import WorldParams

FEATS = standard_features(state_dim=4, image_size=(16, 16))
UNWRITABLE = Path("/sys/r2s2r-fuzz")  # mkdir fails there even for root (sysfs)
SHARD0, SHARD2 = "shard_000000.h5", "shard_000002.h5"  # episodes 0-1 and 2


@dataclass(frozen=True)
class Fx:
    """The intact inputs (shared, never modified) and a scratch folder of one case."""

    world: Path  # nominal WorldParams JSON
    real: Path  # three real episodes in two shards
    sim: Path  # two simulated episodes
    run: Path  # a run folder with one checkpoint (untrained tiny policy)
    tmp: Path

    def copy(self, which: str) -> Path:
        dst = self.tmp / which
        shutil.copytree(getattr(self, which), dst)
        return dst

    def file(self, name: str, text: str | bytes) -> Path:
        path = self.tmp / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return path

    def world_with(self, edit) -> Path:
        data = json.loads(self.world.read_text())
        edit(data)
        return self.file("world.json", json.dumps(data))


def write_dataset(path: Path, n: list[int], source: str, shard_episodes: int = 2) -> Path:
    with DatasetWriter(path, FEATS, 10.0, shard_episodes=shard_episodes) as w:
        for k, t in enumerate(n):
            w.add(synthetic_episode(FEATS, t, np.random.default_rng(k), key=k, source=source))
    return path


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 16] = bytes(b ^ 0xFF for b in data[mid : mid + 16])
    path.write_bytes(bytes(data))


def truncate(path: Path, keep: float = 0.5) -> None:
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])


def edit_manifest(ds: Path, edit) -> Path:
    path = ds / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return ds


def rerecord(ckpt: Path, name: str) -> None:
    """Record the current SHA-256 of checkpoint file ``name`` in its config (a consistent but bad file)."""
    meta = json.loads((ckpt / "config.json").read_text())
    meta["files"][name] = hashlib.sha256((ckpt / name).read_bytes()).hexdigest()
    (ckpt / "config.json").write_text(json.dumps(meta))


def edit_ckpt(fx: Fx, edit) -> Path:
    run = fx.copy("run")
    edit(run / "step_00000001")
    return run


def edit_config(ckpt: Path, edit) -> None:
    meta = json.loads((ckpt / "config.json").read_text())
    edit(meta)
    (ckpt / "config.json").write_text(json.dumps(meta))


def corrupt_sha(data: dict) -> None:
    data["shards"][SHARD2] = "0" * 64


def extra_shard(data: dict) -> None:
    data["shards"]["shard_000009.h5"] = "a" * 64


def unreadable_weights(ckpt: Path) -> None:
    truncate(ckpt / "model.safetensors")
    rerecord(ckpt, "model.safetensors")


# ---- the cases: (argv, strings the message must hold) ----------------------------------------------


def cell_argv(world: Path, fx: Fx) -> list[str]:
    return ["cell", "show", "--world", str(world), "--out", str(fx.tmp / "sheet.png")]


def gen_argv(fx: Fx, *extra: str, world: Path | None = None, behavior: str = "ungrounded") -> list[str]:
    out = ["generate", "--out", str(fx.tmp / "gen"), "--world", "ungrounded", "--behavior", behavior]
    return [*out, "--world-file", str(world or fx.world), "--n", "1", "--workers", "1", "--image-size", "16", *extra]


def train_argv(fx: Fx, real: Path, *extra: str, out: Path | None = None) -> list[str]:
    run = str(out or fx.tmp / "train-run")
    return ["train", "--real", str(real), "--out", run, "--preset", "tiny", "--steps", "1", "--threads", "1", *extra]


def eval_argv(fx: Fx, policy: Path | str, *extra: str) -> list[str]:
    return ["eval", "--policy", str(policy), "--out", str(fx.tmp / "eval"), "--workers", "1", *extra]


def study_argv(fx: Fx, *extra: str) -> list[str]:
    return ["study", "run", "--profile", "smoke", "--dry-run", "--out", str(fx.tmp / "study"), *extra]


def world_json(name: str):
    return lambda fx: fx.file("world.json", name)


def garbage_manifest(ds: Path) -> Path:
    (ds / "manifest.json").write_text('{"schema_version": 1,')
    return ds


def folder_manifest(ds: Path) -> Path:
    (ds / "manifest.json").unlink()
    (ds / "manifest.json").mkdir()
    return ds


def list_manifest(ds: Path) -> Path:
    (ds / "manifest.json").write_text("[]")
    return ds


def edit_shard(ds: Path, name: str, edit) -> Path:
    edit(ds / name)
    return ds


def replace_by_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def make_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def with_latest(run: Path, text: str) -> Path:
    (run / "latest").write_text(text)
    return run


def short_stats(ckpt: Path) -> None:
    stats = json.loads((ckpt / "stats.json").read_text())
    for entry in stats["features"].values() if "features" in stats else ():
        for key, value in entry.items():
            if isinstance(value, list):
                entry[key] = value[:3]
    (ckpt / "stats.json").write_text(json.dumps(stats))
    rerecord(ckpt, "stats.json")


def build_inputs(root: Path) -> dict[str, Path]:
    """The intact inputs under ``root``: a nominal world file, a real dataset (three episodes in two
    shards), a sim dataset, and a run folder holding one checkpoint of an untrained tiny policy."""
    from r2s2r.data import Dataset
    from r2s2r.data.stats import pooled_stats
    from r2s2r.policy.checkpoint import STATS_FILE, WEIGHTS, policy_meta, tensors_bytes, write_checkpoint
    from r2s2r.policy.model import FlowTransformer
    from r2s2r.policy.normalize import NORMALIZED
    from r2s2r.train import get_preset

    real = write_dataset(root / "real", [12, 14, 10], "real")
    sim = write_dataset(root / "sim", [9, 11], "sim")
    pc = get_preset("tiny").policy
    with Dataset(real) as ds:
        stats = pooled_stats([ds], NORMALIZED)
    files = {
        WEIGHTS: tensors_bytes(FlowTransformer(pc).state_dict()),
        STATS_FILE: (json.dumps(stats.to_json(), indent=1, sort_keys=True) + "\n").encode(),
    }
    write_checkpoint(root / "run", 1, policy_meta(pc), files)
    return {"world": WorldParams.nominal().save(root / "world.json"), "real": real, "sim": sim, "run": root / "run"}
