"""``film_trials``: videos of chosen trials of a finished evaluation, made by running their waves again.

What a trial does depends on its wave: a chunk policy's draws are batched over the wave's running
trials and seeded by ``(seed, wave, step)``. So a trial is reproduced by running its whole wave again
with the evaluation's settings, until the chosen trials of that wave have ended, with the lab filming
only those (a frame for the video draws from the lab's measurement stream, never from the trial's).
Every re-run trial must repeat its recorded rollout: the same verdict, failure mode, steps, safety
counts and ``trace`` (the hash of every command sent and every joint reading); if one does not,
``R2S2RError`` says which, and no record of its wave is kept.

Outputs in ``out``: ``videos/trial_NNN.mp4`` (``r2s2r.video`` H.264, the head-left and right-wrist
cameras side by side) and ``waves/wave_NNN.json`` per re-run wave (its settings key and the re-run
outcomes): a rerun skips recorded waves whose videos are all there, so a killed filming resumes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

from r2s2r import atomic
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.evaluate.cells import LabCell, WorldCell
from r2s2r.evaluate.policies import Policy, policy_kind
from r2s2r.evaluate.pool import LabPool
from r2s2r.evaluate.results import EvalResults, TrialOutcome
from r2s2r.evaluate.runner import (
    VIDEOS_DIR,
    WAVES_DIR,
    EvalConfig,
    eval_torch_threads,
    read_wave,
    run_wave,
    trial_cell,
    wave_key,
)
from r2s2r.evaluate.trials import make_trials

# what a re-run must repeat (timings and the video's name may differ)
SAME = ("index", "kind", "success", "failure", "steps", "lifted", "touched", "safety", "trace", "replan_jump", "shaped")


def _same(o: TrialOutcome) -> dict:
    return {k: getattr(o, k) for k in SAME}


def _check_settings(results: EvalResults, config: EvalConfig, world: WorldCell | None) -> None:
    given = config.settings()
    recorded = {k: results.settings.get(k) for k in given}
    if recorded != given:
        raise ConfigError(f"film {results.policy}: the evaluation ran with {recorded}, given {given}")
    if make_trials(results.lab, config.plan).digest() != results.trials.digest():
        raise ConfigError(f"film {results.policy}: its trial list is not lab {results.lab}'s under the given plan")
    where = world.describe() if world is not None else None
    if where != results.cell:
        raise ConfigError(f"film {results.policy}: the evaluation ran in {results.where()}, given {where or 'the lab'}")


def _load(path: Path, key: str, chosen: set[int], out: Path) -> list[TrialOutcome] | None:
    """The recorded re-run of a wave, if complete (its key, its chosen trials, their videos)."""
    done = read_wave(path, key, f"{path}: films an evaluation with other settings; use another folder or delete it")
    if done is None:
        return None
    if {o.index for o in done} != chosen or not all(o.video and (out / o.video).is_file() for o in done):
        return None
    return done


def film_trials(
    policy: Policy,
    results: EvalResults,
    config: EvalConfig,
    indices: Iterable[int],
    out: Path,
    world: WorldCell | None = None,
    on_trial: Callable[[TrialOutcome], None] | None = None,
) -> dict[int, TrialOutcome]:
    """Film trials ``indices`` of ``results`` (``policy`` evaluated under ``config``, in the lab or in
    ``world``); returns their re-run outcomes by trial index, each with its video (relative to ``out``)."""
    _check_settings(results, config, world)
    recorded = {o.index: o for o in results.outcomes}
    wanted = sorted(set(indices))
    missing = [i for i in wanted if i not in recorded]
    if missing:
        raise ConfigError(f"film {results.policy}: no trials {missing}; the evaluation has 0..{len(recorded) - 1}")
    chunked = policy_kind(policy) == "chunk"
    cell, max_steps = trial_cell(policy, config)
    key = wave_key(results.policy, results.trials, config, world)
    by_wave: dict[int, set[int]] = {}
    for i in wanted:
        by_wave.setdefault(i // config.batch, set()).add(i)
    filmed: dict[int, TrialOutcome] = {}
    pool: LabPool | None = None
    try:
        with eval_torch_threads(chunked):  # the rollouts depend on it: as the evaluation ran
            for w, chosen in sorted(by_wave.items()):
                path = out / WAVES_DIR / f"wave_{w:03d}.json"
                done = _load(path, key, chosen, out)
                if done is None:
                    if pool is None:
                        source = world if world is not None else LabCell(results.lab)
                        pool = LabPool(
                            source, cell, config.batch, config.workers, None if chunked else policy, config.seed,
                            out / VIDEOS_DIR, config.shaping, film=frozenset(wanted),
                        )  # fmt: skip
                    trials = list(results.trials.trials[w * config.batch : (w + 1) * config.batch])
                    dt, until = cell.control.control_dt, frozenset(chosen)
                    done, _ = run_wave(pool, policy, chunked, w, trials, config, max_steps, None, dt, until)
                    for o in done:
                        was, now = _same(recorded[o.index]), _same(o)
                        if now != was:
                            diff = {k: (was[k], now[k]) for k in SAME if now[k] != was[k]}
                            raise R2S2RError(
                                f"film {results.policy}: trial {o.index} (wave {w}) did not repeat its recorded "
                                f"rollout (recorded, re-run): {diff}; the policy or the lab is not deterministic "
                                "here (torch threads, another machine?)"
                            )
                    atomic.write_json(path, {"key": key, "outcomes": [dataclasses.asdict(o) for o in done]})
                for o in done:
                    filmed[o.index] = o
                    if on_trial is not None:
                        on_trial(o)
    finally:
        if pool is not None:
            pool.close()
    return filmed
