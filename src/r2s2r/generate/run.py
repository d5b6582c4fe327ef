"""Generation at scale: N admitted episodes of one behaviour in one world, resumable, in key order.

Attempts are numbered 0, 1, 2, ...; attempt ``k`` depends on (run seed, k) only (see ``attempt``).
Results are committed strictly in key order: an admitted episode goes into the dataset (durable
when ``DatasetWriter.add`` returns), then the attempt's line is appended to ``attempts.jsonl``
(flushed and fsynced). The dataset therefore always holds the admitted attempts among a prefix
0..K of the keys, whatever the number of workers or the executor, and a run killed at any moment
resumes at K+1: an admitted episode whose log line was lost is found in the dataset, a
half-written log line is dropped, and nothing is duplicated. The run stops at the N-th admitted
attempt, so the same seed and N give the same episodes. ``stats.json`` (rewritten atomically after
every attempt) holds attempts, admitted, the failure taxonomy, the time split and the throughput.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r import atomic
from r2s2r.data import DatasetWriter
from r2s2r.errors import ConfigError, R2S2RError, UnknownNameError
from r2s2r.files import output_dir, read_json
from r2s2r.generate.attempt import AttemptRecord, GenerationSpec
from r2s2r.generate.executors import EXECUTORS, make_executor
from r2s2r.generate.rollout import sim_features
from r2s2r.world.cell import SimCell
from r2s2r.world.conditions import sample_condition

LOG = "attempts.jsonl"
STATS = "stats.json"


@dataclass(frozen=True)
class RunConfig:
    """How to run (not what is generated: changing these never changes the episodes)."""

    n: int = 1500  # admitted episodes wanted
    workers: int = 1
    executor: str = "local"  # local | ray
    address: str | None = None  # Ray cluster address (ray executor); None starts Ray locally
    max_attempts: int | None = None  # give up after this many attempts in all (default 5 n)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"generate: --n expected >= 1, got {self.n}")
        if self.workers < 1:
            raise ConfigError(f"generate: --workers expected >= 1, got {self.workers}")
        if self.executor not in EXECUTORS:
            raise UnknownNameError("executor", self.executor, EXECUTORS)
        if self.max_attempts is not None and self.max_attempts < self.n:
            raise ConfigError(f"generate: --max-attempts expected >= --n ({self.n}), got {self.max_attempts}")


def read_log(folder: Path) -> list[dict[str, Any]]:
    """The committed attempts in ``folder/attempts.jsonl``; a torn last line (a kill mid-write) is
    cut off the file."""
    path = folder / LOG
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)
            os.fsync(f.fileno())
    entries = []
    for i, line in enumerate(data[:end].splitlines()):
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            raise R2S2RError(f"{path}: line {i + 1} is not JSON; the attempt log is corrupt") from None
    return entries


def _sessions(path: Path) -> list[dict[str, Any]]:
    """The sessions recorded in an earlier run's ``stats.json`` (none before the first)."""
    if not path.exists():
        return []
    sessions = read_json(path, "the statistics of a generation run").get("sessions")
    if not isinstance(sessions, list):
        raise R2S2RError(f"{path}: no 'sessions' list; expected the statistics a generation run writes")
    return sessions


