"""``FlowTransformer``: observation tokens -> transformer -> flow-matching action head (torch module)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from r2s2r.policy import flow
from r2s2r.policy.config import PolicyConfig
from r2s2r.policy.encoders import ActionTimeEmbedding, CameraEncoder
from r2s2r.policy.protocol import PAST


def _layer_kwargs(config: PolicyConfig) -> dict:
    return dict(
        d_model=config.width,
        nhead=config.heads,
        dim_feedforward=config.mlp_ratio * config.width,
        dropout=0.0,  # no hidden random draws: training is a function of the seeded generators alone
        activation="gelu",
        batch_first=True,
        norm_first=True,
    )


class FlowTransformer(nn.Module):
    """All tensors here are normalised (see ``Normalizer``) except the uint8 images.

    ``encode`` turns images {camera: (B, S, S, 3) uint8} and proprio (B, P) into observation tokens
    (B, N, width), N = cameras x (token_grid**2 + [keypoints > 0]) + 1 (twice with past_frame); ``velocity`` predicts the flow velocity of noisy
    action chunks (B, H, A) at times t (B,) given those tokens; ``forward`` is the training loss.
    """

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__()
        self.config = config
        w = config.width
        self.cameras = nn.ModuleDict(
            {c: CameraEncoder(config.conv_channels, config.token_grid, w, config.keypoints) for c in config.cameras}
        )
        self.proprio = nn.Sequential(nn.Linear(config.proprio_dim, w), nn.SiLU(), nn.Linear(w, w))
        if config.past_frame:
            self.past = nn.Parameter(torch.randn(w) * 0.02)  # marks the tokens of the earlier observation
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**_layer_kwargs(config)),
            config.encoder_layers,
            norm=nn.LayerNorm(w),
            enable_nested_tensor=False,
        )
        self.action_in = ActionTimeEmbedding(config.action_dim, config.action_horizon, w)
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(**_layer_kwargs(config)), config.decoder_layers, norm=nn.LayerNorm(w)
        )
        self.action_out = nn.Linear(w, config.action_dim)

    def encode(self, images: Mapping[str, torch.Tensor], proprio: torch.Tensor) -> torch.Tensor:
        """With ``past_frame``, ``images`` also holds ``past/<camera>`` and ``proprio`` is (B, 2 P):
        the current then the earlier joint positions (normalised)."""
        p = self.config.proprio_dim
        tokens = [self.cameras[c](images[c]) for c in self.config.cameras]
        tokens.append(self.proprio(proprio[:, :p])[:, None])
        if self.config.past_frame:
            tokens += [self.cameras[c](images[PAST + c]) + self.past for c in self.config.cameras]
            tokens.append(self.proprio(proprio[:, p:])[:, None] + self.past)
        return self.encoder(torch.cat(tokens, dim=1))

    @staticmethod
    def embedding(tokens: torch.Tensor) -> torch.Tensor:
        """(B, width) observation embedding: the mean of the observation tokens."""
        return tokens.mean(dim=1)

    def velocity(self, tokens: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.action_out(self.decoder(self.action_in(x_t, t), tokens))

    def forward(
        self,
        images: Mapping[str, torch.Tensor],
        proprio: torch.Tensor,
        actions: torch.Tensor,
        noise: torch.Tensor,
        t: torch.Tensor,
    ) -> torch.Tensor:
        """Flow-matching loss (scalar) of normalised action chunks (B, H, A) with noise (B R, H, A) and
        times t (B R,): R >= 1 flow samples per observation share one encoding (sample i uses
        observation i // R)."""
        tokens = self.encode(images, proprio)
        r = noise.shape[0] // actions.shape[0]
        if r * actions.shape[0] != noise.shape[0]:
            raise ValueError(f"noise batch {noise.shape[0]} is not a multiple of the action batch {actions.shape[0]}")
        if r > 1:
            tokens, actions = tokens.repeat_interleave(r, dim=0), actions.repeat_interleave(r, dim=0)
        return flow.flow_loss(lambda x, tt: self.velocity(tokens, x, tt), actions, noise, t)

    def sample(self, tokens: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Normalised action chunks (B, H, A) integrated from ``noise`` (t=1) to t=0 in K Euler steps."""
        return flow.euler_sample(lambda x, tt: self.velocity(tokens, x, tt), noise, self.config.euler_steps)


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
