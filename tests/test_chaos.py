"""Kill anywhere, resume to the same bytes ([M2-3]).

``r2s2r study run --profile smoke`` runs in its own session and is SIGKILLed as a process group (its
demos, generation and evaluation workers die with it) at seeded-random moments aimed into every stage
kind. A kill waits until its stage's folder appears (``Stages.run`` creates it as the stage starts and
writes ``stage.json`` into it as the stage ends), then a random delay inside the stage. After each kill
the same command is started again; the last run goes to the end. The resumed study must equal the
uninterrupted ``smoke`` study (conftest): the same results.json less wall-clock timings and absolute
paths, the same files, the same dataset and checkpoint bytes, every trial once with the same outcome.

Calibration has no resume: a killed calibrate stage starts again from scratch, and ``calibrate_lab``
writes nothing until it returns. One kill is aimed into it; then, instead of calibrating again for
three minutes, the test puts the uninterrupted study's finished calibrate stage in its folder (what
the rerun would write: the same call on a fresh lab) and goes on killing the stages after it.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from r2s2r.data import Dataset, check_dataset
from r2s2r.study import PROFILES, get_design
from r2s2r.study.runner import plan_study

from .conftest import SMOKE_WORKERS

PROFILE = PROFILES["smoke"]
STAGE_FILE = "stage.json"
REPORT = "report"  # the kill target after the last stage: results.json, figures, report.md, study.json

# (target, delay range in s after its stage folder appears), in run order: every training (side by
# side, each in its own process: two at a time on 2 cores), then the evaluations. Stage times of the
# smoke study measured on the 2-core development machine under load (docs/reliability.md): calibration
# 228 s (a killed calibration starts again from scratch: one kill in its first seconds, then the test
# plants the finished stage), demos 65 s, each sim 13 s, a training 2.4 s in a fresh process (torch's
# import) and 0.3 s in one a training before it left (the pool reuses its processes), each evaluation
# 9-11 s, the report 0.4 s. The ranges sit in each stage's first part, for a faster machine; a kill
# whose delay runs past its stage hits the next one (recorded as such).
CALIBRATE_KILL = ("calibrate", 2.0, 15.0)
KILLS = (
    ("demos-3", 3.0, 20.0),
    ("sim-gw-gb", 0.5, 5.0),
    ("sim-uw-gb", 0.5, 5.0),
    ("train-real-only", 0.0, 2.0),
    ("train-real+gw-ub", 0.0, 0.2),
    ("train-real+uw-ub", 0.0, 0.2),
    ("eval-real-only", 0.5, 4.0),
    ("eval-real+gw-ub", 0.5, 4.0),
    ("eval-real+uw-ub", 0.5, 4.0),
    (REPORT, 0.0, 0.3),
)
WAIT_S = 900.0  # the longest wait for a stage to start (a whole calibration under load, with margin)


def _stage_dirs(out: Path) -> list[Path]:
    return sorted(d for d in (out / "stages").glob("*-*") if d.is_dir()) if (out / "stages").is_dir() else []


def _stage_name(folder: Path) -> str:
    return folder.name.rsplit("-", 1)[0]  # <name>-<16 hex digit hash>


def _n_stages() -> int:
    """The smoke study's stages, as its plan lists them (no labels stage at the tiny preset)."""
    console = Console(stderr=True, quiet=True)
    return len(plan_study(PROFILE, get_design(PROFILE.design), Path("unused"), SMOKE_WORKERS, console).stages)


def _started(out: Path, target: str) -> bool:
    if target == REPORT:
        dirs = _stage_dirs(out)
        return len(dirs) == _n_stages() and all((d / STAGE_FILE).is_file() for d in dirs)
    return any(_stage_name(d) == target for d in _stage_dirs(out))


def _finished(out: Path, target: str) -> bool:
    if target == REPORT:
        return (out / "study.json").is_file()
    return any(_stage_name(d) == target and (d / STAGE_FILE).is_file() for d in _stage_dirs(out))


def _stage_hit(out: Path) -> str:
    """The stage(s) a kill interrupted: the folders without ``stage.json`` (one, or trainings side by
    side), else the report or a gap."""
    running = sorted(_stage_name(d) for d in _stage_dirs(out) if not (d / STAGE_FILE).is_file())
    assert len(running) <= 1 or all(r.startswith("train-") for r in running), running
    if running:
        return " & ".join(running)
    return REPORT if _started(out, REPORT) and not _finished(out, REPORT) else "between stages"


