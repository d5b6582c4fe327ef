"""``Normalizer``: actions and proprio mapped to the policy's normalised space and back (torch)."""

from __future__ import annotations

import numpy as np
import torch

from r2s2r.data.stats import Stats
from r2s2r.errors import ConfigError
from r2s2r.policy.config import PolicyConfig

ACTIONS, PROPRIO = "actions", "obs/proprio"
NORMALIZED = (ACTIONS, PROPRIO)


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
