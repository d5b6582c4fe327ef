"""``train``: co-train a flow-matching policy on one real dataset and zero or more sim datasets.

A run folder is resumed when it holds a checkpoint: model, optimiser, EMA, the sampler's and
noise generator's state and the per-source sample counts are restored, so a run killed after step
k and resumed gives the same weights as one that never stopped (on the same device and thread
count). Every random draw comes from one ``numpy.random.Generator`` per process seeded from
``TrainConfig.seed`` (and the rank); the initial weights from a torch generator seeded the same.
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from r2s2r.data.stats import Stats, pooled_stats
from r2s2r.dataclass_json import to_jsonable
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.files import output_dir
from r2s2r.policy.checkpoint import (
    LATEST,
    STATS_FILE,
    WEIGHTS,
    check_state,
    clean_run_dir,
    load_state,
    mark_best,
    policy_meta,
    read_checkpoint,
    read_stats,
    read_tensors,
    tensors_bytes,
    write_checkpoint,
)
from r2s2r.policy.model import FlowTransformer
from r2s2r.policy.normalize import NORMALIZED, Normalizer, encode_actions, normalized_dims, policy_stats
from r2s2r.policy.policy import model_inputs
from r2s2r.policy.protocol import PAST
from r2s2r.train import distributed
from r2s2r.train.config import Preset
from r2s2r.train.mixture import Mixture
from r2s2r.train.pipeline import Batch, BatchLoader
from r2s2r.train.schedule import EMA, lr_at
from r2s2r.train.sources import Sources, open_sources, resize_note
from r2s2r.train.state import (
    STATE,
    TENSORS,
    TrainState,
    load_optimizer,
    optimizer_files,
    read_state,
    restore_rng,
    state_json,
)
from r2s2r.train.validation import OpenLoopProbe

StepCallback = Callable[[int, dict[str, Any] | None], None]  # (step, log record at log steps, else None)


@dataclass
class TrainResult:
    checkpoint: Path  # the last checkpoint folder written
    step: int
    resumed_from: int  # 0 for a fresh run
    samples: dict[str, int]  # samples seen per source over the whole run
    history: list[dict[str, Any]] = field(default_factory=list)


def require_tensorboard() -> None:
    if importlib.util.find_spec("tensorboard") is None:
        raise R2S2RError(
            "--tensorboard: the 'tensorboard' package is not installed; install it "
            "(pip install 'r2s2r[tensorboard]') or train without --tensorboard"
        )


def is_best(val: float, lowest: float, tolerance: float) -> bool:
    """Whether a checkpoint with held-out error ``val`` becomes the run's best, ``lowest`` the lowest error
    of the checkpoints before it: when ``val`` is within ``tolerance`` (a share) of the lowest including
    its own (``TrainConfig.best_tolerance``). Never without a finite error (a run without held-out demos)."""
    return math.isfinite(val) and val <= (1.0 + tolerance) * min(val, lowest)


def _param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.ndim >= 2 and not name.endswith("pos") else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _differences(got: Any, want: Any, where: str) -> list[str]:
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for k in sorted(set(got) | set(want)):
            out += _differences(got.get(k), want.get(k), f"{where}.{k}")
        return out
    return [] if got == want else [f"{where}: checkpoint {got!r}, now {want!r}"]


def _check_resume(meta: dict[str, Any], want: dict[str, Any], where: Path) -> None:
    diffs = []
    for key in ("policy", "train", "world_size"):
        diffs += _differences(meta.get(key), want[key], key)
    got_src = [(s.get("name"), s.get("content_hash")) for s in meta.get("sources", [])]
    want_src = [(s["name"], s["content_hash"]) for s in want["sources"]]
    if got_src != want_src:
        diffs.append(f"sources: checkpoint {got_src}, now {want_src}")
    if diffs:
        raise R2S2RError(
            f"{where}: holds a run with other settings; resume with the same ones or use a new --out "
            f"({'; '.join(diffs[:6])})"
        )


class TrainingRun:
    """One process's training state between steps."""

    def __init__(self, sources: Sources, out: Path, preset: Preset, info: distributed.DistInfo, dev: torch.device):
        self.sources, self.out, self.preset, self.info, self.dev = sources, out, preset, info, dev
        pc, tc = preset.policy, preset.train
        if tc.batch_size % info.world:
            raise ConfigError(f"batch_size {tc.batch_size} is not divisible by the {info.world} processes")
        self.mixture = Mixture(sources.samplers, tc.ratio, tc.batch_size // info.world)
        self.meta = {
            **policy_meta(pc),
            "train": to_jsonable(tc),
            "mixture": self.mixture.describe(),
            "sources": sources.describe(),
            "world_size": info.world,
        }
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(tc.seed)
            self.model = FlowTransformer(pc)
        self.model.to(dev)
        self.ema = EMA(self.model, tc.ema_decay)
        self.opt = torch.optim.AdamW(
            _param_groups(self.model, tc.weight_decay), lr=tc.lr, betas=(tc.beta1, tc.beta2), fused=dev.type == "cuda"
        )
        self.state = TrainState(0, {n: 0 for n in sources.samplers}, [], [])
        self.rng = np.random.default_rng([tc.seed, info.rank])
        self.stats = self._resume_or_start()
        self.normalizer = Normalizer(self.stats, pc.normalization, normalized_dims(pc))
        self.local = {n: 0 for n in sources.samplers}  # samples drawn by this process since start/resume
        self.probe = None  # held-out open-loop error, measured on the EMA weights by the main process
        if info.main and len(sources.held_out):
            self.probe = OpenLoopProbe(sources.datasets["real"], sources.held_out, pc, tc.seed, tc.probe_samples)
            with torch.random.fork_rng(devices=[]):
                self.ema_model = FlowTransformer(pc).to(dev)

    def validate(self) -> dict[str, float]:
        """The held-out open-loop error of the current EMA weights (empty without held-out demos)."""
        if self.probe is None:
            return {}
        self.ema_model.load_state_dict(self.ema.state_dict())
        return self.probe.evaluate(self.ema_model, self.normalizer).record()

    def best_val(self) -> float:
        """The lowest held-out arm error logged so far (inf before the first)."""
        return min((r["val_arm"] for r in self.state.history if "val_arm" in r), default=float("inf"))

    def _resume_or_start(self) -> Stats:
        clean_run_dir(self.out)
        datasets = list(self.sources.datasets.values())
        fresh = policy_stats(self.preset.policy, datasets, pooled_stats(datasets, NORMALIZED))
        if not (self.out / LATEST).is_file():
            return fresh
        ckpt, meta = read_checkpoint(self.out)
        _check_resume(meta, self.meta, ckpt)
        stats = read_stats(ckpt)
        if stats.content_hash != fresh.content_hash:
            raise R2S2RError(f"{ckpt / STATS_FILE}: statistics of other datasets (content hash differs)")
        state, groups, tensors = read_state(ckpt)
        model_t = {k[len("model/") :]: v for k, v in tensors.items() if k.startswith("model/")}
        load_state(self.model, model_t, ckpt / TENSORS)
        ema = read_tensors(ckpt / WEIGHTS)
        check_state(self.ema.state_dict(), ema, ckpt / WEIGHTS)
        self.ema.load_state_dict(ema)
        load_optimizer(self.opt, tensors, groups, ckpt / TENSORS)
        if len(state.rng_states) != self.info.world:
            raise R2S2RError(
                f"{ckpt / STATE}: {len(state.rng_states)} generator states for {self.info.world} processes"
            )
        self.rng = restore_rng(state.rng_states[self.info.rank], ckpt / STATE)
        self.state = state
        return stats

    def step(self, net: torch.nn.Module, batch: Batch, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        dev, norm = self.dev, self.normalizer
        obs = {c: torch.from_numpy(x).to(dev, non_blocking=True) for c, x in batch.images.items()}
        obs["proprio"] = torch.from_numpy(batch.proprio).to(dev)
        if batch.past_proprio is not None:
            obs[PAST + "proprio"] = torch.from_numpy(batch.past_proprio).to(dev)
        images, proprio = model_inputs(self.preset.policy, norm, obs)
        actions = encode_actions(self.preset.policy, norm, torch.from_numpy(batch.actions).to(dev), obs["proprio"])
        noise, t = torch.from_numpy(batch.noise).to(dev), torch.from_numpy(batch.t).to(dev)
        lr = lr_at(step, self.preset.train)
        for g in self.opt.param_groups:
            g["lr"] = lr
        labels = None if batch.object_state is None else torch.from_numpy(batch.object_state).to(dev)
        loss = net(images, proprio, actions, noise, t, labels)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.preset.train.grad_clip)
        self.opt.step()
        self.ema.update(self.model, step)
        for n, c in batch.counts.items():
            self.local[n] += c
        return loss.detach(), gnorm.detach()

    def totals(self) -> dict[str, int]:
        summed = distributed.all_sum(self.local, self.info)
        return {n: self.state.samples[n] + summed[n] for n in summed}

    def save(self, step: int, batch: Batch) -> Path | None:
        rng_states = distributed.gather(batch.rng_state, self.info)
        samples = self.totals()
        path = None
        if self.info.main:
            tensors, groups = optimizer_files(self.model, self.opt)
            state = TrainState(step, samples, rng_states, self.state.history)
            files = {
                WEIGHTS: tensors_bytes(self.ema.state_dict()),
                STATS_FILE: (json.dumps(self.stats.to_json(), indent=1, sort_keys=True) + "\n").encode(),
                TENSORS: tensors_bytes(tensors),
                STATE: state_json(state, groups),
            }
            path = write_checkpoint(self.out, step, self.meta, files, self.preset.train.keep_checkpoints)
        distributed.barrier(self.info)
        return path


def train(
    real: Path,
    sims: Sequence[Path],
    out: Path,
    preset: Preset,
    *,
    device: str = "cpu",
    stop_at: int | None = None,
    checkpoint_at: tuple[int, ...] = (),
    on_step: StepCallback | None = None,
    tensorboard: bool = False,
) -> TrainResult:
    """Train ``preset`` on ``real`` + ``sims`` into run folder ``out`` (resumed if it holds a checkpoint).

    ``stop_at``: stop after that step, having saved a checkpoint there (as a run killed then); a later
    call with the same arguments resumes. ``checkpoint_at``: steps that also get a checkpoint (and its
    held-out error) besides every ``checkpoint_every``: the folder then is what a run stopped there
    leaves. Under ``torchrun`` every process calls this; rank 0 writes.
    """
    if tensorboard:
        require_tensorboard()
    tc = preset.train
    if stop_at is not None and not 1 <= stop_at <= tc.steps:
        raise ConfigError(f"stop_at: expected a step in [1, {tc.steps}], got {stop_at}")
    info, dev = distributed.setup(device)
    # a file at ``out`` fails now, not at the first checkpoint
    out = output_dir(out, "a training run folder", create=False)
    sources = open_sources(real, sims, preset.policy, tc.holdout, tc.seed)
    for ds in sources.datasets.values():
        note = resize_note(ds, preset.policy)
        if note is not None and info.main:
            warnings.warn(note, stacklevel=2)
    writer = None
    try:
        run = TrainingRun(sources, out, preset, info, dev)
        start = run.state.step
        last = stop_at or tc.steps
        if start >= last:
            raise R2S2RError(f"{out}: already trained to step {start} (asked for {last}); nothing to do")
        if tensorboard and info.main:
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(str(out / "tensorboard"), purge_step=start + 1)
        net: torch.nn.Module = run.model
        if info.world > 1:
            net = torch.nn.parallel.DistributedDataParallel(run.model, device_ids=[dev] if dev.type == "cuda" else None)
        net.train()
        path = None
        loss_sum = torch.zeros((), device=dev)
        window, t0 = 0, time.perf_counter()
        run_start = t0 - next((r["seconds"] for r in reversed(run.state.history) if "seconds" in r), 0.0)
        with BatchLoader(
            run.mixture, preset.policy, tc.shift_px, run.rng, tc.prefetch, tc.cache_mb << 20, tc.flow_samples
        ) as loader:
            for step in range(start + 1, last + 1):
                batch = loader.next()
                loss, gnorm = run.step(net, batch, step)
                loss_sum += loss
                window += 1
                record = None
                checkpoint = step % tc.checkpoint_every == 0 or step == last or step in checkpoint_at
                if step % tc.log_every == 0 or checkpoint:
                    mean_loss = loss_sum.clone()
                    if info.world > 1:
                        dist.all_reduce(mean_loss)
                    elapsed = time.perf_counter() - t0
                    record = {
                        "step": step,
                        "loss": float(mean_loss) / (window * info.world),
                        "lr": lr_at(step, tc),
                        "grad_norm": float(gnorm),
                        "samples_per_s": window * tc.batch_size / elapsed,
                        "samples": run.totals(),
                        "seconds": time.perf_counter() - run_start,  # training wall time so far, resumes included
                    }
                    best = run.best_val()
                    if checkpoint:
                        record.update(run.validate())
                    run.state.history.append(record)
                    if writer is not None:
                        for k in ("loss", "lr", "grad_norm", "samples_per_s"):
                            writer.add_scalar(f"train/{k}", record[k], step)
                        for k in (k for k in record if k.startswith("val_")):
                            writer.add_scalar(f"val/{k[4:]}", record[k], step)
                        for n, c in record["samples"].items():
                            writer.add_scalar(f"samples/{n}", c, step)
                    loss_sum.zero_()
                    window, t0 = 0, time.perf_counter()
                if checkpoint:
                    path = run.save(step, batch) or path
                    if info.main and is_best(record.get("val_arm", float("inf")), best, tc.best_tolerance):
                        mark_best(out, path, tc.keep_checkpoints)
                if on_step is not None and info.main:
                    on_step(step, record)
        return TrainResult(path or out, last, start, run.totals(), run.state.history)
    finally:
        if writer is not None:
            writer.close()
        sources.close()
