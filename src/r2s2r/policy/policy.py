"""``Policy``: a trained ``FlowTransformer`` behind the numpy ``ChunkPolicy`` interface."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from r2s2r.errors import R2S2RError
from r2s2r.policy.config import PolicyConfig
from r2s2r.policy.model import FlowTransformer
from r2s2r.policy.normalize import ACTIONS, PROPRIO, Normalizer


def check_obs(config: PolicyConfig, obs: Mapping[str, np.ndarray]) -> int:
    """The batch size of ``obs``, or R2S2RError naming the entry that does not fit ``config``."""
    if not isinstance(obs, Mapping):
        raise R2S2RError(f"observation: expected a dict of arrays, got {type(obs).__name__}")
    missing = [k for k in (*config.cameras, "proprio") if k not in obs]
    if missing:
        raise R2S2RError(f"observation: missing {missing}; the policy needs {[*config.cameras, 'proprio']}")
    s = config.image_size
    batch = None
    for key in (*config.cameras, "proprio"):
        x = obs[key]
        image = key != "proprio"
        want = (s, s, 3) if image else (config.proprio_dim,)
        if not isinstance(x, np.ndarray) or x.ndim != 1 + len(want) or x.shape[1:] != want:
            got = x.shape if isinstance(x, np.ndarray) else type(x).__name__
            raise R2S2RError(
                f"observation {key!r}: expected an array of shape (B, {', '.join(map(str, want))}), got {got}"
            )
        if image and x.dtype != np.uint8:
            raise R2S2RError(f"observation {key!r}: expected uint8 pixels, got {x.dtype}")
        if not image and (x.dtype.kind != "f" or not np.isfinite(x).all()):
            raise R2S2RError(f"observation 'proprio': expected finite floats (joint positions, rad), got {x.dtype}")
        if batch is None:
            batch = len(x)
        elif len(x) != batch:
            raise R2S2RError(f"observation {key!r}: batch of {len(x)}, but {config.cameras[0]!r} has {batch}")
    if not batch:
        raise R2S2RError("observation: empty batch")
    return batch


class Policy:
    """Predicts chunks of ``action_horizon`` absolute joint targets (rad) from batched observations.

    ``obs``: {camera: uint8 (B, image_size, image_size, 3)} for every camera in ``cameras`` and
    ``proprio`` float (B, 27) joint positions (rad). Noise comes from a ``torch.Generator`` seeded
    from the ``rng`` passed in: the same rng state gives the same actions. The caller executes the
    first ``execute_steps`` actions of each chunk and then predicts again (receding horizon).
    """

    def __init__(self, config: PolicyConfig, model: FlowTransformer, normalizer: Normalizer, device: str = "cpu"):
        self.config, self.normalizer = config, normalizer
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()

    @property
    def cameras(self) -> tuple[str, ...]:
        return self.config.cameras

    @property
    def image_size(self) -> int:
        return self.config.image_size

    @property
    def action_horizon(self) -> int:
        return self.config.action_horizon

    @property
    def execute_steps(self) -> int:
        return self.config.execute_steps

    def _tokens(self, obs: Mapping[str, np.ndarray]) -> torch.Tensor:
        check_obs(self.config, obs)
        images = {c: torch.from_numpy(np.ascontiguousarray(obs[c])).to(self.device) for c in self.cameras}
        proprio = torch.from_numpy(np.asarray(obs["proprio"], dtype=np.float32)).to(self.device)
        return self.model.encode(images, self.normalizer.normalize(PROPRIO, proprio))

    @torch.inference_mode()
    def predict_chunk(self, obs: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """(B, action_horizon, action_dim) float32 joint targets (rad)."""
        tokens = self._tokens(obs)
        gen = torch.Generator(device=self.device).manual_seed(int(rng.integers(2**63 - 1)))
        shape = (tokens.shape[0], self.config.action_horizon, self.config.action_dim)
        noise = torch.randn(shape, generator=gen, device=self.device)
        actions = self.normalizer.unnormalize(ACTIONS, self.model.sample(tokens, noise))
        return actions.cpu().numpy().astype(np.float32, copy=False)

    @torch.inference_mode()
    def embed(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """(B, width) float32 observation embedding (mean of the observation tokens), for latent analysis."""
        return self.model.embedding(self._tokens(obs)).cpu().numpy().astype(np.float32, copy=False)

    def __repr__(self) -> str:
        c = self.config
        return f"Policy(cameras={c.cameras}, image_size={c.image_size}, H={c.action_horizon}, k={c.execute_steps})"
