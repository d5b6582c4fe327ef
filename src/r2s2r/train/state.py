"""The training state inside a checkpoint: raw weights, optimiser, EMA, generators, sample counts.

Files next to the policy's own (``model.safetensors`` = EMA weights, ``stats.json``):
``train.safetensors`` (``model/<name>`` raw weights, ``optim/<i>/<key>`` AdamW moments and steps)
and ``train_state.json`` (step, the optimiser's param groups, one generator state per process,
samples seen per source, the log history). The scheduler is a function of the step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from r2s2r.errors import R2S2RError
from r2s2r.files import read_json
from r2s2r.policy.checkpoint import read_tensors

TENSORS, STATE = "train.safetensors", "train_state.json"


@dataclass
class TrainState:
    """What a resumed run needs besides the configs (which config.json holds)."""

    step: int
    samples: dict[str, int]  # samples seen per source, all processes together
    rng_states: list[dict[str, Any]]  # numpy bit-generator state per process (rank order)
    history: list[dict[str, Any]]  # log records


def optimizer_files(model: torch.nn.Module, opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], list]:
    """(tensors, param_groups) of the raw weights and the optimiser, for ``train.safetensors``."""
    sd = opt.state_dict()
    tensors = {f"model/{k}": v for k, v in model.state_dict().items()}
    for i, st in sd["state"].items():
        for key, v in st.items():
            tensors[f"optim/{i}/{key}"] = v if torch.is_tensor(v) else torch.tensor(v)
    groups = [{k: list(v) if isinstance(v, tuple) else v for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, groups


def load_optimizer(opt: torch.optim.Optimizer, tensors: dict[str, torch.Tensor], groups: list, where: Path) -> None:
    state: dict[int, dict[str, torch.Tensor]] = {}
    for name, v in tensors.items():
        if name.startswith("optim/"):
            _, i, key = name.split("/", 2)
            state.setdefault(int(i), {})[key] = v
    restored = [{k: tuple(v) if k == "betas" else v for k, v in g.items()} for g in groups]
    try:
        opt.load_state_dict({"state": state, "param_groups": restored})
    except (ValueError, KeyError, RuntimeError) as e:
        raise R2S2RError(f"{where}: optimiser state does not match the model ({e})") from None


def state_json(state: TrainState, groups: list) -> bytes:
    data = {
        "step": state.step,
        "samples": state.samples,
        "rng_states": state.rng_states,
        "history": state.history,
        "param_groups": groups,
    }
    return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()


def read_state(ckpt: Path) -> tuple[TrainState, list, dict[str, torch.Tensor]]:
    """(state, optimiser param groups, train tensors) of checkpoint folder ``ckpt``."""
    data = read_json(ckpt / STATE, "the training state JSON of a checkpoint")
    try:
        state = TrainState(int(data["step"]), dict(data["samples"]), list(data["rng_states"]), list(data["history"]))
        groups = list(data["param_groups"])
    except (ValueError, KeyError, TypeError) as e:
        raise R2S2RError(f"{ckpt / STATE}: not a training state ({e!r})") from None
    return state, groups, read_tensors(ckpt / TENSORS)


def restore_rng(state: dict[str, Any], where: Path) -> np.random.Generator:
    rng = np.random.default_rng()
    try:
        rng.bit_generator.state = state
    except (TypeError, ValueError, KeyError) as e:
        raise R2S2RError(f"{where}: unusable generator state ({e!r})") from None
    return rng
