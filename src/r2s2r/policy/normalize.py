"""``Normalizer``: actions and proprio mapped to the policy's normalised space and back (torch)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import torch

from r2s2r.data.dataset import Dataset
from r2s2r.data.stats import FeatureStats, Stats, feature_stats
from r2s2r.errors import ConfigError
from r2s2r.policy.config import PolicyConfig

ACTIONS, PROPRIO = "actions", "obs/proprio"
NORMALIZED = (ACTIONS, PROPRIO)
ARM_DIMS = 7  # actions and proprio start with the arm's 7 joints (rad), then the hand's
DELTA_ROWS = 200_000  # chunk actions sampled (evenly over frames) for the delta statistics


def normalized_dims(config: PolicyConfig) -> dict[str, int]:
    return {ACTIONS: config.action_dim, PROPRIO: config.proprio_dim}


class Normalizer:
    """``normalize(name, x)`` = (x - center) / scale with the center and scale of ``stats`` in
    ``mode`` ("zscore": mean, std; "quantile": [q01, q99] -> [-1, 1]), per dimension, in float32 on
    the device of x; ``unnormalize`` inverts it. The same ``Stats`` are saved in the checkpoint."""

    def __init__(self, stats: Stats, mode: str, dims: dict[str, int]) -> None:
        """``dims``: feature name -> expected dimension (see ``normalized_dims``)."""
        self.stats, self.mode = stats, mode
        self._np: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in NORMALIZED:
            if name not in stats.features:
                raise ConfigError(f"normalisation stats: missing feature {name!r}; expected {list(NORMALIZED)}")
            center, scale = stats.features[name].center_scale(mode)
            if center.shape != (dims[name],):
                raise ConfigError(f"normalisation stats: {name} has shape {center.shape}, expected ({dims[name]},)")
            self._np[name] = (center.astype(np.float32), scale.astype(np.float32))
        self._torch: dict[tuple[str, torch.device], tuple[torch.Tensor, torch.Tensor]] = {}

    def _get(self, name: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        key = (name, device)
        if key not in self._torch:
            center, scale = self._np[name]
            self._torch[key] = (torch.from_numpy(center).to(device), torch.from_numpy(scale).to(device))
        return self._torch[key]

    def normalize(self, name: str, x: torch.Tensor) -> torch.Tensor:
        center, scale = self._get(name, x.device)
        return (x.float() - center) / scale

    def unnormalize(self, name: str, x: torch.Tensor) -> torch.Tensor:
        center, scale = self._get(name, x.device)
        return x.float() * scale + center


def policy_stats(config: PolicyConfig, datasets: Sequence[Dataset], pooled: Stats) -> Stats:
    """The statistics a policy of ``config`` normalises with: ``pooled`` (over the frames of
    ``datasets``), its ``actions`` replaced by those of the delta chunks with ``delta_arm``."""
    if not config.delta_arm:
        return pooled
    feats = {**pooled.features, ACTIONS: _delta_chunk_stats(datasets, config.action_horizon)}
    return dataclasses.replace(pooled, features=feats)


def _delta_chunk_stats(datasets: Sequence[Dataset], horizon: int) -> FeatureStats:
    """Statistics of the chunk entries a delta-arm policy predicts: a[t + i] - q[t] on the arm,
    a[t + i] on the hand (0 <= i < horizon, t + i inside the episode), over an even sample of t."""
    lengths = [ds.group(i)[ACTIONS].shape[0] for ds in datasets for i in range(len(ds))]
    stride = max(1, -(-sum(lengths) * horizon // DELTA_ROWS))  # ceil: at most DELTA_ROWS rows
    rows = []
    for ds in datasets:
        for e in range(len(ds)):
            g = ds.group(e)
            a, q = g[ACTIONS][()].astype(np.float64), g[PROPRIO][()].astype(np.float64)
            t = np.arange(0, len(a), stride)
            idx = t[:, None] + np.arange(horizon)[None]
            ok = idx < len(a)
            chunk = a[np.minimum(idx, len(a) - 1)]
            chunk[..., :ARM_DIMS] -= q[t, None, :ARM_DIMS]
            rows.append(chunk[ok])
    return feature_stats(np.concatenate(rows))


def encode_actions(
    config: PolicyConfig, norm: Normalizer, actions: torch.Tensor, proprio: torch.Tensor
) -> torch.Tensor:
    """Chunks of absolute joint targets (B, H, action_dim) -> the model's normalised action space;
    with ``delta_arm`` the arm's targets are taken relative to the current joints ``proprio`` (B, P)."""
    if config.delta_arm:
        actions = actions.float().clone()
        actions[..., :ARM_DIMS] -= proprio[:, None, :ARM_DIMS].float()
    return norm.normalize(ACTIONS, actions)


def decode_actions(config: PolicyConfig, norm: Normalizer, x: torch.Tensor, proprio: torch.Tensor) -> torch.Tensor:
    """The inverse of ``encode_actions``: absolute joint targets (rad, float32)."""
    actions = norm.unnormalize(ACTIONS, x)
    if config.delta_arm:
        actions[..., :ARM_DIMS] += proprio[:, None, :ARM_DIMS].float()
    return actions
