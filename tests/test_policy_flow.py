"""Flow matching on an analytic case: a 1-D two-mode mixture, its exact velocity field, a learned one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from r2s2r.policy import flow
from r2s2r.policy.encoders import sinusoidal

pytestmark = pytest.mark.usefixtures("one_torch_thread")


WEIGHTS, MEANS, SD = np.array([0.3, 0.7]), np.array([-1.0, 1.5]), 0.15


def draw(rng: np.random.Generator, n: int) -> torch.Tensor:
    k = rng.random(n) < WEIGHTS[1]
    return torch.from_numpy(MEANS[k.astype(int)] + SD * rng.standard_normal(n)).float()[:, None]


def exact_velocity(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """E[e - a | x_t = x] for the mixture, with x_t = (1 - t) a + t e (t=0 data, t=1 noise)."""
    x, t = x[:, 0].double(), t.double()
    var = (1 - t) ** 2 * SD**2 + t**2
    v = torch.zeros_like(x)
    logw = []
    comps = []
    for pi, mu in zip(WEIGHTS, MEANS, strict=True):
        m = (1 - t) * mu
        logw.append(np.log(pi) - (x - m) ** 2 / (2 * var))
        comps.append((t - (1 - t) * SD**2) / var * (x - m) - mu)
    w = torch.softmax(torch.stack(logw), dim=0)
    v = (w * torch.stack(comps)).sum(0)
    return v[:, None].float()


def modes(x: torch.Tensor) -> tuple[float, float, float]:
    """(mass of the upper mode, mean of the lower, mean of the upper), split at the midpoint."""
    x = x[:, 0].numpy()
    upper = x > MEANS.mean()
    return float(upper.mean()), float(x[~upper].mean()), float(x[upper].mean())


def test_euler_with_the_exact_velocity_reproduces_both_modes():
    noise = torch.from_numpy(np.random.default_rng(0).standard_normal((8000, 1))).float()
    x = flow.euler_sample(exact_velocity, noise, steps=100)
    mass, lo, hi = modes(x)
    assert mass == pytest.approx(WEIGHTS[1], abs=0.02)
    assert lo == pytest.approx(MEANS[0], abs=0.03) and hi == pytest.approx(MEANS[1], abs=0.03)
    upper = x[:, 0] > MEANS.mean()
    assert float(x[upper, 0].std()) == pytest.approx(SD, rel=0.1)
    # the default K = 10 steps already keeps the two modes apart with their masses
    mass10, lo10, hi10 = modes(flow.euler_sample(exact_velocity, noise, steps=10))
    assert mass10 == pytest.approx(WEIGHTS[1], abs=0.03)
    assert lo10 == pytest.approx(MEANS[0], abs=0.1) and hi10 == pytest.approx(MEANS[1], abs=0.1)


def test_the_exact_velocity_minimises_the_flow_loss():
    rng = np.random.default_rng(1)
    data = draw(rng, 50000)
    noise = torch.from_numpy(rng.standard_normal((len(data), 1))).float()
    t = torch.from_numpy(flow.sample_time(rng, len(data), 1.5, 1.0, 0.001))
    best = flow.flow_loss(exact_velocity, data, noise, t)
    for delta in (lambda x, t: 0.1 * torch.ones_like(x), lambda x, t: 0.2 * x):
        worse = flow.flow_loss(lambda x, t, d=delta: exact_velocity(x, t) + d(x, t), data, noise, t)
        assert worse > best + 1e-3
    assert flow.flow_loss(lambda x, t: -exact_velocity(x, t), data, noise, t) > best + 0.5


def test_interpolation_endpoints_follow_the_convention():
    a, e = torch.randn(5, 3, 2), torch.randn(5, 3, 2)
    assert torch.equal(flow.interpolate(a, e, torch.zeros(5)), a)
    assert torch.equal(flow.interpolate(a, e, torch.ones(5)), e)
    assert torch.allclose(flow.target_velocity(a, e), e - a)


def test_training_times_follow_the_openpi_beta():
    rng = np.random.default_rng(2)
    t = flow.sample_time(rng, 100000, 1.5, 1.0, 0.001)
    assert t.min() >= 0.001 and t.max() <= 1.0
    # Beta(1.5, 1): mean 0.6, P(u < 0.5) = 0.5 ** 1.5
    assert t.mean() == pytest.approx(0.001 + 0.999 * 0.6, abs=0.005)
    assert (t < 0.001 + 0.999 * 0.5).mean() == pytest.approx(0.5**1.5, abs=0.005)
    assert np.array_equal(t, flow.sample_time(np.random.default_rng(2), 100000, 1.5, 1.0, 0.001))


class TinyVelocity(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.width = width
        self.net = nn.Sequential(
            nn.Linear(1 + width, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(), nn.Linear(128, 1)
        )

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, sinusoidal(t, self.width)], dim=1))


def test_a_learned_velocity_reproduces_both_modes():
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    model = TinyVelocity()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for _ in range(800):
        data = draw(rng, 256)
        noise = torch.from_numpy(rng.standard_normal((256, 1))).float()
        t = torch.from_numpy(flow.sample_time(rng, 256, 1.5, 1.0, 0.001))
        loss = flow.flow_loss(model, data, noise, t)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        x = flow.euler_sample(model, torch.randn(4000, 1, generator=torch.Generator().manual_seed(0)), steps=10)
    mass, lo, hi = modes(x)
    assert mass == pytest.approx(WEIGHTS[1], abs=0.06)
    assert lo == pytest.approx(MEANS[0], abs=0.15) and hi == pytest.approx(MEANS[1], abs=0.15)
    # few samples between the modes: the flow did not blur them into one
    between = ((x[:, 0] > -0.4) & (x[:, 0] < 0.9)).float().mean()
    assert between < 0.1
