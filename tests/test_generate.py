"""Generation at scale: the same episodes from every executor, and a run killed at random resumes
to exactly N episodes, none lost or duplicated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from r2s2r.data import Dataset, check_dataset
from r2s2r.data.episode import datagen_leaves
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.generate.attempt import BehaviorInputs, GenerationSpec
from r2s2r.generate.executors import LocalExecutor
from r2s2r.generate.mix import ConditionMix
from r2s2r.generate.one import BEHAVIORS
from r2s2r.generate.run import RunConfig, generate, read_log
from r2s2r.world.cell import CellConfig
from r2s2r.world.conditions import KINDS
from r2s2r.world.params import WorldParams

N = 3
CELL = CellConfig(image_size=32)
MIX = ConditionMix(nominal=0.5, lighting=0.25, belt_speed=0.25, novel_object=0.0, combined=0.0)
INFO = {"kind": "test", "configuration": {"world": "nominal", "behavior": "teleop"}}


def _spec(seed: int = 5) -> GenerationSpec:
    return GenerationSpec(BehaviorInputs(WorldParams.nominal()), BEHAVIORS["teleop"], CELL, MIX, seed)


def _fingerprint(path) -> list[tuple]:
    """Every episode's arrays and provenance, as bytes."""
    out = []
    with Dataset(path) as ds:
        for ep in ds.episodes():
            arrays = ep.arrays() | datagen_leaves(ep.datagen_info)
            out.append((ep.provenance.dumps(), tuple((k, arrays[k].tobytes()) for k in sorted(arrays))))
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "serial"
    stats = generate(out, _spec(), RunConfig(n=N), INFO)
    return out, stats


def test_serial_run_admits_n_and_counts_every_attempt(reference):
    out, stats = reference
    assert stats["admitted"] == N == len(Dataset(out))
    assert stats["attempts"] == stats["admitted"] + sum(stats["failures"].values())
    log = read_log(out)
    assert [e["key"] for e in log] == list(range(len(log)))  # a prefix of the keys, in order
    with Dataset(out) as ds:
        keys = [ds.provenance(i).key for i in range(len(ds))]
        assert keys == [e["key"] for e in log if e["success"]]
        for i in range(len(ds)):
            p = ds.provenance(i)
            assert p.source == "sim" and p.behavior == "teleop" and p.success
            assert p.world_hash == WorldParams.nominal().content_hash()
        assert ds.info == json.loads(json.dumps(INFO))
    assert 0 < stats["floor_s"] <= stats["worker_s"] and stats["admitted_per_hour_per_worker"] > 0


def test_processes_and_ray_give_the_same_bytes(reference, tmp_path):
    out, _ = reference
    want = _fingerprint(out)
    generate(tmp_path / "local", _spec(), RunConfig(n=N, workers=2), INFO)
    assert _fingerprint(tmp_path / "local") == want
    pytest.importorskip("ray", reason="the ray extra is installed by scripts/setup.sh")
    generate(tmp_path / "ray", _spec(), RunConfig(n=N, workers=2, executor="ray"), INFO)
    assert _fingerprint(tmp_path / "ray") == want


def test_resuming_with_other_settings_is_refused(reference, tmp_path):
    out = tmp_path / "d"
    generate(out, _spec(), RunConfig(n=1), INFO)
    with pytest.raises(R2S2RError, match="info differs"):
        generate(out, _spec(), RunConfig(n=2), {**INFO, "seed": 99})
    stats = generate(out, _spec(), RunConfig(n=2), INFO)  # same settings, larger n: continues
    assert stats["admitted"] == 2 and len(stats["sessions"]) == 2
    assert _fingerprint(out) == _fingerprint(reference[0])[:2]