def _append(path: Path, entry: dict[str, Any]) -> None:
    with open(path, "ab") as f:
        f.write((json.dumps(entry, sort_keys=True) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())


def summarize(entries: list[dict[str, Any]], sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """The statistics of a run from its attempt log and its sessions (wall time x workers)."""
    failures: dict[str, int] = {}
    seconds = {"reset": 0.0, "plan": 0.0, "step": 0.0, "record": 0.0}
    admitted = 0
    for e in entries:
        if e["success"]:
            admitted += 1
        else:
            failures[e["failure"]] = failures.get(e["failure"], 0) + 1
        for k, v in e.get("seconds", {}).items():
            seconds[k] = seconds.get(k, 0.0) + v
    worker_s = sum(s["wall_s"] * s["workers"] for s in sessions)
    floor = seconds["step"]  # physics + render of every attempt, admitted or not
    return {
        "attempts": len(entries),
        "admitted": admitted,
        "admission_rate": admitted / len(entries) if entries else 0.0,
        "failures": dict(sorted(failures.items(), key=lambda kv: -kv[1])),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "wall_s": round(sum(s["wall_s"] for s in sessions), 3),
        "worker_s": round(worker_s, 3),
        "admitted_per_hour_per_worker": 3600.0 * admitted / worker_s if worker_s > 0 else 0.0,
        "floor_s": round(floor, 3),
        "overhead": worker_s / floor - 1.0 if floor > 0 else None,
        "sessions": sessions,
    }


@contextlib.contextmanager
def _sharing(spec: GenerationSpec, workers: int) -> Iterator[GenerationSpec]:
    """``spec`` with a scratch folder its workers share while the block runs (``BehaviorInputs.shared``:
    what every worker prepares, e.g. the MimicGen sources, is then prepared once); as is for one worker."""
    if workers == 1 or spec.inputs.shared is not None:
        yield spec
        return
    with tempfile.TemporaryDirectory(prefix="r2s2r-generate-", ignore_cleanup_errors=True) as tmp:
        yield dataclasses.replace(spec, inputs=dataclasses.replace(spec.inputs, shared=Path(tmp)))


def generate(
    out: Path,
    spec: GenerationSpec,
    config: RunConfig,
    info: dict[str, Any],
    on_attempt: Callable[[AttemptRecord, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Generate until ``out`` holds ``config.n`` admitted episodes (resumes); returns the statistics.

    ``info`` describes what is generated (configuration, world, behaviour, mix, seed); it is stored
    in the manifest, and resuming with a different ``info`` is refused.
    """
    out = output_dir(out, "a dataset folder", create=False)
    probe = SimCell(spec.inputs.world, spec.cell)
    probe.reset(sample_condition("nominal", np.random.default_rng(0)), np.random.default_rng(0))  # builds the model
    features = sim_features(probe)
    rate = round(1.0 / spec.cell.control.control_dt, 6)
    probe.close()
    max_attempts = config.max_attempts or 5 * config.n
    t0 = time.perf_counter()
    with DatasetWriter(out, features, control_rate_hz=rate, info=info) as writer:
        entries = read_log(out)
        logged = {e["key"] for e in entries}
        stored = sorted(writer.keys())
        for k in stored:  # admitted, but killed before its log line was written
            if k not in logged:
                entries.append({"key": k, "success": True, "failure": None, "steps": 0, "seconds": {}, "worker": 0})
                _append(out / LOG, entries[-1])
        entries.sort(key=lambda e: e["key"])
        previous = _sessions(out / STATS)
        session = {"executor": config.executor, "workers": config.workers, "wall_s": 0.0}
        sessions = [*previous, session]
        next_key = entries[-1]["key"] + 1 if entries else 0
        admitted = len(stored)
        last_success = stored[-1] if stored else -1
        stats = summarize(entries, sessions)
        if admitted >= config.n:
            return stats
        with _sharing(spec, config.workers) as worker_spec:
            executor = make_executor(worker_spec, config.executor, config.workers, config.address)
            try:
                for rec in executor.results(iter(range(next_key, max_attempts))):
                    if rec.success:
                        ep = rec.episode
                        prov = dataclasses.replace(ep.provenance, attempts=rec.key - last_success)
                        writer.add(dataclasses.replace(ep, provenance=prov))
                        last_success = rec.key
                        admitted += 1
                    entries.append(rec.log_entry())
                    _append(out / LOG, entries[-1])
                    session["wall_s"] = round(time.perf_counter() - t0, 3)
                    session["restarts"] = getattr(executor, "restarts", 0)
                    stats = summarize(entries, sessions)
                    atomic.write_json(out / STATS, stats)
                    if on_attempt is not None:
                        on_attempt(rec, stats)
                    if admitted >= config.n:
                        break
            finally:
                executor.close()
    if admitted < config.n:
        raise R2S2RError(
            f"generate: only {admitted} of {config.n} episodes admitted in {len(entries)} attempts "
            f"(limit {max_attempts}; failures {stats['failures']}); raise --max-attempts or check the behaviour"
        )
    return stats