def _command(out: Path) -> list[str]:
    return [sys.executable, "-m", "r2s2r.cli", "study", "run", "--profile", "smoke",
            "--workers", str(SMOKE_WORKERS), "--out", str(out)]  # fmt: skip


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def kill_and_resume(
    out: Path, log: Path, rng: np.random.Generator, kills: tuple[tuple[str, float, float], ...]
) -> list[tuple[str, str, float]]:
    """Run the study into ``out``, SIGKILLed once per reachable target of ``kills``, rerun after each
    kill. Returns (target, stage hit, delay) per kill; the caller runs the study to its end."""
    hits, proc = [], None
    with log.open("a") as err:
        for target, low, high in kills:
            delay = float(rng.uniform(low, high))  # drawn for every target: later draws never depend on timing
            if _finished(out, target):  # an earlier kill's delay ran past it
                continue
            if proc is None:
                err.write(f"--- start (next kill: {target} + {delay:.2f} s)\n")
                err.flush()
                proc = subprocess.Popen(
                    _command(out), stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
                )  # its own process group: one killpg reaches the workers too
            t0 = time.monotonic()
            while not _started(out, target) and proc.poll() is None:
                assert time.monotonic() - t0 < WAIT_S, f"{target} did not start:\n{_tail(log)}"
                time.sleep(0.02)
            time.sleep(delay)
            if proc.poll() is not None:
                assert proc.returncode == 0, f"study run failed (rc {proc.returncode}):\n{_tail(log)}"
                break  # finished on its own: nothing left to kill
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            proc = None
            hits.append((target, _stage_hit(out), delay))
            err.write(f"--- SIGKILL aimed at {target}: hit {hits[-1][1]} after {delay:.2f} s\n")
    if proc is not None:
        proc.wait(timeout=WAIT_S)
    return hits


# results.json fields that differ between two runs of the same study, each for the reason given
def comparable_results(results: dict, out: Path) -> dict:
    r = copy.deepcopy(results)
    for s in r["stages"]:
        del s["seconds"]  # the stage's wall-clock time
        del s["cached"]  # the final rerun finds the stages that earlier (killed) runs finished
    for g in r["generation"].values():
        del g["wall_s"], g["admitted_per_hour_per_worker"]  # wall-clock time and a rate per wall-clock hour
        del g["overhead"]  # worker seconds over the physics floor: a ratio of measured times
    for t in r["training"].values():
        t["history"] = _untimed(t["history"])  # training throughput and elapsed time
    for p in r["policies"].values():
        p["eval_dir"] = str(Path(p["eval_dir"]).relative_to(out))  # absolute: inside each study's folder
    return r


def _json(path: Path):
    return json.loads(path.read_text())


def _outcomes(path: Path) -> list[dict]:
    """Trial outcomes of an evaluation's results.json or wave file, less their wall-clock seconds."""
    return [{k: v for k, v in o.items() if k not in ("lab_seconds", "policy_seconds")} for o in _json(path)["outcomes"]]


def _untimed(history: list[dict]) -> list[dict]:
    """A training history less its throughput and elapsed time."""
    return [{k: v for k, v in h.items() if k not in ("samples_per_s", "seconds")} for h in history]


def _checkpoint_config(ckpt: Path, out: Path) -> dict:
    """A checkpoint's config.json less what two runs of the same study write differently."""
    config = _json(ckpt / "config.json")
    del config["files"]["train_state.json"]  # the SHA-256 of a file holding the history's timings
    for source in config["sources"]:
        source["path"] = str(Path(source["path"]).relative_to(out))  # absolute: inside each study's folder
    return config


