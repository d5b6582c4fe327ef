"""Token encoders: a convolutional encoder per camera, the proprio token, the flow-time embedding."""

from __future__ import annotations

import math

import torch
from torch import nn


def _groups(channels: int) -> int:
    return math.gcd(channels, 8)


class CameraEncoder(nn.Module):
    """uint8 images (B, S, S, 3) -> ``grid**2`` tokens (B, grid**2, width).

    Pixels are scaled to [-1, 1]; each stride-2 3x3 convolution halves the map (GroupNorm, GELU); the
    map is average-pooled to grid x grid cells, each projected to a token with a learned position."""

    def __init__(self, channels: tuple[int, ...], grid: int, width: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c_in = 3
        for c in channels:
            layers += [nn.Conv2d(c_in, c, 3, stride=2, padding=1), nn.GroupNorm(_groups(c), c), nn.GELU()]
            c_in = c
        self.conv = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(grid)
        self.proj = nn.Linear(c_in, width)
        self.pos = nn.Parameter(torch.randn(grid * grid, width) * 0.02)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.permute(0, 3, 1, 2).float() * (2.0 / 255.0) - 1.0
        x = self.pool(self.conv(x))  # (B, C, g, g)
        return self.proj(x.flatten(2).transpose(1, 2)) + self.pos


def sinusoidal(t: torch.Tensor, dim: int, max_period: float = 1000.0) -> torch.Tensor:
    """(B,) times in [0, 1] -> (B, dim) sin/cos features at geometric frequencies (t scaled by 1000)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    angles = 1000.0 * t.float()[:, None] * freqs[None]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class ActionTimeEmbedding(nn.Module):
    """Noisy actions (B, H, A) and flow time (B,) -> action tokens (B, H, width), as openpi's
    action-time MLP: the action projection concatenated with the time embedding, then an MLP."""

    def __init__(self, action_dim: int, horizon: int, width: int) -> None:
        super().__init__()
        self.width = width
        self.action_in = nn.Linear(action_dim, width)
        self.mlp = nn.Sequential(nn.Linear(2 * width, width), nn.SiLU(), nn.Linear(width, width))
        self.pos = nn.Parameter(torch.randn(horizon, width) * 0.02)

    def forward(self, actions: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        a = self.action_in(actions)
        te = sinusoidal(t, self.width)[:, None].expand(-1, a.shape[1], -1)
        return self.mlp(torch.cat([a, te], dim=-1)) + self.pos
