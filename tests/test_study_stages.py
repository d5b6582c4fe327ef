"""Cached stages: finished stages are skipped, a changed setting reruns only what depends on it,
a killed stage resumes in its own folder."""

import functools
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from r2s2r import atomic
from r2s2r.errors import R2S2RError
from r2s2r.study import Stages, key_hash
from r2s2r.study.stages import run_side_by_side


def _pipeline(stages: Stages, calls: list[str], a: int, b: int):
    up = stages.run("up", {"a": a}, lambda d: (calls.append("up"), (d / "x").write_text(str(a)), {"x": a})[-1])
    down = stages.run("down", {"b": b, "up": up.hash}, lambda d: (calls.append("down"), {"y": up.summary["x"] + b})[-1])
    other = stages.run("other", {"b": b}, lambda d: (calls.append("other"), {})[-1])
    return up, down, other


def test_rerun_skips_and_a_change_reruns_only_its_dependents(tmp_path):
    calls: list[str] = []
    stages = Stages(tmp_path)
    up, down, _ = _pipeline(stages, calls, 1, 2)
    assert calls == ["up", "down", "other"] and down.summary == {"y": 3} and not up.cached
    _pipeline(stages, calls, 1, 2)
    assert calls == ["up", "down", "other"]  # all cached
    up2, down2, other2 = _pipeline(stages, calls, 5, 2)
    assert calls[3:] == ["up", "down"] and other2.cached and down2.summary == {"y": 7}
    assert up2.dir != up.dir and (up.dir / "stage.json").is_file()  # the old result stays usable
    rec = json.loads((up2.dir / "stage.json").read_text())
    assert rec["key"] == {"a": 5} and rec["hash"] == key_hash({"a": 5}) and rec["machine"]


def test_killed_stage_resumes_in_its_folder(tmp_path):
    stages = Stages(tmp_path)

    def dies(d):
        (d / "partial").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        stages.run("s", {"k": 1}, dies)
    assert not stages.done("s", {"k": 1})
    seen = []
    rec = stages.run("s", {"k": 1}, lambda d: (seen.append((d / "partial").read_text()), {})[-1])
    assert seen == ["half"] and stages.done("s", {"k": 1}) and not rec.cached


# A stage that SIGKILLs its own process inside an atomic write: after the temporary file, before its rename.
KILLED_MID_WRITE = """
import os, signal, sys
from r2s2r import atomic
from r2s2r.study import Stages
os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
Stages(sys.argv[1]).run("s", {"k": 1}, lambda d: {"out": str(atomic.write_json(d / "sub" / "out.json", [1]))})
"""


def test_a_stage_killed_inside_an_atomic_write_leaves_no_temporary_file_once_rerun(tmp_path):
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(tmp_path)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    stages = Stages(tmp_path)
    folder = stages.dir("s", {"k": 1})
    left = [p.name for p in (folder / "sub").iterdir()]
    assert len(left) == 1 and left[0].startswith(".out.json.") and left[0].endswith(".tmp")
    (folder / "sub" / ".notes.tmp").write_text("not ours")  # another name pattern: kept
    rec = stages.run("s", {"k": 1}, lambda d: {"out": str(atomic.write_json(d / "sub" / "out.json", [1]))})
    assert not rec.cached and sorted(p.name for p in (folder / "sub").iterdir()) == [".notes.tmp", "out.json"]


def test_bad_keys_and_folders_are_named(tmp_path):
    with pytest.raises(R2S2RError, match="stage key"):
        key_hash({"x": object()})
    (tmp_path / "f").write_text("")
    with pytest.raises(R2S2RError, match="is a file"):
        Stages(tmp_path / "f")
    assert key_hash({"a": 1, "b": (1, 2)}) == key_hash({"b": [1, 2], "a": 1})


def _sleepy(folder, seconds: float, fail: bool = False):  # a top-level function: it pickles into the lanes
    t0 = time.time()
    time.sleep(seconds)
    if fail:
        raise R2S2RError(f"stage in {folder.name} failed on purpose")
    return {"pid": os.getpid(), "start": t0, "end": time.time()}


def test_side_by_side_stages_run_at_once_in_their_own_processes_and_are_cached(tmp_path):
    todo = [(f"s{i}", {"i": i}, functools.partial(_sleepy, seconds=1.0), 1) for i in range(3)]
    recs = {r.name: r for r in run_side_by_side(tmp_path, todo, cores=2)}
    assert sorted(recs) == ["s0", "s1", "s2"] and not any(r.cached for r in recs.values())
    s = {n: r.summary for n, r in recs.items()}
    assert os.getpid() not in {v["pid"] for v in s.values()}
    overlap = min(s["s0"]["end"], s["s1"]["end"]) - max(s["s0"]["start"], s["s1"]["start"])
    assert overlap > 0.5  # the first two ran at the same time; the third waited for a free core
    assert s["s2"]["start"] >= min(s["s0"]["end"], s["s1"]["end"]) - 0.05
    stages = Stages(tmp_path)
    assert all(stages.done(n, k) for n, k, _, _ in todo)
    again = list(run_side_by_side(tmp_path, todo, cores=2))
    assert len(again) == 3 and all(r.cached for r in again)


def test_a_side_by_side_stage_waits_for_the_cores_it_needs(tmp_path):
    todo = [
        ("one", {"k": 1}, functools.partial(_sleepy, seconds=0.6), 1),
        ("two", {"k": 2}, functools.partial(_sleepy, seconds=0.3), 1),
        ("both", {"k": 3}, functools.partial(_sleepy, seconds=0.1), 2),  # waits for both cores
    ]
    s = {r.name: r.summary for r in run_side_by_side(tmp_path, todo, cores=2)}
    assert s["both"]["start"] >= max(s["one"]["end"], s["two"]["end"]) - 0.05


def test_a_failing_side_by_side_stage_raises_and_its_neighbour_stays_cached(tmp_path):
    todo = [
        ("bad", {"k": 0}, functools.partial(_sleepy, seconds=0.1, fail=True), 1),
        ("good", {"k": 1}, functools.partial(_sleepy, seconds=0.5), 1),
        ("later", {"k": 2}, functools.partial(_sleepy, seconds=0.1), 1),  # never started
    ]
    with pytest.raises(R2S2RError, match="failed on purpose"):
        list(run_side_by_side(tmp_path, todo, cores=2))
    stages = Stages(tmp_path)
    assert stages.done("good", {"k": 1}) and not stages.done("bad", {"k": 0}) and not stages.done("later", {"k": 2})
    with pytest.raises(R2S2RError, match="cores >= 1"):
        list(run_side_by_side(tmp_path, todo, cores=0))
