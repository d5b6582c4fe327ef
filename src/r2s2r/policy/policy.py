"""``Policy``: a trained ``FlowTransformer`` behind the numpy ``ChunkPolicy`` interface."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import torch

from r2s2r.errors import R2S2RError
from r2s2r.policy.config import PolicyConfig
from r2s2r.policy.model import FlowTransformer
from r2s2r.policy.normalize import PROPRIO, Normalizer, decode_actions, encode_actions
from r2s2r.policy.protocol import PAST


def obs_keys(config: PolicyConfig) -> tuple[str, ...]:
    """The observation entries ``config``'s policy reads (``past/...`` ones with ``past_frame``)."""
    now = (*config.cameras, "proprio")
    past = (*config.past_images, "proprio") if config.past_proprio else config.past_images
    return (*now, *(PAST + k for k in past)) if config.past_frame else now


def model_inputs(
    config: PolicyConfig, normalizer: Normalizer, obs: Mapping[str, torch.Tensor]
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """(images, normalised proprio) for ``FlowTransformer.encode`` from an observation of tensors."""
    images = {k: v for k, v in obs.items() if k in obs_keys(config) and not k.endswith("proprio")}
    proprio = normalizer.normalize(PROPRIO, obs["proprio"])
    if config.past_frame and config.past_proprio:
        proprio = torch.cat([proprio, normalizer.normalize(PROPRIO, obs[PAST + "proprio"])], dim=1)
    return images, proprio


def check_obs(config: PolicyConfig, obs: Mapping[str, np.ndarray]) -> int:
    """The batch size of ``obs``, or R2S2RError naming the entry that does not fit ``config``."""
    if not isinstance(obs, Mapping):
        raise R2S2RError(f"observation: expected a dict of arrays, got {type(obs).__name__}")
    keys = obs_keys(config)
    missing = [k for k in keys if k not in obs]
    if missing:
        raise R2S2RError(f"observation: missing {missing}; the policy needs {list(keys)}")
    s = config.image_size
    batch = None
    for key in keys:
        x = obs[key]
        image = not key.endswith("proprio")
        want = (s, s, 3) if image else (config.proprio_dim,)
        if not isinstance(x, np.ndarray) or x.ndim != 1 + len(want) or x.shape[1:] != want:
            got = x.shape if isinstance(x, np.ndarray) else type(x).__name__
            raise R2S2RError(
                f"observation {key!r}: expected an array of shape (B, {', '.join(map(str, want))}), got {got}"
            )
        if image and x.dtype != np.uint8:
            raise R2S2RError(f"observation {key!r}: expected uint8 pixels, got {x.dtype}")
        if not image and (x.dtype.kind != "f" or not np.isfinite(x).all()):
            raise R2S2RError(f"observation {key!r}: expected finite floats (joint positions, rad), got {x.dtype}")
        if batch is None:
            batch = len(x)
        elif len(x) != batch:
            raise R2S2RError(f"observation {key!r}: batch of {len(x)}, but {keys[0]!r} has {batch}")
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

    @property
    def past_frame(self) -> int:
        return self.config.past_frame

    @property
    def past_images(self) -> tuple[str, ...]:
        return self.config.past_images

    def replanning_every(self, k: int) -> Policy:
        """This policy (the same weights) executing ``k`` actions of each chunk before predicting again:
        a choice of the execution, not of training (ConfigError unless 1 <= k <= action_horizon)."""
        return Policy(dataclasses.replace(self.config, execute_steps=k), self.model, self.normalizer, str(self.device))

    def _tensors(self, obs: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
        check_obs(self.config, obs)
        return {
            k: torch.from_numpy(
                np.ascontiguousarray(obs[k]) if not k.endswith("proprio") else np.asarray(obs[k], dtype=np.float32)
            ).to(self.device)
            for k in obs_keys(self.config)
        }

    def _tokens(self, tensors: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return self.model.encode(*model_inputs(self.config, self.normalizer, tensors))

    def predict_chunk(
        self,
        obs: Mapping[str, np.ndarray],
        rng: np.random.Generator,
        guide: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """(B, action_horizon, action_dim) float32 joint targets (rad). ``guide`` = (targets (B, H, A)
        in rad, row weights (H,) in [0, 1]): the chunk is inpainted toward those targets where the
        weight is positive (real-time chunking; ``r2s2r.policy.horizon.inpaint_weights``)."""
        if guide is None:
            with torch.inference_mode():
                tensors = self._tensors(obs)
                tokens = self._tokens(tensors)
                x = self.model.sample(tokens, self._noise(tokens, rng))
                actions = decode_actions(self.config, self.normalizer, x, tensors["proprio"])
        else:
            with torch.no_grad():
                tensors = self._tensors(obs)
                target, weights = self._check_guide(guide, len(tensors["proprio"]))
                tokens = self._tokens(tensors)
                encoded = encode_actions(self.config, self.normalizer, target, tensors["proprio"])
            x = self.model.sample(tokens, self._noise(tokens, rng), (encoded, weights))
            with torch.no_grad():
                actions = decode_actions(self.config, self.normalizer, x, tensors["proprio"])
        return actions.cpu().numpy().astype(np.float32, copy=False)

    def _noise(self, tokens: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        gen = torch.Generator(device=self.device).manual_seed(int(rng.integers(2**63 - 1)))
        shape = (tokens.shape[0], self.config.action_horizon, self.config.action_dim)
        return torch.randn(shape, generator=gen, device=self.device)

    def _check_guide(self, guide: tuple[np.ndarray, np.ndarray], batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        target, weights = (np.asarray(g, dtype=np.float32) for g in guide)
        c = self.config
        if target.shape != (batch, c.action_horizon, c.action_dim) or weights.shape != (c.action_horizon,):
            raise R2S2RError(
                f"chunk guide: expected targets ({batch}, {c.action_horizon}, {c.action_dim}) and weights "
                f"({c.action_horizon},), got {target.shape} and {weights.shape}"
            )
        if not (np.isfinite(target).all() and np.isfinite(weights).all() and ((weights >= 0) & (weights <= 1)).all()):
            raise R2S2RError("chunk guide: expected finite targets and weights in [0, 1]")
        return torch.from_numpy(target).to(self.device), torch.from_numpy(weights).to(self.device)

    @torch.inference_mode()
    def embed(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """(B, width) float32 observation embedding (mean of the observation tokens), for latent analysis."""
        return self.model.embedding(self._tokens(self._tensors(obs))).cpu().numpy().astype(np.float32, copy=False)

    def __repr__(self) -> str:
        c = self.config
        return f"Policy(cameras={c.cameras}, image_size={c.image_size}, H={c.action_horizon}, k={c.execute_steps})"
