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


def guidance_weight(t: float, max_weight: float) -> float:
    """The pseudo-inverse guidance weight at flow time ``t`` (this file's convention), clipped to
    ``max_weight``: in RTC's time tau = 1 - t (0 noise, 1 data), (1 - tau) / (tau r^2) with
    r^2 = (1 - tau)^2 / (tau^2 + (1 - tau)^2), which is (tau^2 + (1 - tau)^2) / (tau (1 - tau))."""
    tau = 1.0 - t
    if tau <= 0.0 or tau >= 1.0:
        return max_weight
    return min(max_weight, (tau**2 + (1.0 - tau) ** 2) / (tau * (1.0 - tau)))


def guided_euler_sample(
    velocity: Velocity,
    noise: torch.Tensor,
    steps: int,
    target: torch.Tensor,
    weights: torch.Tensor,
    max_weight: float = 5.0,
) -> torch.Tensor:
    """``euler_sample`` steered toward ``target`` (B, H, ...) where ``weights`` (H,) > 0: real-time
    chunking's inpainting (Black, Galliker and Levine 2025, pseudo-inverse guidance with a soft mask).
    At each step the data the velocity points to, x0 = x_t - t v, is pulled toward the target by the
    gradient of -1/2 sum_i w_i |target_i - x0_i|^2 with respect to x_t (a vector-Jacobian product through
    ``velocity``), times ``guidance_weight(t)``. Rows with weight 0 are free: the model fills them in
    consistently with the guided ones. Needs gradients (call outside ``torch.inference_mode``)."""
    w = weights.reshape(1, -1, *([1] * (noise.ndim - 2))).to(noise)
    x = noise
    dt = 1.0 / steps
    for k in range(steps):
        t_now = 1.0 - k * dt
        t = torch.full((x.shape[0],), t_now, dtype=x.dtype, device=x.device)
        with torch.enable_grad():
            xg = x.detach().requires_grad_(True)
            v = velocity(xg, t)
            x0 = xg - t_now * v
            (pull,) = torch.autograd.grad(x0, xg, grad_outputs=w * (target - x0).detach())
        x = x.detach() - dt * (v.detach() - guidance_weight(t_now, max_weight) * pull)
    return x
