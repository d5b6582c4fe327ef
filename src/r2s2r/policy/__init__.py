"""Policies: the ``ChunkPolicy`` interface and the flow-matching transformer policy.

``load_policy(path)`` rebuilds a trained ``Policy`` from a checkpoint folder written by
``r2s2r train``; ``Policy.predict_chunk(obs, rng)`` gives (B, H, 27) joint targets and
``Policy.embed(obs)`` the (B, D) observation embedding.

Names other than ``ChunkPolicy`` are imported on first use, so that importing the protocol (as
evaluation does) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from r2s2r.policy.protocol import ChunkPolicy

_LAZY = {
    "FlowTransformer": "model",
    "Normalizer": "normalize",
    "Policy": "policy",
    "RecedingHorizon": "horizon",
    "PolicyConfig": "config",
    "check_obs": "policy",
    "count_parameters": "model",
    "load_policy": "checkpoint",
    "read_checkpoint": "checkpoint",
    "resize_images": "images",
    "resolve_checkpoint": "checkpoint",
}

__all__ = [
    "ChunkPolicy",
    "FlowTransformer",
    "Normalizer",
    "Policy",
    "RecedingHorizon",
    "PolicyConfig",
    "check_obs",
    "count_parameters",
    "load_policy",
    "read_checkpoint",
    "resize_images",
    "resolve_checkpoint",
]

if TYPE_CHECKING:
    from r2s2r.policy.checkpoint import load_policy, read_checkpoint, resolve_checkpoint
    from r2s2r.policy.config import PolicyConfig
    from r2s2r.policy.horizon import RecedingHorizon
    from r2s2r.policy.images import resize_images
    from r2s2r.policy.model import FlowTransformer, count_parameters
    from r2s2r.policy.normalize import Normalizer
    from r2s2r.policy.policy import Policy, check_obs


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'r2s2r.policy' has no attribute {name!r}")
    return getattr(importlib.import_module(f"r2s2r.policy.{_LAZY[name]}"), name)
