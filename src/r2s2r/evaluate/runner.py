"""Batched rollouts of a policy over a lab's trial list, in that lab or in a simulated world.

Trials run in *waves* of ``batch`` trials at once: wave ``w`` runs trials ``w*batch ...`` in lab
slots 0..batch-1, all starting together, until every one of them has ended. At each control step
a ``ChunkPolicy`` is asked once for a new chunk for every running trial whose previous chunk is
used up (all trials of a wave start in phase, so that is one forward pass for all running trials
every ``execute_steps`` steps); its random draws come from a generator seeded by
``(seed, wave, step)``. A ``TrialPolicy`` runs next to the lab with a generator seeded by
``(seed, trial index)``; each lab process then runs its trials of the wave to the end on its own.

Reproducibility: the outcome of every trial is a function of the lab, the trial list, the policy,
``seed`` and ``batch`` (the batch composition feeds a stochastic chunk policy's draws), never of
``workers``, of interruptions or of the torch thread count the process had set (the forward passes run
on one thread). With ``world`` the trials (the lab's list: same conditions, objects, belt speeds and
seeds) run in that simulated world instead of the lab twin. With an output folder each finished wave
is written to ``DIR/waves/wave_NNN.json``; a rerun with the same settings reuses finished waves and
runs the rest, so a killed evaluation resumes where it stopped and ends with the same results.
A chunk policy's wave also keeps the actions it sent each trial (``DIR/waves/wave_NNN.npz``, written
before the wave's record): a trial is then filmed by sending them again, without the policy or the
rest of its wave (``r2s2r.evaluate.film``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from r2s2r import atomic
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.evaluate.cells import LabCell, WorldCell
from r2s2r.evaluate.policies import Policy, policy_kind
from r2s2r.evaluate.pool import LabPool, SlotResult
from r2s2r.evaluate.results import EvalResults, TrialOutcome
from r2s2r.evaluate.trials import Trial, TrialList, TrialPlan, make_trials
from r2s2r.policy.horizon import ChunkEnsemble, check_decay, inpaint_weights, takes_guide
from r2s2r.policy.protocol import PAST, past_frame, past_images, with_past
from r2s2r.world.cell import CellConfig

_SALT = 0x0E7A1  # separates the policy's draws from other uses of the same seed
WAVES_DIR = "waves"
EVAL_TORCH_THREADS = 1  # torch threads of a chunk policy's batched passes: rollouts depend on it (see below)
VIDEOS_DIR = "videos"


@dataclass(frozen=True)
class EvalConfig:
    plan: TrialPlan = TrialPlan()
    seed: int = 0  # the policy's random draws (sampler noise, the operator's variability)
    batch: int = 4  # trials in flight at once (a wave); each costs a lab twin's memory
    workers: int = 1  # lab processes; the results do not depend on it
    max_duration: float = 25.0  # s of trial time before the judge calls a timeout
    videos: bool = False  # write DIR/videos/trial_NNN.mp4 (head-left and right-wrist captures)
    # overlapping chunks: weights exp(-m i), i = 0 the oldest (ACT's temporal ensembling); None: newest only
    ensemble: float | None = None
    # a chunk policy's commands pass the teleop system's shaping (r2s2r.lab.shaping) on their way to the
    # robot, as the operator's did: arm steps within 90 % of the rated speeds, targets inside the ranges
    shaping: bool = True
    # each re-plan is inpainted toward the rest of the chunk being executed (real-time chunking's soft
    # mask, r2s2r.policy.horizon.inpaint_weights) instead of replacing it outright
    inpaint: bool = False

    def __post_init__(self) -> None:
        for name, lo in (("seed", 0), ("batch", 1), ("workers", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < lo:
                raise ConfigError(f"eval --{name}: expected an integer >= {lo}, got {value!r}")
        check_decay(self.ensemble)
        if not isinstance(self.inpaint, bool):
            raise ConfigError(f"eval --inpaint: expected true or false, got {self.inpaint!r}")
        if self.inpaint and self.ensemble is not None:
            raise ConfigError("eval: --inpaint and --ensemble are two ways to join chunks; choose one")
        if not isinstance(self.shaping, bool):
            raise ConfigError(f"eval --shaping: expected true or false, got {self.shaping!r}")
        if not self.max_duration > 0:
            raise ConfigError(f"eval --max-duration: expected a positive duration, got {self.max_duration!r}")

    def settings(self) -> dict:
        """What the outcomes depend on (and, informative only, workers and videos)."""
        settings = {
            "seed": self.seed,
            "batch": self.batch,
            "max_duration": self.max_duration,
            "ensemble": self.ensemble,
            "shaping": self.shaping,
        }
        if self.inpaint:  # (the keys of evaluations that replace chunks are as they were before inpainting)
            settings["inpaint"] = True
        return settings


def wave_key(policy_name: str, trials: TrialList, config: EvalConfig, world: WorldCell | None) -> str:
    parts = [policy_name, trials.digest(), config.settings()]
    if world is not None:  # (a lab evaluation's key is as it was before worlds could be evaluated)
        parts.append(world.describe()["world_hash"])
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def trial_outcome(res: SlotResult, trial: Trial, control_dt: float) -> TrialOutcome:
    fields = {f.name: getattr(res, f.name) for f in dataclasses.fields(SlotResult)}
    if fields["video"] is not None:
        fields["video"] = f"{VIDEOS_DIR}/{fields['video']}"
    return TrialOutcome(kind=trial.kind, duration=round(res.steps * control_dt, 9), **fields)


def run_wave(
    pool: LabPool,
    policy: Policy,
    chunked: bool,
    wave: int,
    trials: list[Trial],
    config: EvalConfig,
    max_steps: int,
    on_trial: Callable[[TrialOutcome], None] | None,
    control_dt: float,
    until: frozenset[int] | None = None,
) -> tuple[list[TrialOutcome], float, dict[int, np.ndarray]]:
    """Run wave ``wave`` (``trials``, in slots 0...); returns its outcomes (trial order), the seconds
    spent in the chunk policy and, for a chunk policy, the actions each trial was sent (trial index ->
    (steps, 27), in the order sent). With ``until`` (trial indices of the wave) the wave stops when
    those trials have ended, and only their outcomes are returned: what a trial does depends on the
    other trials of its wave only while it runs (a chunk policy's batched draws)."""
    slots = dict(enumerate(trials))
    if until is not None and not until <= {t.index for t in trials}:
        raise R2S2RError(f"wave {wave}: trials {sorted(until)} are not all among {[t.index for t in trials]}")
    if not chunked:  # each lab process runs its trials to the end on its own
        mine = {s: t for s, t in slots.items() if until is None or t.index in until}
        done = [trial_outcome(r, slots[s], control_dt) for s, r in sorted(pool.run(mine, max_steps).items())]
        if on_trial is not None:
            for o in done:
                on_trial(o)
        return done, 0.0, {}
    ensembles = {s: ChunkEnsemble(config.ensemble) for s in slots}
    k, d = policy.execute_steps, past_frame(policy)
    sent: dict[int, list[np.ndarray]] = {s: [] for s in slots}
    first = pool.start(slots, set(slots))
    seen: dict[int, dict[int, dict]] = {s: {0: o} for s, o in first.items()}  # slot -> step -> observation

    earlier = past_images(policy) if d else ()
    earlier = None if set(earlier) == set(policy.cameras) else earlier

    def needed(step: int) -> bool:  # is the observation of ``step`` read (a re-plan, or d before one)?
        return step % k == 0 or (d > 0 and (step + d) % k == 0)

    def frames(step: int) -> tuple[str, ...] | None:  # the cameras a read observation holds (None: every one)
        return None if step % k == 0 else earlier  # d before a re-plan: the earlier frame's cameras

    results: dict[int, TrialOutcome] = {}
    policy_seconds = 0.0
    for step in range(max_steps + 1):
        running = [s for s in slots if trials[s].index not in results]
        if not running or (until is not None and until <= results.keys()):
            break
        if step == max_steps:
            raise R2S2RError(f"lab did not end trials {[trials[s].index for s in running]} within {max_steps} steps")
        if step % k == 0:
            t0 = time.perf_counter()
            rng = np.random.default_rng([config.seed, _SALT, wave, step])
            obs = [seen[s][step] for s in running]
            if d:  # the observation d steps back, or the trial's first one
                obs = [with_past(o, seen[s][max(step - d, 0)]) for o, s in zip(obs, running, strict=True)]
            guide = None
            if config.inpaint and step > 0:
                weights = inpaint_weights(policy.action_horizon, k)
                guide = (np.stack([ensembles[s].ahead(step) for s in running]), weights)
            chunk = _predict(policy, obs, rng, guide)
            policy_seconds += time.perf_counter() - t0
            for s, actions in zip(running, chunk, strict=True):
                ensembles[s].add(step, actions)
                # the next re-plan reads steps step + k and step + k - d: older ones (but the first) go
                seen[s] = {t: o for t, o in seen[s].items() if t >= step + k - d or t == 0}
        actions = {s: ensembles[s].action(step) for s in running}
        for s in running:
            sent[s].append(actions[s])
        want = set(running) if needed(step + 1) else set()
        for s, (o, res) in pool.step(actions, want, frames(step + 1)).items():
            if o is not None:
                seen[s][step + 1] = o
            if res is not None:
                jump = replan_jump(np.stack(sent[s]), k)
                results[res.index] = dataclasses.replace(trial_outcome(res, slots[s], control_dt), replan_jump=jump)
                if on_trial is not None:
                    on_trial(results[res.index])
    kept = [t.index for t in trials if until is None or t.index in until]
    actions_sent = {t.index: np.stack(sent[s]) for s, t in slots.items() if t.index in kept}
    return [results[i] for i in kept], policy_seconds, actions_sent


def replan_jump(actions: np.ndarray, execute_steps: int) -> float:
    """The mean, over a trial's re-plans, of the largest arm joint change (rad) from the action sent
    before the re-plan to the first of the new chunk (0 without re-plans); ``actions`` (steps, 27) as
    sent, a re-plan every ``execute_steps``. As ``run_wave`` computes it, to the bit."""
    jumps = [
        float(np.abs(actions[step][:7] - actions[step - 1][:7]).max())
        for step in range(execute_steps, len(actions), execute_steps)
    ]
    return float(np.mean(jumps)) if jumps else 0.0


def trial_cell(policy: Policy, config: EvalConfig) -> tuple[CellConfig, int]:
    """The cell every slot builds for ``policy`` (its cameras and image size) and the most control
    steps a trial may take before the judge must have ended it."""
    cell = CellConfig(image_size=policy.image_size, cameras=tuple(policy.cameras), max_duration=config.max_duration)
    return cell, math.ceil(config.max_duration / cell.control.control_dt + 1e-9) + 1


def _predict(policy, obs: list[dict[str, np.ndarray]], rng: np.random.Generator, guide=None) -> np.ndarray:
    read = [("", policy.cameras), *([(PAST, past_images(policy))] if past_frame(policy) else [])]
    batch = {}
    for pre, cameras in read:
        batch.update({pre + c: np.stack([o[pre + c] for o in obs]) for c in cameras})
        batch[pre + "proprio"] = np.stack([o[pre + "proprio"] for o in obs]).astype(np.float32)
    chunk = np.asarray(policy.predict_chunk(batch, rng) if guide is None else policy.predict_chunk(batch, rng, guide))
    expected = (len(obs), policy.action_horizon, 27)
    if chunk.shape != expected:
        raise R2S2RError(f"policy {policy!r}: predict_chunk returned shape {chunk.shape}, expected {expected}")
    return chunk


def evaluate(
    policy: Policy,
    lab: int,
    config: EvalConfig = EvalConfig(),
    out: Path | None = None,
    name: str | None = None,
    on_trial: Callable[[TrialOutcome], None] | None = None,
    world: WorldCell | None = None,
) -> EvalResults:
    """Evaluate ``policy`` on lab twin ``lab``'s trial list under ``config``: in the lab twin, or with
    ``world`` in that simulated world (the same trials; the results record which).

    ``name`` identifies the policy in the results (default: its class name); with ``out``, finished
    waves are kept in ``out/waves`` and reused by a rerun with the same settings, and videos go to
    ``out/videos``. ``on_trial`` is called with each outcome as it finishes (also for reused ones).
    """
    chunked = policy_kind(policy) == "chunk"
    name = name or type(policy).__name__
    if config.inpaint and not (chunked and takes_guide(policy)):
        raise ConfigError(f"evaluate: --inpaint needs a chunk policy that takes a guide (a checkpoint), not {name}")
    trials = make_trials(lab, config.plan)
    cell, max_steps = trial_cell(policy, config)
    control_dt = cell.control.control_dt
    if world is not None and not isinstance(world, WorldCell):
        raise ConfigError(f"evaluate: expected world to be a WorldCell or None, got {type(world).__name__}")
    source = world if world is not None else LabCell(lab)
    key = wave_key(name, trials, config, world)
    waves = [list(trials.trials[i : i + config.batch]) for i in range(0, len(trials), config.batch)]
    video_dir = out / VIDEOS_DIR if out is not None and config.videos else None
    t_start = time.perf_counter()
    outcomes: list[TrialOutcome] = []
    policy_seconds = 0.0
    pool: LabPool | None = None
    try:
        with eval_torch_threads(chunked):
            for w, wave in enumerate(waves):
                done = _load_wave(out, w, key, wave) if out is not None else None
                if done is None:
                    if pool is None:
                        trial_policy = None if chunked else policy
                        shaping = config.shaping
                        args = (config.batch, config.workers, trial_policy, config.seed, video_dir, shaping)
                        pool = LabPool(source, cell, *args)
                    done, secs, sent = run_wave(pool, policy, chunked, w, wave, config, max_steps, on_trial, control_dt)
                    policy_seconds += secs
                    if out is not None:
                        if sent:  # before the wave's record: a recorded wave has its actions
                            write_actions(out / WAVES_DIR / f"wave_{w:03d}.npz", key, sent)
                        atomic.write_json(
                            out / WAVES_DIR / f"wave_{w:03d}.json",
                            {"key": key, "outcomes": [dataclasses.asdict(o) for o in done]},
                        )
                elif on_trial is not None:
                    for o in done:
                        on_trial(o)
                outcomes.extend(done)
    finally:
        if pool is not None:
            pool.close()
    timing = {
        "wall_seconds": time.perf_counter() - t_start,
        "lab_seconds": sum(o.lab_seconds for o in outcomes),  # in the lab processes
        "trial_policy_seconds": sum(o.policy_seconds for o in outcomes),  # a TrialPolicy, next to its lab
        "chunk_policy_seconds": policy_seconds,  # a ChunkPolicy's batched passes, in this process
        "workers": float(max(1, min(config.workers, config.batch))),
    }
    settings = {**config.settings(), "workers": config.workers, "videos": config.videos}
    cell_record = world.describe() if world is not None else None
    return EvalResults(name, lab, settings, trials, tuple(outcomes), timing, cell_record)


@contextmanager
def eval_torch_threads(chunked: bool = True) -> Iterator[None]:
    """A chunk policy's forward passes on ``EVAL_TORCH_THREADS`` torch threads, whatever this process had
    set (restored after).

    Batched matrix products round differently on another thread count, so a trial's outcome depended
    on what had run before in the process: a study's training sets its own count, and a study resumed
    at an evaluation stage (or ``r2s2r eval`` of the same checkpoint) scored other trajectories; filming
    a trial again (``r2s2r.evaluate.film``) must repeat its rollout to the bit."""
    if not chunked:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(EVAL_TORCH_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def read_wave(path: Path, key: str, elsewhere: str) -> list[TrialOutcome] | None:
    """The outcomes a wave record ``path`` holds (None when there is none). ConfigError when it cannot be
    read, or (``elsewhere``, the message) when it was written under another key (other settings)."""
    if not path.is_file():
        return None
    try:
        obj = json.loads(path.read_text())
        outcomes = [TrialOutcome(**o) for o in obj["outcomes"]]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: unreadable record of a wave ({e}); delete it to run that wave again") from e
    if obj.get("key") != key:
        raise ConfigError(elsewhere)
    return outcomes


def write_actions(path: Path, key: str, actions: dict[int, np.ndarray]) -> None:
    """Write the actions a wave sent its trials (trial index -> (steps, 27)), under the wave's ``key``."""
    buf = io.BytesIO()
    np.savez(buf, key=np.array(key), **{f"trial_{i:03d}": a for i, a in actions.items()})
    atomic.write_bytes(path, buf.getvalue())


def read_actions(folder: Path, wave: int, key: str) -> dict[int, np.ndarray]:
    """The actions wave ``wave`` of the evaluation in ``folder`` sent its trials (trial index -> (steps,
    27)); empty when it kept none (an evaluation of a TrialPolicy, or one made before actions were kept).
    ConfigError when the record is unreadable or belongs to other settings (``key``)."""
    path = folder / WAVES_DIR / f"wave_{wave:03d}.npz"
    if not path.is_file():
        return {}
    try:
        with np.load(path, allow_pickle=False) as z:
            recorded = str(z["key"])
            actions = {int(k.removeprefix("trial_")): z[k] for k in z.files if k.startswith("trial_")}
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"{path}: unreadable record of a wave's actions ({e}); delete it") from e
    if recorded != key:
        raise ConfigError(f"{path}: the actions of an evaluation with other settings (key {recorded}, expected {key})")
    return actions


def _load_wave(out: Path, w: int, key: str, wave: list[Trial]) -> list[TrialOutcome] | None:
    path = out / WAVES_DIR / f"wave_{w:03d}.json"
    elsewhere = (
        f"{out}: holds an evaluation with other settings (policy, lab, world, trials, seed, batch or max "
        "duration); use another --out or delete its waves/"
    )
    outcomes = read_wave(path, key, elsewhere)
    if outcomes is None:
        return None
    if [o.index for o in outcomes] != [t.index for t in wave]:
        raise ConfigError(f"{path}: expected outcomes of trials {[t.index for t in wave]}")
    return outcomes
