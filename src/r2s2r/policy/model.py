"""``FlowTransformer``: observation tokens -> transformer -> flow-matching action head (torch module)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from r2s2r.data.object_state import OBJECT_STATE_DIM, OBJECT_STATE_SCALE
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
    (B, N, width), N = (cameras + past_images) x (token_grid**2 + [keypoints > 0]) + 1 (+1 with past_proprio);
    ``velocity`` predicts the flow velocity of noisy action chunks (B, H, A) at times t (B,) given
    those tokens; ``forward`` is the training loss; ``object_state`` the auxiliary object-state head.
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
        if config.object_state:
            self.object_head = nn.Sequential(nn.Linear(w, w), nn.SiLU(), nn.Linear(w, OBJECT_STATE_DIM))
            self.register_buffer("object_scale", torch.tensor(OBJECT_STATE_SCALE), persistent=False)

    def encode(self, images: Mapping[str, torch.Tensor], proprio: torch.Tensor) -> torch.Tensor:
        """With ``past_frame``, ``images`` also holds ``past/<camera>`` (of ``config.past_images``) and,
        with ``past_proprio``, ``proprio`` is (B, 2 P): the current then the earlier joint positions
        (normalised)."""
        p = self.config.proprio_dim
        tokens = [self.cameras[c](images[c]) for c in self.config.cameras]
        tokens.append(self.proprio(proprio[:, :p])[:, None])
        if self.config.past_frame:
            tokens += [self.cameras[c](images[PAST + c]) + self.past for c in self.config.past_images]
            if self.config.past_proprio:
                tokens.append(self.proprio(proprio[:, p:])[:, None] + self.past)
        return self.encoder(torch.cat(tokens, dim=1))

    @staticmethod
    def embedding(tokens: torch.Tensor) -> torch.Tensor:
        """(B, width) observation embedding: the mean of the observation tokens."""
        return tokens.mean(dim=1)

    def object_state(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, OBJECT_STATE_DIM) the object's state predicted from the observation tokens (the
        layout and units of ``r2s2r.data.object_state``); only with ``config.object_state``."""
        return self.object_head(self.embedding(tokens)) * self.object_scale

    def object_loss(self, tokens: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean squared error of the predicted object state in units of ``OBJECT_STATE_SCALE``, over
        the known (not NaN) entries of ``target`` (B, OBJECT_STATE_DIM); zero when none is known."""
        known = ~torch.isnan(target)
        err = (self.object_state(tokens) - torch.nan_to_num(target)) / self.object_scale
        return (err.square() * known).sum() / known.sum().clamp(min=1)

    def velocity(self, tokens: torch.Tensor, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.action_out(self.decoder(self.action_in(x_t, t), tokens))

    def forward(
        self,
        images: Mapping[str, torch.Tensor],
        proprio: torch.Tensor,
        actions: torch.Tensor,
        noise: torch.Tensor,
        t: torch.Tensor,
        object_state: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Flow-matching loss (scalar) of normalised action chunks (B, H, A) with noise (B R, H, A) and
        times t (B R,): R >= 1 flow samples per observation share one encoding (sample i uses
        observation i // R). With ``config.object_state`` and labels ``object_state`` (B, D; NaN
        where unknown), plus that weight times ``object_loss``."""
        tokens = self.encode(images, proprio)
        aux = 0.0
        if self.config.object_state and object_state is not None:
            aux = self.config.object_state * self.object_loss(tokens, object_state)
        r = noise.shape[0] // actions.shape[0]
        if r * actions.shape[0] != noise.shape[0]:
            raise ValueError(f"noise batch {noise.shape[0]} is not a multiple of the action batch {actions.shape[0]}")
        if r > 1:
            tokens, actions = tokens.repeat_interleave(r, dim=0), actions.repeat_interleave(r, dim=0)
        return flow.flow_loss(lambda x, tt: self.velocity(tokens, x, tt), actions, noise, t) + aux

    def sample(
        self, tokens: torch.Tensor, noise: torch.Tensor, guide: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """Normalised action chunks (B, H, A) integrated from ``noise`` (a standard normal draw, times
        ``noise_scale``, at t=1) to t=0 in K Euler steps; with ``guide`` = (target chunks (B, H, A),
        row weights (H,)), inpainted toward the target (``flow.guided_euler_sample``)."""
        start = noise * self.config.noise_scale
        field = lambda x, tt: self.velocity(tokens, x, tt)  # noqa: E731
        if guide is None:
            return flow.euler_sample(field, start, self.config.euler_steps)
        return flow.guided_euler_sample(field, start, self.config.euler_steps, *guide)


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
