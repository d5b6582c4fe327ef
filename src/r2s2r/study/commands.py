"""``r2s2r study run``: the whole study from an empty folder to the report (resumes, caches stages)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path


def study_run_command(
    out: Path = Path("study"),
    profile: str = "quick",
    design: str | None = None,
    lab: int | None = None,
    seed: int | None = None,
    n_real: int | None = None,
    n_sim: int | None = None,
    steps: int | None = None,
    sim_worlds: tuple[str, ...] | None = None,
    anchors: tuple[str, ...] | None = None,
    anchor_steps: tuple[int, ...] | None = None,
    sim_eval_shadows: bool | None = None,
    sim_data_shadows: bool | None = None,
    film: str | None = None,
    workers: int | None = None,
    dry_run: bool = False,
) -> None:
    """Run the study: calibrate, real demos, the four sim configurations, training, lab trials, the report.

    Rerunning the same command skips finished stages; changing a setting reruns only what depends on it;
    a killed run resumes. The report is OUT/report.md (with success.png, training.png) and every number in
    it is in OUT/results.json.

    Args:
        out: Study folder (created, or resumed).
        profile: Named sizes: smoke (toy, for tests), quick (about 2 hours on a 2-core CPU) or paper
            (the study's sizes).
        design: Which policies to train: grounding (the 2x2 + real-only), diagnostic (10 real demos) or ratio
            (co-training ratio sweep); default: the profile's.
        lab: Seed of the lab twin (default: the profile's, 0).
        seed: Seed of every stage's own random draws (default: the profile's, 0).
        n_real: Real demonstrations (default: the profile's).
        n_sim: Simulated trajectories per grounding configuration (default: the profile's).
        steps: Training steps per policy (default: the profile's).
        sim_worlds: Simulated worlds every policy is also evaluated in, on the lab's trials, for the
            sim-vs-lab agreement: grounded, ungrounded, both (the default) or none (give the flag no value).
        anchors: Reference policies also evaluated in the lab and in those worlds, for the agreement only
            (they widen its spread of success): random, scripted, hold; default random and scripted, none
            (give the flag no value) for none.
        anchor_steps: Training steps at which the design's baseline is also stopped and evaluated like
            the anchors (its run's state there), increasing, below the training's steps; default the
            profile's (quick: 500 1000), none (give the flag no value) for none.
        sim_eval_shadows: Render those worlds' evaluations with shadows and anti-aliasing (True, the
            profiles' default) or lean (False).
        sim_data_shadows: Render the simulated training data the same way (the paper profile's default; quick:
            False, the worlds' own lean renders, for its time: shadowed generation takes 2.6 x as long).
        film: Whose chosen lab trials are filmed for the report: all (every policy), baseline (the design's
            baseline only) or none; default the profile's (quick: all).
        workers: Processes for demos, generation and evaluation, >= 1 (default: one per core).
        dry_run: Print the plan and its expected time, run nothing.
    """
    from r2s2r.study.profiles import get_profile
    from r2s2r.study.run import run_study

    chosen = get_profile(profile).replace(
        lab=lab,
        seed=seed,
        n_real=n_real,
        n_sim=n_sim,
        train_steps=steps,
        sim_worlds=sim_worlds,
        anchors=anchors,
        anchor_steps=anchor_steps,
        sim_eval_shadows=sim_eval_shadows,
        sim_data_shadows=sim_data_shadows,
        film=film,
    )
    command = "r2s2r " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["study"] else None
    run_study(out, profile, chosen, design, workers, dry_run, command=command)
