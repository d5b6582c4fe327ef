"""Lab slots: several copies of one cell, each running a trial, in this process or in workers.

A slot is a cell (a ``TrialCell``: the lab twin of the evaluated lab, or a simulated world behind
the lab's interface; ``r2s2r.evaluate.cells``) running one trial at a time. ``LabPool`` places slot
``s`` in worker ``s % workers`` (``workers == 1`` keeps every slot in this process). For a chunk policy it steps
all slots at once, one control step per call (each worker steps its slots in order while the
other workers step theirs); for a ``TrialPolicy`` each worker runs its slots' trials to the end
on its own (``run``), as it does when a trial's recorded actions are sent again (``replay``). A
cell is deterministic per (cell, trial seed), so what a slot does depends only on its
trials and the actions it is sent, never on which process holds it.

Per trial a slot records: the verdict, steps, safety-filter changes (the lab's
``safety_report`` counts accrued during the trial), the compute spent in the lab (physics,
rendering, safety filter, judge) and in a ``TrialPolicy``, and ``trace``: a hash of every
command sent and every joint reading returned, the fingerprint of the rollout.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from r2s2r.errors import R2S2RError
from r2s2r.evaluate.cells import EvalCell
from r2s2r.evaluate.policies import StepFn, TrialPolicy
from r2s2r.evaluate.trials import Trial
from r2s2r.lab.shaping import CommandShaper
from r2s2r.world.cell import CellConfig

Obs = dict[str, np.ndarray]


@dataclass(frozen=True)
class SlotResult:
    """A finished trial as its slot saw it."""

    index: int  # the trial's index in the trial list
    success: bool
    failure: str | None
    lifted: bool
    touched: bool
    steps: int
    safety: dict[str, int]
    trace: str
    lab_seconds: float
    policy_seconds: float
    video: str | None
    shaped: int | None = None  # given actions: steps whose command the shaping changed (None: not shaped)


class _Running:
    """A slot's current trial."""

    def __init__(self, trial: Trial, step: StepFn | None, safety0: dict[str, int], video) -> None:
        self.trial, self.step_fn, self.safety0, self.video = trial, step, safety0, video
        self.trace = hashlib.sha1()
        self.steps = 0
        self.lab_seconds = 0.0
        self.policy_seconds = 0.0
        self.shaped = 0
        self.obs: Obs | None = None


