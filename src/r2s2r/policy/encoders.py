"""Token encoders: a convolutional encoder per camera, the proprio token, the flow-time embedding."""

from __future__ import annotations

import math

import torch
from torch import nn


def _groups(channels: int) -> int:
    return math.gcd(channels, 8)


class SpatialSoftmax(nn.Module):
    """Feature map (B, C, h, w) -> (B, K, 2) keypoints: a 1x1 convolution to K maps, a softmax over
    each map's cells (learned temperature), and the expected (x, y) cell centre in [-1, 1] (x right,
    y down in the image). The expectation is finer than a cell (Levine et al. 2016; robomimic)."""

    def __init__(self, channels: int, keypoints: int) -> None:
        super().__init__()
        self.maps = nn.Conv2d(channels, keypoints, 1)
        self.log_temperature = nn.Parameter(torch.zeros(()))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        b, _, h, w = features.shape
        logits = self.maps(features).flatten(2) / self.log_temperature.exp()  # (B, K, h w)
        weights = torch.softmax(logits, dim=-1)
        ys = torch.linspace(-1.0, 1.0, h, device=features.device)
        xs = torch.linspace(-1.0, 1.0, w, device=features.device)
        grid_y, grid_x = torch.meshgrid(ys, xs, indexing="ij")
        coords = torch.stack([grid_x.reshape(-1), grid_y.reshape(-1)], dim=-1)  # (h w, 2)
        return weights @ coords


class CameraEncoder(nn.Module):
    """uint8 images (B, S, S, 3) -> ``grid**2`` (+1 with keypoints) tokens (B, N, width).

    Pixels are scaled to [-1, 1]; each stride-2 3x3 convolution halves the map (GroupNorm, GELU); the
    map is average-pooled to grid x grid cells, each projected to a token with a learned position.
    ``keypoints`` = K > 0 adds one token: K spatial-softmax keypoints of the map before the last
    convolution (twice as fine), their 2 K coordinates through an MLP. Average pooling keeps *what*
    is in a cell but blurs *where* in it; a few-pixel object on a belt needs the where."""

    def __init__(self, channels: tuple[int, ...], grid: int, width: int, keypoints: int = 0) -> None:
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
        self.keypoints = None
        if keypoints:
            tap = channels[-2] if len(channels) > 1 else 3
            self.keypoints = SpatialSoftmax(tap, keypoints)
            self.keypoint_proj = nn.Sequential(nn.Linear(2 * keypoints, width), nn.SiLU(), nn.Linear(width, width))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.permute(0, 3, 1, 2).float() * (2.0 / 255.0) - 1.0
        if self.keypoints is None:
            x = self.pool(self.conv(x))  # (B, C, g, g)
            return self.proj(x.flatten(2).transpose(1, 2)) + self.pos
        fine = self.conv[:-3](x)  # the map before the last convolution
        x = self.pool(self.conv[-3:](fine))
        grid = self.proj(x.flatten(2).transpose(1, 2)) + self.pos
        points = self.keypoint_proj(self.keypoints(fine).flatten(1))[:, None]
        return torch.cat([grid, points], dim=1)


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
