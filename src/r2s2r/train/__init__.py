"""Co-training: mixtures of a real dataset and sim datasets, the training loop, presets, checkpoints.

Names are imported on first use, so that ``r2s2r.train.commands`` (the CLI) loads without torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "PRESETS": "presets",
    "Mixture": "mixture",
    "Preset": "config",
    "TrainConfig": "config",
    "TrainResult": "loop",
    "apportion": "mixture",
    "get_preset": "presets",
    "train": "loop",
}

__all__ = [
    "Mixture",
    "PRESETS",
    "Preset",
    "TrainConfig",
    "TrainResult",
    "apportion",
    "get_preset",
    "train",
]

if TYPE_CHECKING:
    from r2s2r.train.config import Preset, TrainConfig
    from r2s2r.train.loop import TrainResult, train
    from r2s2r.train.mixture import Mixture, apportion
    from r2s2r.train.presets import PRESETS, get_preset


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'r2s2r.train' has no attribute {name!r}")
    return getattr(importlib.import_module(f"r2s2r.train.{_LAZY[name]}"), name)
