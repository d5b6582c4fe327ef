"""A worker whose parent is killed ends within a second or two (``r2s2r.orphans.exit_with_parent``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PARENT = """
import multiprocessing, sys, time
from r2s2r.orphans import exit_with_parent

def child(watch, ready):
    if watch:
        exit_with_parent(poll_s=0.1)
        exit_with_parent(poll_s=0.1)  # a second call starts no second watcher
    open(ready, "w").close()
    time.sleep(60)

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=child, args=(sys.argv[1] == "watch", sys.argv[2]))
    p.start()
    print(p.pid, flush=True)
    time.sleep(60)
"""


def _alive(pid: int) -> bool:
    """Running, not gone and not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("watch", [True, False])
def test_a_worker_ends_with_its_killed_parent_only_when_it_watches(tmp_path, watch):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    ready = tmp_path / "ready"
    argv = [sys.executable, str(script), "watch" if watch else "no", str(ready)]
    parent = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 60.0
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists() and _alive(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 5.0
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive(child) is not watch  # without the watcher the orphan sleeps on
        assert parent.returncode == -signal.SIGKILL
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_process_multiprocessing_did_not_start_never_watches():
    import threading

    from r2s2r.orphans import THREAD, exit_with_parent

    exit_with_parent()  # pytest's own process: its parent may end (nohup) without ending it
    assert not any(t.name == THREAD for t in threading.enumerate())
