"""Cached study stages: a stage runs once per distinct input, and a killed run resumes.

A stage is a name, a key (a JSON-able dict of everything its output depends on: its settings and
the hashes of the stages it reads) and a function ``fn(dir) -> summary`` that writes its outputs
into ``dir``. The stage's folder is ``<root>/<name>-<hash of key>``; the stage is finished when
``stage.json`` (key, summary, seconds, machine) is in it, written atomically after ``fn`` returns.
Rerunning a study skips finished stages; changing a setting changes the hash of that stage and of
every stage whose key holds its hash, and only those run again. A stage killed midway left a
folder without ``stage.json``: the next run removes the temporary files of the atomic writes it was
killed in and calls ``fn`` on the same folder, so functions resume what they can (datasets, training
checkpoints, evaluation trials) and redo the rest.

``run_side_by_side`` runs independent stages at the same time, each in its own process (the
study's training stages: two one-thread trainings on two cores do 1.4 x the steps of one on both).
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from r2s2r import atomic
from r2s2r.data.provenance import plain_json
from r2s2r.errors import R2S2RError
from r2s2r.files import output_dir, read_json

STAGE_FILE = "stage.json"


def key_hash(key: dict[str, Any]) -> str:
    """Content hash of a stage key (canonical JSON), 16 hex digits."""
    text = json.dumps(plain_json(key, "stage key"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


@dataclass(frozen=True)
class StageRecord:
    """A finished stage: where its outputs are, what it reported, how long it took."""

    name: str
    hash: str
    dir: Path
    summary: dict[str, Any]
    seconds: float
    machine: str
    cached: bool  # True when this run found it finished


class Stages:
    """The stages of one study folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        output_dir(self.root, "a study folder", create=False)

    def dir(self, name: str, key: dict[str, Any]) -> Path:
        return self.root / f"{name}-{key_hash(key)}"

    def done(self, name: str, key: dict[str, Any]) -> bool:
        return (self.dir(name, key) / STAGE_FILE).is_file()

    def run(self, name: str, key: dict[str, Any], fn: Callable[[Path], dict[str, Any]]) -> StageRecord:
        folder = self.dir(name, key)
        marker = folder / STAGE_FILE
        if marker.is_file():
            rec = read_json(marker, "the record of a finished stage")
            if not {"key", "hash", "summary", "seconds", "machine"} <= set(rec):
                raise R2S2RError(f"{marker}: not a finished stage's record (fields {sorted(rec)}); remove {folder}")
            if rec.get("key") != plain_json(key, "stage key"):
                raise R2S2RError(f"{marker}: holds another key than its folder's hash says; remove {folder}")
            return StageRecord(name, rec["hash"], folder, rec["summary"], rec["seconds"], rec["machine"], True)
        output_dir(folder, "a stage folder")
        atomic.remove_stale_temps(folder)  # a run killed inside one of the stage's atomic writes left it
        t0 = time.perf_counter()
        summary = fn(folder)
        seconds = time.perf_counter() - t0
        rec = {
            "name": name,
            "hash": key_hash(key),
            "key": plain_json(key, "stage key"),
            "summary": plain_json(summary or {}, f"stage {name} summary"),
            "seconds": round(seconds, 3),
            "machine": machine(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        atomic.write_json(marker, rec)
        return StageRecord(name, rec["hash"], folder, rec["summary"], rec["seconds"], rec["machine"], False)


def _run_one(root: Path, name: str, key: dict[str, Any], fn: Callable[[Path], dict[str, Any]]) -> StageRecord:
    from r2s2r.orphans import exit_with_parent

    exit_with_parent()  # a killed study's stages end with it; its resumed run redoes them
    return Stages(root).run(name, key, fn)


def run_side_by_side(
    root: Path, stages: list[tuple[str, dict[str, Any], Callable[[Path], dict[str, Any]], int]], cores: int
) -> Iterator[StageRecord]:
    """Run ``stages`` (name, key, fn, cores it occupies) at the same time where ``cores`` allow, each
    in a fresh (spawned) process; their records in the order they finish. Stages start in their
    order, each as soon as enough cores are free (one that needs more than ``cores`` runs alone).
    ``fn`` must pickle (a top-level function or its ``partial``) and must not read the others'
    outputs. A stage that fails stops the ones not yet started, lets the running ones finish
    (their outputs stay cached) and raises its error."""
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise R2S2RError(f"run_side_by_side: expected cores >= 1, got {cores!r}")
    todo = list(stages)
    with cf.ProcessPoolExecutor(max(1, min(cores, len(todo))), multiprocessing.get_context("spawn")) as pool:
        running: dict[cf.Future, int] = {}
        while todo or running:
            while todo and (not running or sum(running.values()) + todo[0][3] <= cores):
                name, key, fn, need = todo.pop(0)
                running[pool.submit(_run_one, Path(root), name, key, fn)] = need
            finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for f in finished:
                del running[f]
                if f.exception() is not None:
                    todo.clear()
                yield f.result()
