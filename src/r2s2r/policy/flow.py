"""Flow matching (rectified flow) as in openpi. Convention: **t=0 is data, t=1 is noise**.

A data sample a and a noise sample e ~ N(0, I) are joined by the straight path
x_t = (1 - t) a + t e, whose velocity dx_t/dt = e - a is the regression target of the model
v(x_t, t). Sampling starts from noise at t=1 and integrates dx/dt = v back to t=0 with Euler steps
of size 1/K. Training times are drawn as t = t_min + (1 - t_min) Beta(alpha, beta); openpi's
Beta(1.5, 1) puts more weight near t=1, where the velocity field is hardest to learn.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

Velocity = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x_t (B, ...), t (B,)) -> v (B, ...)


def sample_time(rng: np.random.Generator, n: int, alpha: float, beta: float, t_min: float) -> np.ndarray:
    """(n,) float32 training times in [t_min, 1] drawn from ``rng``."""
    return (t_min + (1.0 - t_min) * rng.beta(alpha, beta, size=n)).astype(np.float32)


def interpolate(data: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """x_t = (1 - t) data + t noise, with t (B,) broadcast over the trailing dimensions."""
    tt = t.reshape(-1, *([1] * (data.ndim - 1)))
    return (1 - tt) * data + tt * noise


def target_velocity(data: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """dx_t/dt along the straight path from data (t=0) to noise (t=1)."""
    return noise - data


def flow_loss(velocity: Velocity, data: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Mean squared error between the predicted velocity at (x_t, t) and e - a (a scalar tensor)."""
    pred = velocity(interpolate(data, noise, t), t)
    return torch.mean((pred - target_velocity(data, noise)) ** 2)


def euler_sample(velocity: Velocity, noise: torch.Tensor, steps: int) -> torch.Tensor:
    """Integrate dx/dt = v from x_1 = ``noise`` at t=1 to t=0 in ``steps`` Euler steps; returns x_0."""
    x = noise
    dt = 1.0 / steps
    for k in range(steps):
        t = torch.full((x.shape[0],), 1.0 - k * dt, dtype=x.dtype, device=x.device)
        x = x - dt * velocity(x, t)
    return x
