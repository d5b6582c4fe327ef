"""The planned stages of one policy: its training, its evaluations (in the lab, and on the lab's trial list
in each simulated world), its filmed trials; and the agreement anchors' evaluations.

Anchors are policies evaluated for the sim-vs-lab agreement only, never study policies (SIMPLER's
statistics need policies whose success differs): reference policies (``StudyProfile.anchors``: random,
scripted, hold), and the design's baseline stopped early in its training (``StudyProfile.anchor_steps``).
An early stop is the baseline's own run, the same data, schedule, seed and torch threads, ended at step
k: the checkpoint the full training passed through at step k (its best by held-out error up to k). The
full training keeps a copy of its run folder as it passes step k, which the early stop takes instead of
training the same k steps again (it trains them when the copy is missing: a full run resumed past k, or
one trained before the copies were kept).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

import r2s2r
from r2s2r.study.costs import COST_S, eval_estimate_s, observed_share
from r2s2r.study.design import PolicySpec
from r2s2r.study.profiles import StudyProfile
from r2s2r.study.stages import Stages, key_hash

# How the lab twin draws a policy's images: in the keys of the stages that record or act on them (demos,
# evaluation), so a study never mixes the two. 2 (2026-12-06): small renders supersampled, not multisampled
# (r2s2r.world.rendering.render_quality).
LAB_IMAGES = 2


@dataclass(frozen=True)
class PlannedStage:
    name: str
    key: dict[str, Any]
    run: Callable[[Path], dict[str, Any]]
    estimate_s: float  # wall seconds on this machine's class, with the run's workers
    what: str
    # None: runs alone in the study's process; else it runs beside the side-by-side stages next to it
    # in the plan, in its own process (``run`` then pickles), occupying this many cores
    cores: int | None = None

    @property
    def side_by_side(self) -> bool:
        return self.cores is not None

    @property
    def hash(self) -> str:
        return key_hash(self.key)


def early_name(pol: PolicySpec, step: int) -> str:
    """The name of ``pol`` stopped at training step ``step`` (an agreement anchor): ``real-only@500``."""
    return f"{pol.name}@{step}"


def train_stage(
    pol: PolicySpec,
    p: StudyProfile,
    real: PlannedStage,
    sim_stages: list[PlannedStage],
    stages: Stages,
    threads: int,
    cores: int,
    side: bool,
    console: Console,
    stop_at: int | None = None,
    keep_at: tuple[int, ...] = (),
    full: PlannedStage | None = None,
) -> PlannedStage:
    """The training of ``pol`` on ``threads`` of the ``cores`` training has (``side``: beside the others,
    in its own process); ``stop_at``: the same run ended at that step (an early-stop anchor), copied
    from ``full`` (the full run's stage, which kept a copy at that step: ``keep_at``) when it can be."""
    from r2s2r.policy.checkpoint import step_name
    from r2s2r.study import steps

    preset = steps.policy_preset(p, pol)
    key = {
        "stage": "train",
        "real": real.hash,
        "sims": [s.hash for s in sim_stages],
        "preset": p.preset,
        "policy": dataclasses.asdict(preset.policy),
        "train": dataclasses.asdict(preset.train),
        "torch_threads": threads,  # CPU training is reproducible for a given thread count only
        "version": r2s2r.__version__,
    }
    if stop_at is not None:  # (a full training keeps the key it had before early stops existed)
        key["stop_at"] = stop_at
    if keep_at:  # checkpoints (and held-out errors) at those steps too, its folder copied there
        key["keep_at"] = list(keep_at)
    # beside others: in its own process, progress as plain lines (two bars cannot share a terminal)
    full_dir = None if full is None else stages.dir(full.name, full.key)
    run = functools.partial(
        steps.train_policy, pol=pol, preset=preset, real_dir=stages.dir(real.name, real.key),
        sim_dirs=[stages.dir(s.name, s.key) for s in sim_stages], threads=threads,
        console=None if side else console, stop_at=stop_at, keep_at=keep_at, full_run=full_dir,
    )  # fmt: skip
    shared = threads < cores  # on a share of the cores, beside other trainings
    step_s = COST_S["train_step"].get(p.preset, 1.0) * (COST_S["train_lane_slowdown"] if shared else 1.0)
    n = stop_at or preset.train.steps
    name = pol.name if stop_at is None else early_name(pol, stop_at)
    of = "" if stop_at is None else f" of {preset.train.steps}"
    what = f"train {name} ({n}{of} steps, {threads} thread{'s' if threads > 1 else ''})"
    estimate = n * step_s
    if full_dir is not None and stop_at is not None:
        # the full run keeps its copy at ``stop_at`` when it trains now, or kept it when it trained before
        if not stages.done(full.name, full.key) or (full_dir / steps.EARLY / step_name(stop_at)).is_dir():
            what = f"{name}: the copy {full.name} kept at step {stop_at} of {preset.train.steps}"
            estimate = COST_S["early_copy"]
    return PlannedStage(f"train-{name}", key, run, estimate, what, threads if side else None)


def lab_eval_stage(
    name: str,
    pol: PolicySpec,
    p: StudyProfile,
    train: PlannedStage,
    stages: Stages,
    workers: int,
    console: Console,
    anchor: bool = False,
) -> PlannedStage:
    """The lab evaluation of policy ``name`` (``pol``, trained by ``train``) on the profile's trial list:
    stage ``eval-<name>``, or ``anchor-<name>`` for an agreement anchor."""
    from r2s2r.evaluate.runner import EVAL_TORCH_THREADS
    from r2s2r.study import steps

    key = {
        "stage": "eval",
        "train": train.hash,
        "lab": p.lab,
        "trials": dataclasses.asdict(p.trials),
        "seed": p.seed,
        "batch": p.eval_batch,
        "max_duration": p.max_duration,
        "torch_threads": EVAL_TORCH_THREADS,  # the policy's sampled chunks depend on it
        "version": r2s2r.__version__,
        "lab_images": LAB_IMAGES,
    }
    train_dir = stages.dir(train.name, train.key)
    return PlannedStage(
        f"{'anchor' if anchor else 'eval'}-{name}",
        key,
        lambda d: steps.evaluate_policy(d, name, p, train_dir, workers, console),
        eval_estimate_s(p, workers, observed_share(steps.policy_preset(p, pol).policy)),
        f"evaluate {name}{' (an agreement anchor)' if anchor else ''} on {p.trials.total} lab trials",
    )


def film_stage(
    pol: PolicySpec, p: StudyProfile, train: PlannedStage, ev: PlannedStage, stages: Stages, workers: int, console
) -> PlannedStage:
    """The filming of ``pol``'s trials the report shows (trained by ``train``, evaluated by ``ev``)."""
    from r2s2r.study import steps
    from r2s2r.study.clips import CLIP_RULE
    from r2s2r.video import PREVIEW, TILE_SIZE, VIDEO_CAMERAS

    key = {
        "stage": "videos",
        "eval": ev.hash,
        "rule": CLIP_RULE,
        "video": {"cameras": list(VIDEO_CAMERAS), "tile": list(TILE_SIZE), "crf": PREVIEW.crf},
        "version": r2s2r.__version__,
    }
    train_dir, eval_dir = stages.dir(train.name, train.key), stages.dir(ev.name, ev.key)
    kinds = sum(1 for n in p.trials.counts.values() if n)
    # up to two filmed trials per kind, replayed from the evaluation's kept actions, side by side on the workers
    clip_steps = p.max_duration * 10 * COST_S["clip_fill"]
    step_s = COST_S["video_frame"] + COST_S["lab_step_unobserved"]
    est = COST_S["film_start"] + 2 * kinds * clip_steps * step_s / max(1, min(workers, p.eval_batch))
    return PlannedStage(
        f"videos-{pol.name}",
        key,
        lambda d: steps.film_policy(d, pol, p, train_dir, eval_dir, workers, console),
        est,
        f"film {pol.name}: a success and a failure per condition kind",
    )


def sim_eval_stage(
    name: str,
    pol: PolicySpec,
    p: StudyProfile,
    train: PlannedStage,
    ev: PlannedStage,
    world: str,
    cal_key: dict[str, Any],
    stages: Stages,
    workers: int,
    console: Console,
    stage: str | None = None,
) -> PlannedStage:
    """The evaluation of policy ``name`` (``pol``, trained by ``train``) on the lab's trial list in the
    ``world`` (grounded or ungrounded) sim, with the settings of its lab evaluation ``ev``; ``stage``:
    the stage's name (default ``simeval-<name>-<gw|uw>``)."""
    from r2s2r.generate.commands import WORLD_FILE_OF
    from r2s2r.study import steps

    key = {
        "stage": "simeval",
        "train": train.hash,
        "calibrate": key_hash(cal_key),
        "world": world,
        "shadows": p.sim_eval_shadows,
        **{k: ev.key[k] for k in ("lab", "trials", "seed", "batch", "max_duration", "torch_threads", "version")},
    }
    world_file = stages.dir("calibrate", cal_key) / WORLD_FILE_OF[world]
    train_dir = stages.dir(train.name, train.key)
    est = eval_estimate_s(p, workers, observed_share(steps.policy_preset(p, pol).policy), world)
    return PlannedStage(
        stage or f"simeval-{name}-{world[0]}w",
        key,
        lambda d: steps.evaluate_policy(d, name, p, train_dir, workers, console, world_file),
        est,
        f"evaluate {name} on the lab's {p.trials.total} trials in the {world} sim",
    )


def early_anchor_stages(
    pol: PolicySpec,
    train: PlannedStage,
    p: StudyProfile,
    cal_key: dict[str, Any],
    stages: Stages,
    workers: int,
    console: Console,
) -> dict[str, PlannedStage]:
    """The evaluations of ``train`` (``pol`` stopped early, at ``train.key["stop_at"]``) on the lab's
    trial list, in the lab ("lab") and in each of the profile's simulated worlds."""
    name = early_name(pol, train.key["stop_at"])
    out = {"lab": lab_eval_stage(name, pol, p, train, stages, workers, console, anchor=True)}
    for world in p.sim_worlds:
        stage = f"anchor-{name}-{world[0]}w"
        out[world] = sim_eval_stage(name, pol, p, train, out["lab"], world, cal_key, stages, workers, console, stage)
    return out


def reference_anchor_stages(
    anchor: str, p: StudyProfile, cal_key: dict[str, Any], stages: Stages, workers: int, console: Console
) -> dict[str, PlannedStage]:
    """The evaluations of the reference policy ``anchor`` on the lab's trial list: in the lab ("lab")
    and in each of the profile's simulated worlds; they depend on no training."""
    from r2s2r.generate.commands import WORLD_FILE_OF
    from r2s2r.study import steps

    key = {
        "stage": "anchor",
        "policy": anchor,
        "lab": p.lab,
        "trials": dataclasses.asdict(p.trials),
        "seed": p.seed,
        "batch": p.eval_batch,
        "max_duration": p.max_duration,
        "image_size": p.image_size,
        "version": r2s2r.__version__,
        "lab_images": LAB_IMAGES,
    }
    # a random policy reads its frames at each re-plan (1 of 8 steps); the scripted operator reads none
    observed = 1 / 8 if anchor == "random" else 0.0
    out = {
        "lab": PlannedStage(
            f"anchor-{anchor}",
            key,
            lambda d: steps.evaluate_anchor(d, anchor, p, workers, console),
            eval_estimate_s(p, workers, observed),
            f"evaluate the {anchor} policy (an agreement anchor) on {p.trials.total} lab trials",
        )
    }
    for world in p.sim_worlds:
        world_file = stages.dir("calibrate", cal_key) / WORLD_FILE_OF[world]
        wkey = key | {"calibrate": key_hash(cal_key), "world": world, "shadows": p.sim_eval_shadows}
        out[world] = PlannedStage(
            f"anchor-{anchor}-{world[0]}w",
            wkey,
            lambda d, wf=world_file: steps.evaluate_anchor(d, anchor, p, workers, console, wf),
            eval_estimate_s(p, workers, observed, world),
            f"evaluate the {anchor} policy on the lab's {p.trials.total} trials in the {world} sim",
        )
    return out
