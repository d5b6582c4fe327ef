"""Work shared by processes (``r2s2r.shared_work``): each result computed once, read back by the others,
the same results whoever computed them, and a claim that dies with its process."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import pickle
import threading
import time

import pytest

from r2s2r.errors import ConfigError
from r2s2r.shared_work import SharedWork

NAMES = [f"item-{i}" for i in range(12)]


def _square(name: str) -> int:
    return int(name.split("-")[1]) ** 2


def _never(name: str) -> int:
    raise AssertionError(f"{name} was computed again")


def _map_and_record(folder, log, out) -> None:
    """In a worker process: map NAMES, noting each name this process computed (one file per
    name and process), and store what map returned."""

    def compute(name: str) -> int:
        (log / f"{name}.{os.getpid()}").touch()
        time.sleep(0.02)
        return _square(name)

    out.write_bytes(pickle.dumps(SharedWork(folder).map(NAMES, compute)))


def _hold(folder) -> None:
    """In a worker process: claim ``a`` and never finish it."""
    SharedWork(folder).map(["a"], lambda name: time.sleep(600))


def _locked(path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_without_a_folder_every_result_is_computed_here():
    assert SharedWork(None).map(NAMES, _square) == {n: _square(n) for n in NAMES}


def test_published_results_are_read_back_not_recomputed(tmp_path):
    first = SharedWork(tmp_path).map(NAMES, _square)
    assert list(first) == NAMES and first == {n: _square(n) for n in NAMES}
    assert SharedWork(tmp_path).map(NAMES[::-1], _never) == {n: _square(n) for n in NAMES[::-1]}


def test_processes_compute_each_result_once_and_agree(tmp_path):
    folder, log = tmp_path / "shared", tmp_path / "log"
    folder.mkdir()
    log.mkdir()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_map_and_record, args=(folder, log, tmp_path / f"out{i}")) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    computed = sorted(f.name.rsplit(".", 1)[0] for f in log.iterdir())
    assert computed == sorted(NAMES)  # each name once, by one of the processes
    results = [pickle.loads((tmp_path / f"out{i}").read_bytes()) for i in range(3)]
    assert all(r == {n: _square(n) for n in NAMES} and list(r) == NAMES for r in results)


def test_a_claim_dies_with_its_process(tmp_path):
    holder = multiprocessing.get_context("fork").Process(target=_hold, args=(tmp_path,))
    holder.start()
    try:
        deadline = time.monotonic() + 30
        while not _locked(tmp_path / "a.lock"):
            assert time.monotonic() < deadline, "the holder never claimed its item"
            time.sleep(0.01)
        threading.Timer(0.3, holder.kill).start()  # map below waits for the holder, which dies
        assert SharedWork(tmp_path).map(["a"], lambda name: 42) == {"a": 42}
    finally:
        holder.kill()
        holder.join()


def test_a_failed_computation_leaves_no_claim_and_no_result(tmp_path):
    def fail(name: str) -> int:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        SharedWork(tmp_path).map(["a"], fail)
    assert not (tmp_path / "a.pkl").exists()
    assert SharedWork(tmp_path).map(["a"], lambda name: 7) == {"a": 7}


def test_names_must_be_plain_file_names(tmp_path):
    with pytest.raises(ConfigError, match="letters, digits"):
        SharedWork(tmp_path).map(["../escape"], _square)
