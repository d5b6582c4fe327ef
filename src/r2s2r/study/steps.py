"""What each study stage does in its folder: thin calls into the stage modules, with progress.

Every function takes the stage's folder and returns a JSON-able summary (kept in ``stage.json``).
Each resumes what it can when called again on a folder a killed run left: demonstrations and
simulated datasets continue from their stored episodes, training from its latest checkpoint,
evaluation from its finished waves, filming from its finished (and verified) waves.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from rich.console import Console

from r2s2r import atomic
from r2s2r.study.design import PolicySpec, SimConfig
from r2s2r.study.profiles import StudyProfile

DATA = "data"  # dataset folder inside a demos or sim stage
RUN = "run"  # training run folder inside a train stage
EARLY = "early"  # a train stage's copies of its run folder as it passed the early-stop steps
HISTORY = "history.json"
CLIPS = "clips.json"  # the filmed trials in a videos stage


def calibrate(folder: Path, p: StudyProfile, console: Console) -> dict[str, Any]:
    from r2s2r.calibrate.records import write_calibration
    from r2s2r.calibrate.run import CalibrationConfig, calibrate_lab
    from r2s2r.calibrate.ungrounded import ungrounded_world
    from r2s2r.lab.twin import LabTwin

    def show(stage: str, event: str, seconds: float) -> None:
        if event == "done":
            console.print(f"  calibrate: {stage} ({seconds:.0f} s)")

    cal = calibrate_lab(LabTwin(p.lab), CalibrationConfig(seed=p.seed), on_stage=show)
    report = write_calibration(cal, ungrounded_world(p.seed), folder)
    return {"grounded_closer": report["grounded_closer"], "world_hash": report["world_hash"]}


def collect(folder: Path, p: StudyProfile, n: int, workers: int, console: Console) -> dict[str, Any]:
    from r2s2r.behavior.demos import DemoConfig, collect_demos
    from r2s2r.behavior.perturb import Perturbation
    from r2s2r.lab.twin import LabTwin
    from r2s2r.progress import count_progress
    from r2s2r.world.cell import CellConfig

    lab = LabTwin(p.lab, CellConfig(image_size=p.image_size))
    with count_progress("demos", console) as bar:
        task = bar.add_task("demos", total=n, status="")

        def show(attempt, demos, attempts):
            bar.update(task, completed=demos, status=f"attempts {attempts}, success {demos / attempts:.0%}")

        perturb = Perturbation(p.perturb_std) if p.perturb_std else None
        config = DemoConfig(n=n, seed=p.seed, workers=workers, perturb=perturb)
        stats = collect_demos(lab, folder / DATA, config, p.lab, show)
    return {"demos": stats.demos, "attempts": stats.attempts, "failures": stats.failures, "safety": stats.safety}


def label(folder: Path, demos_dir: Path, cal_dir: Path, console: Console) -> dict[str, Any]:
    from r2s2r.behavior.object_labels import label_with_progress
    from r2s2r.data import Dataset
    from r2s2r.world.params import WorldParams

    world = WorldParams.load(cal_dir / "world.json")
    label_with_progress(demos_dir / DATA, world, folder / DATA, console)
    with Dataset(folder / DATA) as ds:
        return {"episodes": len(ds), "frames": ds.num_frames, "world": world.content_hash()}


def simulate(
    folder: Path, p: StudyProfile, cfg: SimConfig, cal_dir: Path, real_dir: Path, workers: int, console: Console
) -> dict[str, Any]:
    from r2s2r.generate.commands import WORLD_FILE_OF, configuration, progress_status
    from r2s2r.generate.run import RunConfig, generate
    from r2s2r.progress import count_progress

    demos = real_dir / DATA if cfg.behavior == "grounded" else None
    spec, info = configuration(
        cfg.world,
        cfg.behavior,
        cal_dir / WORLD_FILE_OF[cfg.world],
        demos,
        p.seed,
        p.image_size,
        p.mix,
        shadows=p.sim_data_shadows,
    )
    with count_progress("admitted", console) as bar:
        task = bar.add_task("generate", total=p.n_sim, status="")
        stats = generate(
            folder / DATA,
            spec,
            RunConfig(n=p.n_sim, workers=workers),
            info,
            on_attempt=lambda rec, s: bar.update(task, completed=s["admitted"], status=progress_status(s)),
        )
    keep = ("attempts", "admitted", "admission_rate", "failures", "admitted_per_hour_per_worker", "overhead")
    return {k: stats[k] for k in keep}


def policy_preset(p: StudyProfile, pol: PolicySpec):
    """The training preset of ``pol`` under ``p``: the profile's preset, steps and seed; the ratio
    when it co-trains (the policy's own, else the profile's)."""
    from r2s2r.train.presets import get_preset

    preset = get_preset(p.preset)
    ratio = (pol.ratio or p.ratio) if pol.sims else None
    return dataclasses.replace(preset, train=dataclasses.replace(preset.train, steps=p.steps, ratio=ratio, seed=p.seed))


def train_policy(
    folder: Path,
    pol: PolicySpec,
    preset,
    real_dir: Path,
    sim_dirs: list[Path],
    threads: int,
    console: Console | None,
    stop_at: int | None = None,
    keep_at: tuple[int, ...] = (),
    full_run: Path | None = None,
) -> dict[str, Any]:
    """Train ``pol`` into ``folder`` on ``threads`` torch threads (resumes); ``stop_at``: end the run at
    that step (the preset's schedule unchanged: the full run's state at that step). ``console`` None:
    progress as plain lines on stderr (a training run beside others, in its own process).

    ``keep_at``: steps that get a checkpoint, after which the run folder is copied to
    ``folder/early/step_<k>``: what the same run stopped there leaves. ``full_run``: with
    ``stop_at``, the stage folder of the full run; its copy at ``stop_at`` is taken instead of training
    again (the same weights: same data, schedule, seed and threads), else (a copy missing) it trains."""
    import shutil

    import torch

    from r2s2r.policy.checkpoint import LATEST, resolve_checkpoint, step_name
    from r2s2r.progress import count_progress
    from r2s2r.train.loop import train
    from r2s2r.train.state import read_state

    run = folder / RUN
    for stale in (*folder.glob(f".{RUN}.*.tmp"), *(folder / EARLY).glob(".step_*.tmp")):  # copies a kill cut short
        shutil.rmtree(stale, ignore_errors=True)

    def keep_copy(step: int) -> None:  # the run folder as it stands right after step's checkpoint
        copy = folder / EARLY / step_name(step)
        if step in keep_at and not copy.exists():
            with atomic.folder(copy, "a copy of a training run folder") as tmp:
                shutil.copytree(run, tmp, dirs_exist_ok=True)

    kept = None if full_run is None or stop_at is None else full_run / EARLY / step_name(stop_at)
    copied = kept is not None and kept.is_dir()
    if copied and not (run / LATEST).is_file():
        shutil.rmtree(run, ignore_errors=True)  # a run folder without a checkpoint holds nothing to keep
        with atomic.folder(run, "a training run folder") as tmp:
            shutil.copytree(kept, tmp, dirs_exist_ok=True)
    ckpt = resolve_checkpoint(run) if (run / LATEST).is_file() else None
    state = read_state(ckpt)[0] if ckpt is not None else None
    if state is not None:
        keep_copy(state.step)  # a run killed between that checkpoint and its copy
    last = stop_at or preset.train.steps
    if state is None or state.step < last:  # else: finished, killed before stage.json
        torch.set_num_threads(threads)  # the stage's key holds it: CPU weights depend on the thread count
        console = console or Console(stderr=True, force_terminal=False)
        with count_progress(f"train {pol.name}" + (f" to step {stop_at}" if stop_at else ""), console) as bar:
            task = bar.add_task("train", total=last, status="")

            def show(step, record):
                status = f"loss {record['loss']:.4f}  {record['samples_per_s']:.0f} samples/s" if record else None
                bar.update(task, completed=step, **({"status": status} if status else {}))
                keep_copy(step)

            result = train(
                real_dir / DATA, [d / DATA for d in sim_dirs], run, preset, device="auto", stop_at=stop_at,
                checkpoint_at=keep_at, on_step=show,
            )  # fmt: skip
        history, samples, step = result.history, result.samples, result.step
    else:
        history, samples, step = state.history, state.samples, state.step
    atomic.write_json(folder / HISTORY, history)
    summary = {"step": step, "final_loss": history[-1]["loss"] if history else None, "samples": samples}
    return summary | ({"copied_from": str(kept)} if copied else {})


def eval_config(p: StudyProfile, workers: int):
    """The evaluation settings of every policy of a study (its filming re-runs trials under them)."""
    from r2s2r.evaluate.runner import EvalConfig

    return EvalConfig(p.trials, p.seed, p.eval_batch, max(1, min(workers, p.eval_batch)), p.max_duration)


def evaluate_policy(
    folder: Path,
    name: str,
    p: StudyProfile,
    train_dir: Path,
    workers: int,
    console: Console,
    world_file: Path | None = None,
) -> dict[str, Any]:
    """Evaluate policy ``name``, trained in ``train_dir``, on the profile's lab trial list: in the lab,
    or (``world_file``, a WorldParams JSON) on the same trials in that simulated world."""
    from r2s2r.policy import load_policy

    return _evaluate(folder, load_policy(train_dir / RUN), name, p, workers, console, world_file)


def evaluate_anchor(
    folder: Path, name: str, p: StudyProfile, workers: int, console: Console, world_file: Path | None = None
) -> dict[str, Any]:
    """Evaluate the reference policy ``name`` (``random``, ``scripted`` or ``hold``: an anchor of the
    sim-vs-lab agreement, never a study policy) on the profile's lab trial list, at the study's image
    size: in the lab, or in the simulated world of ``world_file``."""
    from r2s2r.evaluate.policies import resolve_policy

    policy = dataclasses.replace(resolve_policy(name), image_size=p.image_size)
    return _evaluate(folder, policy, name, p, workers, console, world_file)


def _evaluate(
    folder: Path, policy, name: str, p: StudyProfile, workers: int, console: Console, world_file: Path | None
) -> dict[str, Any]:
    from r2s2r.evaluate.cells import WorldCell
    from r2s2r.evaluate.runner import evaluate
    from r2s2r.progress import count_progress

    config = eval_config(p, workers)
    wins = [0, 0]
    world = WorldCell.load(world_file, None, p.sim_eval_shadows) if world_file is not None else None
    where = f" in sim ({world_file.name}{', shadows' if p.sim_eval_shadows else ''})" if world_file else ""
    with count_progress(f"trials {name}{where}", console) as bar:
        task = bar.add_task("trials", total=p.trials.total, status="")

        def show(o) -> None:
            wins[0] += o.success
            wins[1] += 1
            bar.update(task, advance=1, status=f"success {wins[0]}/{wins[1]}")

        res = evaluate(policy, p.lab, config, out=folder, name=name, on_trial=show, world=world)
    res.save(folder)
    o = res.overall()
    return {"successes": o.successes, "trials": o.trials, "wall_s": res.timing["wall_seconds"]}


def film_policy(
    folder: Path, pol: PolicySpec, p: StudyProfile, train_dir: Path, eval_dir: Path, workers: int, console: Console
) -> dict[str, Any]:
    """Film the trials the report shows (``r2s2r.study.clips``), replayed from the actions the evaluation
    in ``eval_dir`` kept: ``videos/``, ``replays/`` (or ``waves/``, for an evaluation that kept none) and
    ``clips.json`` (per filmed trial: index, kind, condition, outcome, duration, video relative to ``folder``)."""
    from r2s2r.evaluate.film import film_trials
    from r2s2r.evaluate.results import EvalResults
    from r2s2r.policy import load_policy
    from r2s2r.progress import count_progress
    from r2s2r.study.clips import choose_clips

    res = EvalResults.load(eval_dir)
    config = eval_config(p, workers)
    chosen = choose_clips(res.outcomes, config.batch)
    policy = load_policy(train_dir / RUN)
    with count_progress(f"film {pol.name}", console) as bar:
        task = bar.add_task("film", total=len(chosen), status="")
        advance = lambda o: bar.update(task, advance=1)  # noqa: E731
        filmed = film_trials(policy, res, config, chosen, folder, on_trial=advance, recorded=eval_dir)
    clips = [
        {
            "trial": i,
            "kind": filmed[i].kind,
            "condition": dataclasses.asdict(res.trials.trials[i].condition),
            "success": filmed[i].success,
            "failure": filmed[i].failure,
            "duration": filmed[i].duration,
            "video": filmed[i].video,
        }
        for i in chosen
    ]
    atomic.write_json(folder / CLIPS, clips)
    return {"clips": len(clips)}
