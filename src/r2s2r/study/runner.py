"""The study's stages, planned from a profile and a design, run with caching (``Stages``).

Stages and what each key holds (a stage reruns when any of it changes, and so does every stage
that reads it):

- ``calibrate``: lab, seed. ``r2s2r calibrate``'s outputs: grounded ``world.json``,
  ``ungrounded.json``, the mismatch report, the raw records.
- ``demos-<n>``: lab, n, seed, image size, how the lab draws images. n teleoperated real demonstrations (``data/``).
- ``labels-<n>``: the demos' and the calibration's hashes; only when the preset's policies learn the
  object's state (``PolicyConfig.object_state``). The demonstrations with per-frame object-state
  labels from their stereo pairs (``data/``); the policies train on these.
- ``sim-<gw-gb|gw-ub|uw-gb|uw-ub>``: the calibration's hash, the demos' hash (grounded behaviour
  only), n, seed, image size, condition mix. ``data/`` with ``stats.json`` (admission, throughput).
- ``train-<policy>``: the data stages' hashes, the preset's policy and training configs (steps,
  ratio, seed), torch threads (``training_threads``). ``run/`` (checkpoints) and ``history.json`` (the
  training log). The training stages run side by side in their own processes, their threads from
  ``training_threads`` (2 cores, 5 policies: four one-thread runs two at a time, the fifth on both).
- ``eval-<policy>``: the training stage's hash, lab, trial plan, seed, batch, trial length, torch threads,
  how the lab draws images.
  ``results.json`` and ``results.md``.
- ``simeval-<policy>-<gw|uw>``: the training stage's hash, the calibration's hash, the world
  (grounded or ungrounded), whether it renders shadows, and the lab evaluation's trial settings: the
  policy on the lab's very trial list in that simulated world (``r2s2r eval --world``), for the
  sim-vs-lab agreement.
- ``anchor-<random|scripted|hold>`` and ``anchor-<name>-<gw|uw>``: the profile's reference policies
  (``StudyProfile.anchors``) on the lab's trial list, in the lab and in each simulated world, with the
  lab evaluation's trial settings and the image size (the world's: the calibration's hash); they widen
  the spread of success the sim-vs-lab agreement is measured on.
- ``videos-<policy>``: the evaluation stage's hash, the rule choosing the trials, the video format.
  The trials the report shows (a success and a failure per condition kind, where there are any),
  re-run with their waves and filmed: ``videos/``, ``clips.json``.

Every key also holds the r2s2r version. The report is rebuilt from the stage outputs on every run.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

import r2s2r
from r2s2r import files
from r2s2r.study.costs import COST_S, eval_estimate_s, observed_share
from r2s2r.study.design import Design, PolicySpec, SimConfig
from r2s2r.study.profiles import StudyProfile
from r2s2r.study.stages import StageRecord, Stages, key_hash, run_side_by_side
from r2s2r.train.presets import get_preset
from r2s2r.train.threads import train_threads

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


@dataclass(frozen=True)
class StudyPlan:
    """Every stage of a study, in run order; ``policies`` maps a policy to its train and eval stages,
    ``videos`` to the stage filming its trials."""

    stages: tuple[PlannedStage, ...]
    calibrate: str
    demos: dict[int, str]  # n_real -> stage name
    sims: dict[str, str]  # SimConfig.name -> stage name
    policies: dict[str, tuple[str, str]]  # policy -> (train stage, eval stage)
    videos: dict[str, str]  # policy -> videos stage
    sim_evals: dict[str, dict[str, str]]  # policy -> world ("grounded", "ungrounded") -> sim evaluation stage
    anchors: dict[str, dict[str, str]]  # anchor policy -> "lab" or a world -> its evaluation stage
    cores: int = 1  # what the side-by-side stages share

    def stage(self, name: str) -> PlannedStage:
        return next(s for s in self.stages if s.name == name)


def training_threads(policies: int, cores: int | None = None) -> list[int]:
    """Torch threads of each of a study's ``policies`` trainings on ``cores`` (default: the training
    cores, ``train_threads``), run side by side in plan order: rounds of min(cores, policies) runs
    sharing the cores out, and the runs of a last, smaller round sharing all of them. Two one-thread
    trainings do 1.3-1.5 x the steps of one two-thread training (``benchmarks/train_lanes.py``)."""
    cores = cores or train_threads()
    lanes = max(1, min(cores, policies))
    full, rest = divmod(policies, lanes)
    last = [max(1, cores // rest)] * rest if rest else []
    return [max(1, cores // lanes)] * (full * lanes) + last


def _sim_scale(image_size: int) -> float:
    return 0.4 + 0.6 * image_size / 96  # simulated renders are cheap; physics and planning stay


def plan_study(profile: StudyProfile, design: Design, root: Path, workers: int, console: Console) -> StudyPlan:
    """The stages of ``design`` at ``profile``'s sizes, their keys, functions and time estimates."""
    from r2s2r.study import steps

    p, version = profile, r2s2r.__version__
    stages = Stages(root)
    out: list[PlannedStage] = []
    cal_key = {"stage": "calibrate", "lab": p.lab, "seed": p.seed, "version": version}
    out.append(
        PlannedStage(
            "calibrate", cal_key, lambda d: steps.calibrate(d, p, console), COST_S["calibrate"], "ground the simulator"
        )
    )
    demos: dict[int, str] = {}
    for n in sorted({pol.n_real or p.n_real for pol in design.policies} | {p.n_real}):
        key = {"stage": "demos", "lab": p.lab, "n": n, "seed": p.seed, "image_size": p.image_size, "version": version}
        key["lab_images"] = LAB_IMAGES
        if p.perturb_std:  # (clean demos keep the key they had before DART could be asked for)
            key["perturb_std"] = p.perturb_std
        demos[n] = f"demos-{n}"
        est = n * 1.1 * COST_S["demo_steps"] * COST_S["lab_step"] / workers
        run = lambda d, n=n: steps.collect(d, p, n, workers, console)  # noqa: E731
        out.append(PlannedStage(demos[n], key, run, est, f"{n} real demos"))
    real = next(s for s in out if s.name == demos[p.n_real])  # the grounded behaviour's sources
    real_dir, cal_dir = stages.dir(real.name, real.key), stages.dir("calibrate", cal_key)
    train_data = dict(demos)  # n_real -> the stage whose data/ the policies train on
    if get_preset(p.preset).policy.object_state:
        for n, name in demos.items():
            d = next(s for s in out if s.name == name)
            key = {"stage": "labels", "demos": d.hash, "calibrate": key_hash(cal_key), "version": version}
            src = stages.dir(d.name, d.key)
            run = lambda f, src=src: steps.label(f, src, cal_dir, console)  # noqa: E731
            train_data[n] = f"labels-{n}"
            out.append(PlannedStage(train_data[n], key, run, n * COST_S["label_demo"], f"object labels of {n} demos"))
    sims: dict[str, str] = {}
    for cfg in design.sim_configs:
        key = {
            "stage": "generate",
            "config": dataclasses.asdict(cfg),
            "calibrate": key_hash(cal_key),
            "demos": real.hash if cfg.behavior == "grounded" else None,
            "n": p.n_sim,
            "seed": p.seed,
            "image_size": p.image_size,
            "mix": p.mix.fractions,
            "version": version,
        }
        sims[cfg.name] = f"sim-{cfg.name}"
        est = p.n_sim * COST_S["sim_admitted_96px"] * _sim_scale(p.image_size) / workers
        run = lambda d, cfg=cfg: steps.simulate(d, p, cfg, cal_dir, real_dir, workers, console)  # noqa: E731
        out.append(PlannedStage(sims[cfg.name], key, run, est, f"{p.n_sim} sim trajectories, {cfg.label}"))
    by_name = {s.name: s for s in out}
    policies: dict[str, tuple[str, str]] = {}
    videos: dict[str, str] = {}
    sim_evals: dict[str, dict[str, str]] = {}
    cores = train_threads()
    threads = training_threads(len(design.policies), cores)
    trains, after = [], []  # every training first (side by side), then each policy's evaluations
    for pol, th in zip(design.policies, threads, strict=True):
        side = cores > 1 and len(design.policies) > 1
        train, ev, film = _policy_stages(pol, p, by_name, train_data, sims, stages, workers, th, side, console)
        in_sim = [_sim_eval_stage(pol, p, train, ev, w, cal_key, stages, workers, console) for w in p.sim_worlds]
        trains.append(train)
        after += [ev, *in_sim, film]
        by_name.update({s.name: s for s in (train, ev, film)})
        policies[pol.name] = (train.name, ev.name)
        videos[pol.name] = film.name
        sim_evals[pol.name] = {w: s.name for w, s in zip(p.sim_worlds, in_sim, strict=True)}
    anchors = {a: _anchor_stages(a, p, cal_key, stages, workers, console) for a in p.anchors if p.sim_worlds}
    after += [s for by_place in anchors.values() for s in by_place.values()]
    anchor_names = {a: {w: s.name for w, s in by_place.items()} for a, by_place in anchors.items()}
    return StudyPlan(
        tuple(out + trains + after), "calibrate", demos, sims, policies, videos, sim_evals, anchor_names, cores
    )


