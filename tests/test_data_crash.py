"""A writer SIGKILLed at any moment leaves a dataset holding exactly the episodes it completed; a rerun resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from r2s2r.data import Dataset, DatasetWriter, check_dataset, standard_features, synthetic_episode

N, SHARD = 14, 4
FEATS = standard_features(state_dim=9, image_size=(32, 32))

# Writes episodes 0..N-1 (skipping stored keys), printing each key once its add() has returned.
SCRIPT = """
import sys
import numpy as np
from r2s2r.data import DatasetWriter, standard_features, synthetic_episode
path, n, shard = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
feats = standard_features(state_dim=9, image_size=(32, 32))
with DatasetWriter(path, feats, 10.0, info={"run": "crash"}, shard_episodes=shard) as w:
    print("ready", flush=True)
    for k in range(n):
        if k not in w.keys():
            w.add(synthetic_episode(feats, 10 + (7 * k) % 31, np.random.default_rng(k), key=k))
            print(k, flush=True)
print("closed", flush=True)
"""


def episode(k: int):
    return synthetic_episode(FEATS, 10 + (7 * k) % 31, np.random.default_rng(k), key=k)


def start(path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(path), str(N), str(SHARD)], stdout=subprocess.PIPE, text=True
    )


def run_until(path: Path, after: int | None, delay: float) -> tuple[list[int], bool]:
    """Start a writer; after it reports key ``after`` (or 'ready' when None), wait ``delay`` s and SIGKILL it.
    Returns the keys it reported completed and whether it finished on its own."""
    proc = start(path)
    target = "ready" if after is None else str(after)
    lines = []
    for line in proc.stdout:
        lines.append(line.strip())
        if lines[-1] in (target, "closed"):
            break
    if lines and lines[-1] != "closed":
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    lines += [ln.strip() for ln in out.splitlines()]
    done = proc.returncode == 0 and "closed" in lines
    return [int(x) for x in lines if x.isdigit()], done


def verify(path: Path, reported: set[int]) -> list[int]:
    """The dataset checks clean and holds keys 0..n-1: every reported key, plus at most one whose add()
    returned just before the kill; every stored episode equals the one written."""
    check_dataset(path)
    with Dataset(path) as ds:
        keys = [ds.provenance(i).key for i in range(len(ds))]
        assert keys == list(range(len(keys)))  # unique, in order, no gaps
        assert reported <= set(keys) and len(keys) <= len(reported) + 1, (sorted(reported), keys)
        for i, key in enumerate(keys):
            got, want = ds.episode(i), episode(key)
            assert got.provenance == want.provenance
            for name, x in want.arrays().items():
                assert np.array_equal(got.arrays()[name], x), (key, name)
    return keys


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("clean") / "ds"
    with DatasetWriter(path, FEATS, 10.0, info={"run": "crash"}, shard_episodes=SHARD) as w:
        for k in range(N):
            w.add(episode(k))
    return path


def assert_same_as_clean(path: Path, clean: Path) -> None:
    theirs = Dataset(clean).manifest
    mine = Dataset(path).manifest
    assert sorted(mine.shards) == sorted(theirs.shards)
    names = [*mine.shards, "manifest.json"]
    for name in names:
        assert (path / name).read_bytes() == (clean / name).read_bytes(), name
    leftovers = sorted(p.name for p in path.iterdir() if p.name not in names)
    assert leftovers == [".writer.lock"]


@pytest.mark.parametrize(("after", "seed"), [(None, 0), (2, 1), (3, 2), (10, 3)])
def test_kill_after_k_episodes_then_resume(tmp_path, clean, after, seed):
    path = tmp_path / "ds"
    delay = float(np.random.default_rng(seed).uniform(0.0, 0.04))
    reported, finished = run_until(path, after, delay)
    assert not finished
    if after is not None:
        assert after in reported
    keys = verify(path, set(reported))
    assert len(keys) >= (0 if after is None else after + 1)
    # resume: the rerun skips stored keys and finishes the run
    reported2, finished = run_until(path, N + 1, 0.0)
    assert finished and set(reported2) == set(range(len(keys), N))
    assert verify(path, set(range(N))) == list(range(N))
    assert_same_as_clean(path, clean)  # a killed-and-resumed run writes the very same bytes


def test_repeated_kills_at_random_moments_converge(tmp_path, clean):
    path, rng, reported = tmp_path / "ds", np.random.default_rng(7), set()
    for _ in range(6):
        got, finished = run_until(path, None, float(rng.uniform(0.0, 0.15)))
        reported = set(verify(path, reported | set(got)))  # stored now, reported or not
        if finished:
            break
    else:
        got, finished = run_until(path, N + 1, 0.0)
        assert finished
    assert verify(path, set(range(N))) == list(range(N))
    assert_same_as_clean(path, clean)


def test_leftover_temp_and_orphan_files_are_removed_on_reopen(tmp_path, clean):
    path = tmp_path / "ds"
    with DatasetWriter(path, FEATS, 10.0, shard_episodes=SHARD) as w:
        for k in range(3):
            w.add(episode(k))
    junk = [".stage_000003.h5.abc.tmp", ".manifest.json.xyz.tmp", "stage_000003.h5", "shard_000099.h5"]
    for name in junk:
        (path / name).write_bytes(b"half written")
    (path / "notes.txt").write_text("user file")
    assert check_dataset(path).orphans == ("shard_000099.h5", "stage_000003.h5")
    with DatasetWriter(path, FEATS, 10.0, shard_episodes=SHARD) as w:
        assert w.keys() == {0, 1, 2}
    left = {p.name for p in path.iterdir()}
    assert not left & set(junk) and "notes.txt" in left
    assert os.path.getsize(path / "manifest.json") > 0