class LabSlots:
    """The slots one process holds (built lazily: a cell costs memory for every object it
    has rendered)."""

    def __init__(
        self,
        source: EvalCell,
        cell: CellConfig,
        policy: TrialPolicy | None,
        policy_seed: int,
        video_dir: Path | None,
        shaping: bool = False,
        film: frozenset[int] | None = None,
    ) -> None:
        self.source, self.cell, self.policy, self.policy_seed = source, cell, policy, policy_seed
        self.video_dir = video_dir
        self.film = film  # with video_dir: the trial indices filmed (None: every trial)
        self.shaping = shaping  # given actions (a chunk policy's) pass the teleop system's shaping
        self.labs: dict[int, object] = {}
        self.running: dict[int, _Running] = {}

    def _lab(self, slot: int):
        if slot not in self.labs:
            self.labs[slot] = self.source.build(self.cell)
        return self.labs[slot]

    def start(self, trials: Mapping[int, Trial], want: set[int]) -> dict[int, Obs | None]:
        """Reset each slot's lab to its trial; returns the first observation of slots in ``want``."""
        out = {}
        for slot, trial in trials.items():
            lab = self._lab(slot)
            safety0 = lab.safety_report()
            t0 = time.perf_counter()
            obs = lab.reset(trial.condition, trial.seed)
            t1 = time.perf_counter()
            step = None
            if self.policy is not None:
                step = self.policy.begin(lab, np.random.default_rng([self.policy_seed, trial.index]))
            video = None
            if self.video_dir is not None and (self.film is None or trial.index in self.film):
                from r2s2r.video import VideoWriter

                video = VideoWriter(self.video_dir / f"trial_{trial.index:03d}.mp4", 1.0 / lab.control_dt)
            run = _Running(trial, step, safety0, video)
            run.lab_seconds, run.policy_seconds, run.obs = t1 - t0, time.perf_counter() - t1, obs
            self.running[slot] = run
            self._film(slot)
            out[slot] = obs if slot in want else None
        return out

    def _film(self, slot: int) -> None:
        run = self.running[slot]
        if run.video is not None:
            from r2s2r.video import TILE_SIZE, VIDEO_CAMERAS, side_by_side

            # read out at the tile size: a full-resolution frame costs the lab twin 2-3x the render time
            run.video.write(side_by_side([self.labs[slot].capture(c, TILE_SIZE) for c in VIDEO_CAMERAS]))

    def step(
        self, actions: Mapping[int, np.ndarray | None], want: set[int], cameras: tuple[str, ...] | None = None
    ) -> dict[int, tuple[Obs | None, SlotResult | None]]:
        """One control step of each slot in ``actions``: the given action, or (None) the slot's
        ``TrialPolicy`` step. Returns (observation if wanted, result if the trial ended) per slot; a
        wanted observation holds ``cameras`` only (None: every policy camera)."""
        out = {}
        for slot, action in actions.items():
            run, lab = self.running[slot], self.labs[slot]
            if action is None:
                t0 = time.perf_counter()
                action = run.step_fn(run.obs)
                run.policy_seconds += time.perf_counter() - t0
            elif self.shaping:  # from the robot's current command, as the teleop system sends
                action, changed = CommandShaper(lab.control_dt).shape(lab.last_command("right"), action)
                run.shaped += changed
            action = np.asarray(action, dtype=np.float64)
            t0 = time.perf_counter()
            # a chunk policy reads the images only at re-plans (``want``); a TrialPolicy may read any
            observe = run.step_fn is not None or (slot in want and (True if cameras is None else cameras))
            run.obs = lab.act(action, observe=observe)
            verdict = lab.verdict()
            run.lab_seconds += time.perf_counter() - t0
            run.steps += 1
            run.trace.update(action.tobytes())
            run.trace.update(np.asarray(run.obs["proprio"], dtype=np.float64).tobytes())
            self._film(slot)
            result = None
            if verdict.done:
                result = self._finish(slot, verdict)
            out[slot] = (run.obs if slot in want and result is None else None, result)
        return out

    def run(self, trials: Mapping[int, Trial], max_steps: int) -> dict[int, SlotResult]:
        """Run each slot's trial to its end with the slot's ``TrialPolicy`` (no round trip per
        step: a per-trial policy needs nothing from the evaluating process)."""
        return {slot: self._to_end(slot, trial, [None] * max_steps) for slot, trial in trials.items()}

    def replay(self, jobs: Mapping[int, list[tuple[Trial, np.ndarray]]], _: object = None) -> dict[int, SlotResult]:
        """Run each slot's trials, one after the other, to their ends sending each its given actions
        (steps, 27) as a chunk policy's were sent (shaped, if the slots shape), observing nothing: recorded
        rollouts again. Results by trial index."""
        out = {}
        for slot, trials in jobs.items():
            for trial, actions in trials:
                out[trial.index] = self._to_end(slot, trial, list(actions))
        return out

    def _to_end(self, slot: int, trial: Trial, actions: list[np.ndarray | None]) -> SlotResult:
        self.start({slot: trial}, set())
        for action in actions:
            result = self.step({slot: action}, set())[slot][1]
            if result is not None:
                return result
        self.running.pop(slot, None)
        raise R2S2RError(f"lab did not end trial {trial.index} within {len(actions)} steps")

    def _finish(self, slot: int, verdict) -> SlotResult:
        run = self.running.pop(slot)
        after = self.labs[slot].safety_report()
        safety = {k: v - run.safety0.get(k, 0) for k, v in after.items() if v - run.safety0.get(k, 0)}
        video = None
        if run.video is not None:
            run.video.close()
            video = run.video.path.name
        return SlotResult(
            index=run.trial.index,
            success=bool(verdict.success),
            failure=verdict.failure,
            lifted=bool(verdict.lifted),
            touched=bool(verdict.touched),
            steps=run.steps,
            safety=dict(sorted(safety.items())),
            trace=run.trace.hexdigest()[:16],
            lab_seconds=run.lab_seconds,
            policy_seconds=run.policy_seconds,
            video=video,
            shaped=run.shaped if self.shaping and run.step_fn is None else None,
        )


