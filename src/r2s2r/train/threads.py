"""How many torch CPU threads a training process uses (``r2s2r train`` and the study's training stages).

All the cores this process may use, shared among the ``torchrun`` processes (``WORLD_SIZE``). Measured on
the 2-core development machine, alone (``benchmarks/train_speed.py --preset cpu``, 2026-12-06, docs/
benchmarks.md): 0.243 s an optimiser step on two threads against 0.343 s on one (1.41 x), although the
batch loader's thread then shares a core. On a machine that other processes keep busy the picture flips
(OpenMP threads spin for a core another process holds: 12 against 274 samples/s at a load average of ~3,
2026-12-03): give ``--threads 1`` there. CPU training is reproducible for a given thread count only, so
callers that cache trained weights key them on this number.
"""

from __future__ import annotations

import os

from r2s2r.errors import ConfigError


def train_threads(requested: int | None = None) -> int:
    """``requested`` (a positive integer), else the cores of this process divided by ``WORLD_SIZE``."""
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
            raise ConfigError(f"--threads: expected a positive integer, got {requested!r}")
        return requested
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return max(1, len(os.sched_getaffinity(0)) // max(1, world))
