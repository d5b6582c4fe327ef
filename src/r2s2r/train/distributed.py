"""Several processes (``torchrun``): process group, per-rank device, gathering small Python values."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from r2s2r.errors import ConfigError


@dataclass(frozen=True)
class DistInfo:
    rank: int
    world: int
    local_rank: int

    @property
    def main(self) -> bool:
        return self.rank == 0


def setup(device: str) -> tuple[DistInfo, torch.device]:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, LOCAL_RANK) when WORLD_SIZE > 1;
    NCCL on CUDA, gloo on CPU. ``device`` "auto" picks CUDA (this rank's GPU) when available."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"device {device!r}: CUDA is not available on this machine")
        dev = torch.device("cuda", local if world > 1 else torch.device(device).index or 0)
        torch.cuda.set_device(dev)
    elif device == "cpu":
        dev = torch.device("cpu")
    else:
        raise ConfigError(f"device {device!r}: expected 'auto', 'cpu', 'cuda' or 'cuda:N'")
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    return DistInfo(rank, world, local), dev


def gather(value: Any, info: DistInfo) -> list[Any]:
    """``value`` of every rank, in rank order (on every rank)."""
    if info.world == 1:
        return [value]
    out: list[Any] = [None] * info.world
    dist.all_gather_object(out, value)
    return out


def all_sum(counts: dict[str, int], info: DistInfo) -> dict[str, int]:
    """Per-key sums over ranks."""
    if info.world == 1:
        return dict(counts)
    return {k: sum(d[k] for d in gather(counts, info)) for k in counts}


def barrier(info: DistInfo) -> None:
    if info.world > 1:
        dist.barrier()
