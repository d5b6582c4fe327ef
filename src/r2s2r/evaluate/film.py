"""``film_trials``: videos of chosen trials of a finished evaluation, made by running them again.

A chunk policy's evaluation keeps the actions it sent each trial (``r2s2r.evaluate.runner``): given
the evaluation's folder, a chosen trial is *replayed*, its recorded actions sent to a freshly reset
lab slot, with neither the policy nor the other trials of its wave (a lab is deterministic per trial
and actions; the chosen trials of all waves run side by side on the workers). Without that record
(a ``TrialPolicy``, or an evaluation made before actions were kept), what a trial does depends on its
wave: a chunk policy's draws are batched over the wave's running trials and seeded by ``(seed, wave,
step)``, so the whole wave runs again with the evaluation's settings until its chosen trials have
ended. Either way the lab films only the chosen trials (a frame for the video draws from the lab's
measurement stream, never from the trial's), and every re-run trial must repeat its recorded rollout:
the same verdict, failure mode, steps, safety counts, re-plan jump, shaping count and ``trace`` (the
hash of every command sent and every joint reading); if one does not, ``R2S2RError`` says which, and
no record of it is kept.

Outputs in ``out``: ``videos/trial_NNN.mp4`` (``r2s2r.video`` H.264, the head-left and right-wrist
cameras side by side), and ``replays/trial_NNN.json`` per replayed trial or ``waves/wave_NNN.json``
per re-run wave (its settings key and the re-run outcomes): a rerun skips recorded trials and waves
whose videos are all there, so a killed filming resumes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

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
    read_actions,
    read_wave,
    replan_jump,
    run_wave,
    trial_cell,
    trial_outcome,
    wave_key,
)
from r2s2r.evaluate.trials import make_trials

# what a re-run must repeat (timings and the video's name may differ)
SAME = ("index", "kind", "success", "failure", "steps", "lifted", "touched", "safety", "trace", "replan_jump", "shaped")
REPLAYS_DIR = "replays"


def _check_same(policy_name: str, recorded: TrialOutcome, again: TrialOutcome, how: str) -> None:
    was, now = ({k: getattr(o, k) for k in SAME} for o in (recorded, again))
    if now != was:
        diff = {k: (was[k], now[k]) for k in SAME if now[k] != was[k]}
        raise R2S2RError(
            f"film {policy_name}: trial {recorded.index} ({how}) did not repeat its recorded rollout (recorded, "
            f"re-run): {diff}; the policy or the lab is not deterministic here (torch threads, another machine?)"
        )


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


def _load_replay(path: Path, key: str, out: Path) -> TrialOutcome | None:
    """The recorded replay of a trial, if complete (its key, its video)."""
    done = read_wave(path, key, f"{path}: films an evaluation with other settings; use another folder or delete it")
    if done is None or len(done) != 1 or not (done[0].video and (out / done[0].video).is_file()):
        return None
    return done[0]


def _recorded_actions(folder: Path, key: str, waves: Iterable[int], wanted: list[int]) -> dict[int, np.ndarray]:
    """The recorded actions of the trials ``wanted`` (of ``waves``) of the evaluation in ``folder``, those it kept."""
    sent: dict[int, np.ndarray] = {}
    for w in waves:
        sent.update(read_actions(folder, w, key))
    return {i: sent[i] for i in wanted if i in sent}


def film_trials(
    policy: Policy,
    results: EvalResults,
    config: EvalConfig,
    indices: Iterable[int],
    out: Path,
    world: WorldCell | None = None,
    on_trial: Callable[[TrialOutcome], None] | None = None,
    recorded: Path | None = None,
) -> dict[int, TrialOutcome]:
    """Film trials ``indices`` of ``results`` (``policy`` evaluated under ``config``, in the lab or in
    ``world``); returns their re-run outcomes by trial index, each with its video (relative to ``out``).
    ``recorded``: the evaluation's folder, whose kept actions let its trials be replayed alone."""
    _check_settings(results, config, world)
    recorded_by = {o.index: o for o in results.outcomes}
    wanted = sorted(set(indices))
    missing = [i for i in wanted if i not in recorded_by]
    if missing:
        raise ConfigError(f"film {results.policy}: no trials {missing}; the evaluation has 0..{len(recorded_by) - 1}")
    chunked = policy_kind(policy) == "chunk"
    cell, max_steps = trial_cell(policy, config)
    key = wave_key(results.policy, results.trials, config, world)
    by_wave: dict[int, set[int]] = {}
    for i in wanted:
        by_wave.setdefault(i // config.batch, set()).add(i)
    sent = _recorded_actions(recorded, key, by_wave, wanted) if chunked and recorded is not None else {}
    filmed: dict[int, TrialOutcome] = {}
    pool: LabPool | None = None

    def lab_pool() -> LabPool:
        nonlocal pool
        if pool is None:
            source = world if world is not None else LabCell(results.lab)
            pool = LabPool(
                source, cell, config.batch, config.workers, None if chunked else policy, config.seed,
                out / VIDEOS_DIR, config.shaping, film=frozenset(wanted),
            )  # fmt: skip
        return pool

    def done(o: TrialOutcome) -> None:
        filmed[o.index] = o
        if on_trial is not None:
            on_trial(o)

    try:
        with eval_torch_threads(chunked):  # the rollouts depend on it: as the evaluation ran
            todo = []
            for i in sorted(sent):
                o = _load_replay(out / REPLAYS_DIR / f"trial_{i:03d}.json", key, out)
                if o is None:
                    todo.append(i)
                else:
                    done(o)
            if todo:  # side by side on the workers (slot w lives in worker w), no policy asked
                got = lab_pool().replay({i: (results.trials.trials[i], sent[i]) for i in todo})
                for i in todo:
                    o = trial_outcome(got[i], results.trials.trials[i], cell.control.control_dt)
                    o = dataclasses.replace(o, replan_jump=replan_jump(sent[i], policy.execute_steps))
                    _check_same(results.policy, recorded_by[i], o, "replayed")
                    record = {"key": key, "outcomes": [dataclasses.asdict(o)]}
                    atomic.write_json(out / REPLAYS_DIR / f"trial_{i:03d}.json", record)
                    done(o)
            for w, chosen in sorted(by_wave.items()):
                chosen = chosen - sent.keys()
                if not chosen:
                    continue
                path = out / WAVES_DIR / f"wave_{w:03d}.json"
                rerun = _load(path, key, chosen, out)
                if rerun is None:
                    trials = list(results.trials.trials[w * config.batch : (w + 1) * config.batch])
                    dt, until = cell.control.control_dt, frozenset(chosen)
                    rerun, _, _ = run_wave(lab_pool(), policy, chunked, w, trials, config, max_steps, None, dt, until)
                    for o in rerun:
                        _check_same(results.policy, recorded_by[o.index], o, f"wave {w}")
                    atomic.write_json(path, {"key": key, "outcomes": [dataclasses.asdict(o) for o in rerun]})
                for o in rerun:
                    done(o)
    finally:
        if pool is not None:
            pool.close()
    return filmed
