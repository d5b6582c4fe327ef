"""Cached stages: finished stages are skipped, a changed setting reruns only what depends on it,
a killed stage resumes in its own folder."""

import json
import signal
import subprocess
import sys

import pytest

from r2s2r import atomic
from r2s2r.errors import R2S2RError
from r2s2r.study import Stages, key_hash


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