def test_a_pool_broken_while_idle_is_rebuilt_before_new_work(reference):
    """A worker killed between attempts breaks the pool before any future fails: the next
    submit is refused, and the executor must rebuild the pool rather than stop the run."""
    executor = LocalExecutor(_spec(), workers=2)

    def keys():
        yield from range(executor.window)  # asked for before the pool starts its workers
        pool = executor._pool  # private: the fault is injected into this very pool
        for pid in list(pool._processes):
            os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        while not pool._broken and time.monotonic() - t0 < 30:
            time.sleep(0.01)
        assert pool._broken, "the pool did not notice its dead workers"
        yield executor.window  # asked for once the first record is out: the pool is broken by now

    try:
        records = list(executor.results(keys()))
    finally:
        executor.close()
    assert [r.key for r in records] == list(range(executor.window + 1)) and executor.restarts == 1
    want = read_log(reference[0])  # the same keys give the same attempts as the serial run
    fields = ("key", "success", "failure", "steps")
    got = [{f: r.log_entry()[f] for f in fields} for r in records[: len(want)]]
    assert got == [{f: e[f] for f in fields} for e in want[: len(records)]]


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except FileNotFoundError:
        return []


def _pool_workers(pid: int) -> list[int]:
    """The pool's worker processes among ``pid``'s children, known by their command line (not
    multiprocessing's resource tracker, nor a child forked but not yet exec'd, which still shows
    the parent's command line)."""
    out = []
    for c in _children(pid):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    out.append(c)
        except FileNotFoundError:
            pass
    return out


def _wait_for_workers(proc, k: int, timeout: float = 120.0) -> list[int]:
    """Until ``proc`` runs ``k`` pool workers (or exits, or ``timeout`` passes); returns them."""
    t0 = time.monotonic()
    workers = _pool_workers(proc.pid)
    while len(workers) < k and proc.poll() is None and time.monotonic() - t0 < timeout:
        time.sleep(0.05)
        workers = _pool_workers(proc.pid)
    return workers


def _cli(out, n: int) -> list[str]:
    return [sys.executable, "-m", "r2s2r.cli", "generate", "--world", "ungrounded", "--world-file",
            str(out.parent / "nominal.json"), "--behavior", "teleop", "--n", str(n), "--seed", "5",
            "--image-size", "32", "--workers", "2", "--out", str(out),
            "--mix.nominal", "0.5", "--mix.lighting", "0.25", "--mix.belt-speed", "0.25",
            "--mix.novel-object", "0", "--mix.combined", "0"]  # fmt: skip


def _wait_for_commit(out, proc, timeout: float = 120.0) -> None:
    """Until the run commits one more attempt than it had (or exits)."""
    log = out / "attempts.jsonl"
    before = len(read_log(out)) if log.exists() else 0
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < timeout:
        if log.exists() and log.read_bytes().count(b"\n") > before:
            return
        time.sleep(0.05)


def _wait_for_restart(out, proc, timeout: float = 180.0) -> int:
    """Until the run's stats record that this session rebuilt its worker pool (or it exits, or
    ``timeout`` passes); returns the restarts recorded.

    A commit alone is not enough: an attempt finished by the surviving worker can land before
    the parent notices the killed one."""
    t0 = time.monotonic()
    restarts = 0
    while proc.poll() is None and time.monotonic() - t0 < timeout:
        restarts = json.loads((out / "stats.json").read_text())["sessions"][-1].get("restarts", 0)
        if restarts >= 1:
            break
        time.sleep(0.05)
    return restarts


