"""Training sources: the real dataset and the sim datasets, checked against the policy they train."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r.data.dataset import Dataset
from r2s2r.data.object_state import OBJECT_STATE
from r2s2r.data.sampler import WindowSampler
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.policy.config import PolicyConfig
from r2s2r.train.validation import lowdim_keys, split_episodes


@dataclass(eq=False)
class Sources:
    """Open datasets ("real", then "sim0", "sim1", ...) with one window sampler each."""

    datasets: dict[str, Dataset]
    samplers: dict[str, WindowSampler]
    held_out: np.ndarray  # real episodes kept out of training (see r2s2r.train.validation)

    def describe(self) -> list[dict[str, Any]]:
        """Per source: name, path, manifest content hash, episodes, frames (recorded in checkpoints)."""
        return [
            {
                "name": name,
                "path": str(ds.path.resolve()),
                "content_hash": ds.manifest.content_hash(),
                "episodes": len(ds),
                "frames": ds.num_frames,
                **({"held_out": self.held_out.tolist()} if name == "real" else {}),
            }
            for name, ds in self.datasets.items()
        ]

    def close(self) -> None:
        for ds in self.datasets.values():
            ds.close()


def check_dataset_fits(ds: Dataset, config: PolicyConfig, role: str) -> None:
    """R2S2RError naming the dataset and feature when ``ds`` cannot train ``config``."""
    feats = ds.features
    for cam in config.cameras:
        f = feats.get(f"obs/{cam}")
        if f is None or not f.is_image or f.shape[2] != 3:
            have = sorted(k[4:] for k, v in feats.items() if v.is_image)
            raise ConfigError(f"{ds.path}: needs RGB camera {cam!r} for this policy; the dataset has {have}")
    for name, dim in (("obs/proprio", config.proprio_dim), ("actions", config.action_dim)):
        f = feats.get(name)
        if f is None or f.shape != (dim,):
            got = "none" if f is None else f.shape
            raise ConfigError(f"{ds.path}: feature {name} of shape ({dim},) expected, got {got}")
    if len(ds) == 0:
        raise ConfigError(f"{ds.path}: no episodes to train on")
    wrong = [i for i in range(len(ds)) if ds.provenance(i).source != role]
    if wrong:
        raise ConfigError(
            f"{ds.path}: given as a {role} dataset but episode(s) {wrong[:5]} have provenance source "
            f"{ds.provenance(wrong[0]).source!r}"
        )


def resize_note(ds: Dataset, config: PolicyConfig) -> str | None:
    """A warning when ``ds`` stores camera frames at another size than the policy's: training resizes
    them (area averaging), while evaluation renders the lab at the policy's size, a few grey levels
    apart. None when the sizes agree."""
    sizes = {ds.features[f"obs/{c}"].shape[0] for c in config.cameras}
    if sizes <= {config.image_size}:  # the same size, or no camera at all
        return None
    return (
        f"{ds.path}: camera frames stored at {sorted(sizes)} px are resized to the policy's {config.image_size} px; "
        f"the lab renders {config.image_size} px frames for the policy, which differ by a few grey levels "
        f"(record demonstrations with --image-size {config.image_size})"
    )


def open_sources(
    real: Path, sims: Sequence[Path], config: PolicyConfig, holdout: float = 0.0, seed: int = 0
) -> Sources:
    """Open and check the real dataset and the sim datasets (no folder twice); a ``holdout`` share of
    the real episodes (drawn by ``seed``) is left out of the real sampler."""
    paths = [Path(real), *map(Path, sims)]
    resolved = [p.resolve() for p in paths]
    dup = sorted({str(p) for p in resolved if resolved.count(p) > 1})
    if dup:
        raise ConfigError(f"datasets given more than once: {dup}")
    names = ["real", *(f"sim{i}" for i in range(len(sims)))]
    datasets: dict[str, Dataset] = {}
    try:
        for name, path in zip(names, paths, strict=True):
            if not path.is_dir():
                raise ConfigError(f"--{'real' if name == 'real' else 'sim'} {path}: no such dataset folder")
            datasets[name] = ds = Dataset(path)
            check_dataset_fits(ds, config, "real" if name == "real" else "sim")
        # images are read by the batch loader's FrameReader (resized once, cached); the samplers give
        # the (episode, t) index, proprio and the action windows
        train_eps, held = split_episodes(len(datasets["real"]), holdout, seed)
        samplers = {
            n: WindowSampler(
                ds, config.action_horizon, lowdim_keys(ds, config), episodes=train_eps if n == "real" else None
            )
            for n, ds in datasets.items()
        }
        if config.object_state and not any(OBJECT_STATE in s.obs_keys for s in samplers.values()):
            raise ConfigError(
                f"PolicyConfig.object_state: no dataset carries obs/{OBJECT_STATE} labels "
                "(label demonstrations with 'r2s2r demos label')"
            )
    except R2S2RError:
        for ds in datasets.values():
            ds.close()
        raise
    return Sources(datasets, samplers, held)
