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
  only), n, seed, image size, condition mix, whether it renders shadows (``sim_data_shadows``). ``data/``
  with ``stats.json`` (admission, throughput).
- ``train-<policy>``: the data stages' hashes, the preset's policy and training configs (steps,
  ratio, seed), torch threads (``training_threads``). ``run/`` (checkpoints) and ``history.json`` (the
  training log). The training stages run side by side in their own processes, their threads from
  ``training_threads`` (2 cores, 5 policies: four one-thread runs two at a time, the fifth on both).
  The baseline's run also keeps a copy of its folder at each early-stop step (``early/``).
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
- ``train-<baseline>@<k>``, ``anchor-<baseline>@<k>`` and ``anchor-<baseline>@<k>-<gw|uw>``: the design's
  baseline stopped at training step k (``StudyProfile.anchor_steps``): its training's key and the step;
  the full run's copy at step k (trained again only where that copy is missing), evaluated like a study
  policy, for the agreement only (``r2s2r.study.policy_stages``).
- ``videos-<policy>``: the evaluation stage's hash, the rule choosing the trials, the video format.
  The trials the report shows (a success and a failure per condition kind, where there are any),
  re-run with their waves and filmed: ``videos/``, ``clips.json``.

Every key also holds the r2s2r version. The report is rebuilt from the stage outputs on every run.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

import r2s2r
from r2s2r import files
from r2s2r.study.costs import COST_S
from r2s2r.study.design import Design, SimConfig
from r2s2r.study.policy_stages import (
    LAB_IMAGES,
    PlannedStage,
    early_anchor_stages,
    early_name,
    film_stage,
    lab_eval_stage,
    reference_anchor_stages,
    sim_eval_stage,
    train_stage,
)
from r2s2r.study.profiles import StudyProfile
from r2s2r.study.stages import StageRecord, Stages, key_hash, run_side_by_side
from r2s2r.train.presets import get_preset
from r2s2r.train.threads import train_threads


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


def _sim_scale(image_size: int, shadows: bool) -> float:
    """A simulated trajectory's cost against one at 96 px, lean: renders are cheap; physics and planning stay."""
    return (0.4 + 0.6 * image_size / 96) * (COST_S["sim_shadows"] if shadows else 1.0)


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
        } | ({"shadows": True} if p.sim_data_shadows else {})  # lean data keeps the keys it had before the option
        sims[cfg.name] = f"sim-{cfg.name}"
        est = p.n_sim * COST_S["sim_admitted_96px"] * _sim_scale(p.image_size, p.sim_data_shadows) / workers
        run = lambda d, cfg=cfg: steps.simulate(d, p, cfg, cal_dir, real_dir, workers, console)  # noqa: E731
        out.append(PlannedStage(sims[cfg.name], key, run, est, f"{p.n_sim} sim trajectories, {cfg.label}"))
    by_name = {s.name: s for s in out}
    policies: dict[str, tuple[str, str]] = {}
    videos: dict[str, str] = {}
    sim_evals: dict[str, dict[str, str]] = {}
    cores = train_threads()
    runs = training_threads(len(design.policies), cores)
    threads = dict(zip(design.policies, runs, strict=True))
    side = cores > 1 and len(design.policies) > 1
    early_steps = p.anchor_steps if p.sim_worlds else ()  # the baseline stopped early (agreement anchors)
    trains, after = [], []  # every training first (side by side), then each policy's evaluations

    def train(pol, stop_at=None, keep_at=(), full=None) -> PlannedStage:
        real, sim_stages = by_name[train_data[pol.n_real or p.n_real]], [by_name[sims[c.name]] for c in pol.sims]
        alongside = side and stop_at is None  # an early stop: after the trainings, copied from its full run
        stage = train_stage(
            pol, p, real, sim_stages, stages, threads[pol], cores, alongside, console, stop_at, keep_at, full
        )
        trains.append(stage)
        return stage

    full_runs = {}
    for pol in design.policies:
        tr = full_runs[pol.name] = train(pol, keep_at=early_steps if pol.name == design.baseline else ())
        ev = lab_eval_stage(pol.name, pol, p, tr, stages, workers, console)
        in_sim = [sim_eval_stage(pol.name, pol, p, tr, ev, w, cal_key, stages, workers, console) for w in p.sim_worlds]
        after += [ev, *in_sim]
        if p.film == "all" or (p.film == "baseline" and pol.name == design.baseline):
            film = film_stage(pol, p, tr, ev, stages, workers, console)
            after.append(film)
            videos[pol.name] = film.name
        policies[pol.name] = (tr.name, ev.name)
        sim_evals[pol.name] = {w: s.name for w, s in zip(p.sim_worlds, in_sim, strict=True)}
    anchors: dict[str, dict[str, PlannedStage]] = {}
    if p.sim_worlds:  # anchors serve the sim-vs-lab agreement only
        anchors = {a: reference_anchor_stages(a, p, cal_key, stages, workers, console) for a in p.anchors}
        base = design.policy(design.baseline)
        for k in early_steps:  # the baseline stopped early: its full run's copy at step k
            stop = train(base, k, full=full_runs[base.name])
            early = early_anchor_stages(base, stop, p, cal_key, stages, workers, console)
            anchors[early_name(base, k)] = early
    after += [s for by_place in anchors.values() for s in by_place.values()]
    anchor_names = {a: {w: s.name for w, s in by_place.items()} for a, by_place in anchors.items()}
    return StudyPlan(
        tuple(out + trains + after), "calibrate", demos, sims, policies, videos, sim_evals, anchor_names, cores
    )


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