@pytest.mark.slow
def test_sigkill_of_parent_and_workers_then_resume_loses_and_duplicates_nothing(reference, tmp_path):
    WorldParams.nominal().save(tmp_path / "nominal.json")
    out, n = tmp_path / "killed", 4 * N  # room for the killed rounds to leave work, on a fast machine too
    rng = np.random.default_rng(0)
    for round_ in range(3):
        err = tmp_path / f"round{round_}.stderr"
        with open(err, "wb") as f:
            proc = subprocess.Popen(_cli(out, n), stdout=subprocess.DEVNULL, stderr=f)
        _wait_for_commit(out, proc)  # may be the line a resumed run writes for an episode stored unlogged
        if round_ == 1:  # kill a worker: the run replaces it, retries its attempts and carries on
            workers = _wait_for_workers(proc, 2)
            assert len(workers) == 2, f"the run started {workers} workers, not 2 (exited: {proc.poll()})"
            os.kill(workers[-1], signal.SIGKILL)
            restarts = _wait_for_restart(out, proc)
            assert restarts >= 1, (
                f"no pool restart recorded after killing worker {workers[-1]} of {workers} "
                f"(run exited: {proc.poll()}); stderr: {err.read_text()[-2000:]}"
            )
        time.sleep(float(rng.uniform(0.0, 0.5)))  # then kill everything at a random point
        for pid in [proc.pid, *_children(proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    stats = json.loads((out / "stats.json").read_text())
    assert stats["admitted"] < n, "the killed rounds finished the run: nothing left to resume"
    done = subprocess.run(_cli(out, n), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = check_dataset(out)
    assert report.num_episodes == n and not report.problems
    with Dataset(out) as ds:
        keys = [ds.provenance(i).key for i in range(len(ds))]
    assert len(set(keys)) == n and keys == sorted(keys)
    # the same seed gives the same episodes: the first N are the uninterrupted serial run's
    assert [f[1] for f in _fingerprint(out)[:N]] == [f[1] for f in _fingerprint(reference[0])]
    log = read_log(out)
    assert [e["key"] for e in log] == list(range(len(log)))
    stats = json.loads((out / "stats.json").read_text())
    assert stats["admitted"] == n and len(stats["sessions"]) == 4
    assert stats["sessions"][1]["restarts"] >= 1


def test_condition_mix_draws_each_kind_at_its_fraction():
    mix = ConditionMix()
    rng = np.random.default_rng(1)
    kinds = [mix.sample(rng).kind for _ in range(4000)]
    for k in KINDS:
        assert abs(kinds.count(k) / len(kinds) - mix.fractions[k]) < 0.025, k
    with pytest.raises(ConfigError, match="summing to 1"):
        ConditionMix(nominal=0.9)
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        ConditionMix(nominal=1.2, lighting=-0.2)


def test_cli_names_what_is_missing(tmp_path, capsys):
    from r2s2r.cli import main

    assert main(["generate", "--world", "grounded", "--behavior", "teleop", "--out", str(tmp_path / "x")]) == 2
    assert "--calibration" in capsys.readouterr().err
    assert main(["generate", "--world", "grounded", "--behavior", "telop", "--world-file", "w", "--out", "x"]) == 2
    assert "Did you mean 'teleop'" in capsys.readouterr().err


def test_shadows_render_the_world_as_the_lab_draws_and_are_recorded(tmp_path):
    from r2s2r.generate.commands import configuration
    from r2s2r.world.params import SHADOWED_RENDER

    path = WorldParams.nominal().save(tmp_path / "world.json")
    (lean, lean_info), (shadowed, info) = (
        configuration("grounded", "teleop", path, None, 0, 32, MIX, shadows=s) for s in (False, True)
    )
    assert lean.inputs.world == WorldParams.nominal() and "shadows" not in lean_info
    assert shadowed.inputs.world.render == SHADOWED_RENDER != WorldParams.nominal().render
    assert shadowed.inputs.world.replace(render=WorldParams.nominal().render) == WorldParams.nominal()
    assert info["shadows"] is True and info["world_hash"] == shadowed.inputs.world.content_hash()
    assert info["world_hash"] != lean_info["world_hash"]


def test_a_shadowed_world_generates_other_frames_of_the_same_attempt(reference, tmp_path):
    from r2s2r.world.params import SHADOWED_RENDER

    world = WorldParams.nominal().replace(render=SHADOWED_RENDER)
    spec = GenerationSpec(BehaviorInputs(world), BEHAVIORS["teleop"], CELL, MIX, 5)
    generate(tmp_path / "shadowed", spec, RunConfig(n=1), INFO)
    with Dataset(reference[0]) as lean, Dataset(tmp_path / "shadowed") as shadowed:
        a, b = next(iter(lean.episodes())), next(iter(shadowed.episodes()))
        assert a.provenance.key == b.provenance.key == 0 and b.provenance.world_hash == world.content_hash()
        frames = [np.asarray(ep.arrays()["obs/head_left"], dtype=float) for ep in (a, b)]
        n = min(len(frames[0]), len(frames[1]))
        assert np.abs(frames[0][:n] - frames[1][:n]).mean() > 1.0  # grey levels: shadows and anti-aliasing show