def _serve(conn, args) -> None:
    """A worker process: holds its ``LabSlots`` and answers (method, args) requests."""
    import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco loads)
    from r2s2r.orphans import exit_with_parent

    exit_with_parent()
    slots = LabSlots(*args)
    while True:
        request = conn.recv()
        if request is None:
            conn.close()
            return
        method, call_args = request
        try:
            conn.send(("ok", getattr(slots, method)(*call_args)))
        except BaseException as e:  # noqa: BLE001  (sent back to the evaluating process)
            conn.send(("error", (e, traceback.format_exc())))


class LabPool:
    """``slots`` slots of cell ``source`` over ``workers`` processes (``workers == 1``: this process)."""

    def __init__(
        self,
        source: EvalCell,
        cell: CellConfig,
        slots: int,
        workers: int,
        policy: TrialPolicy | None = None,
        policy_seed: int = 0,
        video_dir: Path | None = None,
        shaping: bool = False,
        film: frozenset[int] | None = None,
    ) -> None:
        self.workers = max(1, min(workers, slots))
        args = (source, cell, policy, policy_seed, video_dir, shaping, film)
        self._local = LabSlots(*args) if self.workers == 1 else None
        self._conns, self._procs = [], []
        if self._local is None:
            ctx = multiprocessing.get_context("spawn")
            for _ in range(self.workers):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(theirs, args), daemon=True)
                proc.start()
                theirs.close()
                self._conns.append(mine)
                self._procs.append(proc)

    def _call(self, method: str, per_slot: Mapping[int, object], *extra: object) -> dict:
        """``LabSlots.<method>(part, *extra)`` in every process holding slots of ``per_slot``."""
        if self._local is not None:
            return getattr(self._local, method)(per_slot, *extra)
        parts: dict[int, dict] = {}
        for slot, value in per_slot.items():
            parts.setdefault(slot % self.workers, {})[slot] = value
        for w, part in parts.items():
            self._conns[w].send((method, (part, *extra)))
        out, error = {}, None
        for w in parts:  # read every reply before raising, so no worker is left mid-answer
            try:
                status, value = self._conns[w].recv()
            except EOFError:
                status, value = "error", (R2S2RError(f"lab worker {w} died"), "")
            if status == "ok":
                out.update(value)
            elif error is None:
                error = value
        if error is not None:
            exc, tb = error
            if tb:
                exc.add_note(f"in lab worker:\n{tb}")
            raise exc
        return out

    def start(self, trials: Mapping[int, Trial], want: set[int]) -> dict[int, Obs | None]:
        return self._call("start", trials, want)

    def step(
        self, actions: Mapping[int, np.ndarray | None], want: set[int], cameras: tuple[str, ...] | None = None
    ) -> dict[int, tuple[Obs | None, SlotResult | None]]:
        return self._call("step", actions, want, cameras)

    def run(self, trials: Mapping[int, Trial], max_steps: int) -> dict[int, SlotResult]:
        return self._call("run", trials, max_steps)

    def replay(self, trials: Mapping[int, tuple[Trial, np.ndarray]]) -> dict[int, SlotResult]:
        """Replay trials (index -> (trial, actions)) on one slot per worker, the longest first, each to
        the worker with the fewest steps so far; results by trial index."""
        jobs: dict[int, list[tuple[Trial, np.ndarray]]] = {w: [] for w in range(self.workers)}
        load = dict.fromkeys(jobs, 0)
        for i in sorted(trials, key=lambda i: (-len(trials[i][1]), i)):
            w = min(load, key=lambda w: (load[w], w))
            jobs[w].append(trials[i])
            load[w] += len(trials[i][1])
        return self._call("replay", {w: js for w, js in jobs.items() if js}, None)

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(None)
                conn.close()
            except (BrokenPipeError, OSError):
                pass
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
        self._conns, self._procs = [], []

    def __enter__(self) -> LabPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
