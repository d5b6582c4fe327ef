"""Learning-rate schedule (linear warmup, cosine decay) and the EMA of the weights."""

from __future__ import annotations

import math

import torch
from torch import nn

from r2s2r.train.config import TrainConfig


def lr_at(step: int, config: TrainConfig) -> float:
    """Learning rate of optimiser step ``step`` (1-based): linear warmup over ``warmup_steps`` steps,
    then cosine from ``lr`` to ``min_lr_ratio * lr`` at ``steps``."""
    if step <= config.warmup_steps:
        return config.lr * step / config.warmup_steps
    span = max(1, config.steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    floor = config.min_lr_ratio
    return config.lr * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress)))


class EMA:
    """Exponential moving average of a module's parameters and buffers (float tensors)."""

    def __init__(self, module: nn.Module, decay: float) -> None:
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in module.state_dict().items()}

    def rate(self, step: int) -> float:
        """Decay at step ``step``: min(decay, (1 + step) / (10 + step)), so early weights fade fast."""
        return min(self.decay, (1.0 + step) / (10.0 + step))

    @torch.no_grad()
    def update(self, module: nn.Module, step: int) -> None:
        d = self.rate(step)
        for k, v in module.state_dict().items():
            s = self.shadow[k]
            if s.dtype.is_floating_point:
                s.mul_(d).add_(v.detach(), alpha=1.0 - d)
            else:
                s.copy_(v)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.shadow

    def load_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        for k, s in self.shadow.items():
            s.copy_(tensors[k])