def _attempts(data: Path) -> list[dict]:
    """A generation's attempt log, less each attempt's seconds and worker pid."""
    lines = (data / "attempts.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(x).items() if k not in ("seconds", "worker")} for x in lines]


def assert_same_study(ref: Path, out: Path) -> None:
    """``out`` (killed, resumed) holds what the uninterrupted ``ref`` holds: nothing lost, duplicated or left over."""
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == sorted(str(p.relative_to(ref)) for p in ref.rglob("*") if p.is_file())
    hidden = [f for f in files if Path(f).name.startswith(".") and Path(f).name != ".writer.lock"]
    assert not hidden and not [f for f in files if ".tmp" in f or ".partial" in f], hidden
    assert comparable_results(_json(out / "results.json"), out) == comparable_results(_json(ref / "results.json"), ref)
    dirs = _stage_dirs(out)
    assert len(dirs) == _n_stages() and all((d / STAGE_FILE).is_file() for d in dirs)
    for d in dirs:
        name, twin = _stage_name(d), ref / "stages" / d.name
        if (d / "data").is_dir():  # demos and sims: exactly the profile's episodes, each once, same bytes
            report = check_dataset(d / "data")
            with Dataset(d / "data") as ds:
                keys = [ds.provenance(i).key for i in range(len(ds))]
            want = PROFILE.n_real if name.startswith("demos") else PROFILE.n_sim
            assert report.num_episodes == len(keys) == len(set(keys)) == want, (name, keys)
            for f in (d / "data").iterdir():
                if f.name == "manifest.json" or f.suffix == ".h5":
                    assert f.read_bytes() == (twin / "data" / f.name).read_bytes(), f
            if (d / "data" / "attempts.jsonl").is_file():
                assert _attempts(d / "data") == _attempts(twin / "data"), name
        if name.startswith("train-"):  # the checkpoints of the uninterrupted run, the last with the same weights
            run, last = d / "run", _json(d / STAGE_FILE)["key"].get("stop_at", PROFILE.steps)  # early-stop anchors
            steps = sorted(p.name for p in run.iterdir() if p.is_dir())
            # the baseline's run also checkpoints at the early-stop steps (its copies there: ``early/``)
            assert steps == sorted(p.name for p in (twin / "run").iterdir() if p.is_dir())
            assert steps[-1] == f"step_{last:08d}" and (run / "latest").read_text().strip() == steps[-1]
            ckpt, twin_ckpt = run / steps[-1], twin / "run" / steps[-1]
            assert sorted(p.name for p in ckpt.iterdir()) == sorted(p.name for p in twin_ckpt.iterdir())
            for f in ("model.safetensors", "train.safetensors", "stats.json"):  # weights, optimiser, normaliser
                assert (ckpt / f).read_bytes() == (twin_ckpt / f).read_bytes(), ckpt / f
            assert _checkpoint_config(ckpt, out) == _checkpoint_config(twin_ckpt, ref)
            state = _json(ckpt / "train_state.json")
            assert _json(d / "history.json") == state["history"]
            assert _untimed(state["history"]) == _untimed(_json(twin_ckpt / "train_state.json")["history"])
        if name.startswith("eval-"):  # every trial once, in its wave, with the uninterrupted run's outcome
            outcomes = _outcomes(d / "results.json")
            assert [o["index"] for o in outcomes] == list(range(PROFILE.trials.total))
            assert outcomes == _outcomes(twin / "results.json"), name
            waves = [o for w in sorted((d / "waves").glob("wave_*.json")) for o in _outcomes(w)]
            assert waves == outcomes


@pytest.mark.slow
def test_sigkilled_anywhere_the_resumed_study_equals_the_uninterrupted_one(smoke, tmp_path):
    ref, _ = smoke
    out, log = tmp_path / "study", tmp_path / "study.log"
    t0 = time.monotonic()
    rng = np.random.default_rng(2026)
    hits = kill_and_resume(out, log, rng, (CALIBRATE_KILL,))
    [cal] = [d for d in _stage_dirs(out) if _stage_name(d) == "calibrate"]
    assert hits[0][1] == "calibrate" and not (cal / STAGE_FILE).exists(), hits  # killed inside, unfinished
    shutil.rmtree(cal)
    shutil.copytree(ref / "stages" / cal.name, cal)  # the finished calibration the rerun would write
    hits += kill_and_resume(out, log, rng, KILLS)
    done = subprocess.run(_command(out), capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"\n{len(hits)} kills in {time.monotonic() - t0:.0f} s:", *(f"{t} -> {h} ({d:.2f} s)" for t, h, d in hits))
    assert_same_study(ref, out)
    assert len(hits) >= 10
    assert {"calibrate", "train", "eval"} <= {h.split("-")[0] for _, h, _ in hits}, hits