def _anchor_stages(
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


def _sim_eval_stage(
    pol: PolicySpec,
    p: StudyProfile,
    train: PlannedStage,
    ev: PlannedStage,
    world: str,
    cal_key: dict[str, Any],
    stages: Stages,
    workers: int,
    console: Console,
) -> PlannedStage:
    """The evaluation of ``pol`` on the lab's trial list in the ``world`` (grounded or ungrounded) sim."""
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
    short = f"{world[0]}w"
    return PlannedStage(
        f"simeval-{pol.name}-{short}",
        key,
        lambda d: steps.evaluate_policy(d, pol, p, train_dir, workers, console, world_file),
        est,
        f"evaluate {pol.name} on the lab's {p.trials.total} trials in the {world} sim",
    )


def _policy_stages(
    pol: PolicySpec,
    p: StudyProfile,
    by_name: dict[str, PlannedStage],
    demos: dict[int, str],
    sims: dict[str, str],
    stages: Stages,
    workers: int,
    threads: int,
    side: bool,
    console: Console,
) -> tuple[PlannedStage, PlannedStage, PlannedStage]:
    """The training (on ``threads`` torch threads; ``side``: beside the others), evaluation and filming
    stages of ``pol``."""
    from r2s2r.study import steps
    from r2s2r.study.clips import CLIP_RULE
    from r2s2r.video import PREVIEW, TILE_SIZE, VIDEO_CAMERAS

    real = by_name[demos[pol.n_real or p.n_real]]
    sim_stages = [by_name[sims[c.name]] for c in pol.sims]
    preset = steps.policy_preset(p, pol)
    train_key = {
        "stage": "train",
        "real": real.hash,
        "sims": [s.hash for s in sim_stages],
        "preset": p.preset,
        "policy": dataclasses.asdict(preset.policy),
        "train": dataclasses.asdict(preset.train),
        "torch_threads": threads,  # CPU training is reproducible for a given thread count only
        "version": r2s2r.__version__,
    }
    real_dir = stages.dir(real.name, real.key)
    sim_dirs = [stages.dir(s.name, s.key) for s in sim_stages]
    train_name = f"train-{pol.name}"
    # beside others: in its own process, progress as plain lines (two bars cannot share a terminal)
    run = functools.partial(
        steps.train_policy, pol=pol, preset=preset, real_dir=real_dir, sim_dirs=sim_dirs, threads=threads,
        console=None if side else console,
    )  # fmt: skip
    shared = threads < train_threads()  # on a share of the cores, beside other trainings
    step_s = COST_S["train_step"].get(p.preset, 1.0) * (COST_S["train_lane_slowdown"] if shared else 1.0)
    what = f"train {pol.name} ({preset.train.steps} steps, {threads} thread{'s' if threads > 1 else ''})"
    train = PlannedStage(train_name, train_key, run, p.steps * step_s, what, threads if side else None)
    from r2s2r.evaluate.runner import EVAL_TORCH_THREADS

    eval_key = {
        "stage": "eval",
        "train": key_hash(train_key),
        "lab": p.lab,
        "trials": dataclasses.asdict(p.trials),
        "seed": p.seed,
        "batch": p.eval_batch,
        "max_duration": p.max_duration,
        "torch_threads": EVAL_TORCH_THREADS,  # the policy's sampled chunks depend on it
        "version": r2s2r.__version__,
        "lab_images": LAB_IMAGES,
    }
    train_dir = stages.dir(train_name, train_key)
    est = eval_estimate_s(p, workers, observed_share(preset.policy))
    ev = PlannedStage(
        f"eval-{pol.name}",
        eval_key,
        lambda d: steps.evaluate_policy(d, pol, p, train_dir, workers, console),
        est,
        f"evaluate {pol.name} on {p.trials.total} lab trials",
    )
    videos_key = {
        "stage": "videos",
        "eval": ev.hash,
        "rule": CLIP_RULE,
        "video": {"cameras": list(VIDEO_CAMERAS), "tile": list(TILE_SIZE), "crf": PREVIEW.crf},
        "version": r2s2r.__version__,
    }
    eval_dir = stages.dir(ev.name, eval_key)
    kinds = sum(1 for n in p.trials.counts.values() if n)
    waves = math.ceil(p.trials.total / p.eval_batch)
    # the waves holding the chosen trials run again (often fewer than all), then up to two filmed trials per kind
    clip_steps = p.max_duration * 10 * COST_S["clip_fill"]
    film_est = est * min(1.0, (kinds + 1) / waves) + 2 * kinds * clip_steps * COST_S["video_frame"]
    film = PlannedStage(
        f"videos-{pol.name}",
        videos_key,
        lambda d: steps.film_policy(d, pol, p, train_dir, eval_dir, workers, console),
        film_est,
        f"film {pol.name}: a success and a failure per condition kind",
    )
    return train, ev, film


def _blocks(stages: tuple[PlannedStage, ...]) -> list[list[PlannedStage]]:
    """``stages`` cut into runs: each side-by-side stretch is one block, every other stage its own."""
    out: list[list[PlannedStage]] = []
    for s in stages:
        if s.side_by_side and out and out[-1][-1].side_by_side:
            out[-1].append(s)
        else:
            out.append([s])
    return out


def run_plan(plan: StudyPlan, root: Path, console: Console) -> dict[str, StageRecord]:
    """Run every stage of ``plan`` in order (finished ones are skipped; side-by-side stretches share
    ``plan.cores``); their records by name, in plan order."""
    stages = Stages(root)
    records: dict[str, StageRecord] = {}
    number = {s.name: i for i, s in enumerate(plan.stages, 1)}

    def done(s: PlannedStage, rec: StageRecord) -> None:
        records[s.name] = rec
        if not rec.cached:
            console.print(f"[green]{s.name}[/] done in {rec.seconds:.0f} s (expected {s.estimate_s:.0f} s)")

    for block in _blocks(plan.stages):
        todo = [s for s in block if not stages.done(s.name, s.key)]
        for s in block:
            cached = s not in todo
            side = f" [dim](side by side on {plan.cores} cores)[/]" if len(todo) > 1 and not cached else ""
            head = f"[bold]{number[s.name]}/{len(plan.stages)} {s.name}[/]: {s.what}"
            console.rule(head + (" [dim](cached)[/]" if cached else side))
            if cached or len(todo) == 1:
                done(s, stages.run(s.name, s.key, s.run))
        if len(todo) > 1:
            by_name = {s.name: s for s in todo}
            for rec in run_side_by_side(root, [(s.name, s.key, s.run, s.cores or 1) for s in todo], plan.cores):
                done(by_name[rec.name], rec)
    return {s.name: records[s.name] for s in plan.stages}


def expected_wall_s(plan: StudyPlan, cached: dict[str, bool]) -> float:
    """The plan's estimated wall time: stage estimates summed, each side-by-side stretch counted as its
    makespan when scheduled as ``run_side_by_side`` does (in order, each when its cores are free);
    ``cached`` stages cost 0."""
    total = 0.0
    for block in _blocks(plan.stages):
        now, running = 0.0, []  # (end, cores)
        for s in (s for s in block if not cached[s.name]):
            need = s.cores or plan.cores
            while running and sum(c for _, c in running) + need > plan.cores:
                now = min(e for e, _ in running)
                running = [(e, c) for e, c in running if e > now]
            running.append((now + s.estimate_s, need))
        total += max((e for e, _ in running), default=now)
    return total


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def stage_table(plan: StudyPlan, root: Path) -> list[dict[str, Any]]:
    """The plan as rows: stage, what, cached, estimated seconds."""
    stages = Stages(root)
    return [
        {
            "stage": s.name,
            "what": s.what,
            "cached": stages.done(s.name, s.key),
            "estimate_s": s.estimate_s,
            "side_by_side": s.side_by_side,
        }
        for s in plan.stages
    ]


def read_json(path: Path) -> Any:
    return files.read_json(path, "a JSON file a study stage writes", expect=None)


__all__ = [
    "PlannedStage",
    "SimConfig",
    "StudyPlan",
    "expected_wall_s",
    "plan_study",
    "run_plan",
    "stage_table",
    "training_threads",
]
