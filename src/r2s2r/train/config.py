"""``TrainConfig`` (optimisation, mixture, checkpoints) and ``Preset`` (a policy + a training config)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from r2s2r.errors import ConfigError
from r2s2r.policy.config import PolicyConfig


@dataclass(frozen=True)
class TrainConfig:
    """AdamW with linear warmup then cosine decay to ``min_lr_ratio`` x ``lr`` at ``steps``; gradient
    norm clipped at ``grad_clip``; EMA of the weights with decay min(ema_decay, (1+s)/(10+s)) at step
    s (the EMA weights are the policy); random image shifts of up to ``shift_px`` px per camera.

    ``ratio``: the real share of every batch (exact quota), or None for natural proportions.
    ``batch_size`` is the global batch; with DDP each of the W processes draws batch_size / W.
    ``flow_samples``: flow (noise, time) pairs per encoded observation: the encoder, most of a step's
    cost, runs once for ``flow_samples`` action-head samples.
    ``holdout``: the share of the real demonstrations kept out of training; at every checkpoint the
    open-loop action error on ``probe_samples`` of their frames is logged, and a checkpoint whose arm
    error is within ``best_tolerance`` (a share) of the lowest so far becomes the run's ``best``: the
    latest of the checkpoints the held-out error cannot tell apart (``r2s2r.train.validation``). Lab
    success kept rising with training long after that error flattened (image policy on lab 0: 22/48 at
    its lowest error, 5,000 steps, 30/48 at 10,000 steps, 0.7 % above it; docs/benchmarks.md). 0 trains
    on all.
    """

    steps: int = 3000
    batch_size: int = 64
    lr: float = 3e-4
    weight_decay: float = 1e-4  # on weight matrices and convolution kernels, not on biases and norms
    beta1: float = 0.9
    beta2: float = 0.95
    warmup_steps: int = 200
    min_lr_ratio: float = 0.05
    grad_clip: float = 1.0
    ema_decay: float = 0.999
    shift_px: int = 4
    ratio: float | None = None
    seed: int = 0
    checkpoint_every: int = 500
    keep_checkpoints: int = 2
    log_every: int = 25
    prefetch: int = 2  # batches read ahead by the loader thread
    cache_mb: int = 1024  # decoded, resized camera frames kept in memory (per process)
    flow_samples: int = 1
    holdout: float = 0.0
    probe_samples: int = 256
    best_tolerance: float = 0.02

    def __post_init__(self) -> None:
        for name in (
            "steps",
            "batch_size",
            "checkpoint_every",
            "keep_checkpoints",
            "log_every",
            "prefetch",
            "flow_samples",
            "probe_samples",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"TrainConfig.{name}: expected a positive integer, got {v!r}")
        for name in ("warmup_steps", "shift_px", "seed", "cache_mb"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"TrainConfig.{name}: expected a non-negative integer, got {v!r}")
        for name in ("lr", "grad_clip"):
            v = getattr(self, name)
            if not (isinstance(v, float | int) and math.isfinite(v) and v > 0):
                raise ConfigError(f"TrainConfig.{name}: expected a positive number, got {v!r}")
        for name in ("beta1", "beta2", "ema_decay", "min_lr_ratio"):
            v = getattr(self, name)
            if not (isinstance(v, float | int) and 0 <= v < 1):
                raise ConfigError(f"TrainConfig.{name}: expected a value in [0, 1), got {v!r}")
        if not (isinstance(self.weight_decay, float | int) and self.weight_decay >= 0):
            raise ConfigError(f"TrainConfig.weight_decay: expected a value >= 0, got {self.weight_decay!r}")
        tol = self.best_tolerance
        if isinstance(tol, bool) or not (isinstance(tol, float | int) and 0 <= tol < float("inf")):
            raise ConfigError(f"TrainConfig.best_tolerance: expected a finite share >= 0, got {tol!r}")
        if isinstance(self.holdout, bool) or not (isinstance(self.holdout, float | int) and 0 <= self.holdout < 1):
            raise ConfigError(f"TrainConfig.holdout: expected a share in [0, 1), got {self.holdout!r}")
        if self.ratio is not None and (isinstance(self.ratio, bool) or not 0 < self.ratio <= 1):
            raise ConfigError(f"TrainConfig.ratio: expected the real share in (0, 1] or None, got {self.ratio!r}")


@dataclass(frozen=True)
class Preset:
    """A named pair of configs (see ``r2s2r.train.presets.PRESETS``)."""

    policy: PolicyConfig
    train: TrainConfig
    summary: str = ""
