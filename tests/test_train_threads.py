"""``train_threads``: the torch threads of a training process, and the study's training key holding them."""

from __future__ import annotations

import os

import pytest

from r2s2r.errors import ConfigError
from r2s2r.train.threads import train_threads


def test_a_requested_count_is_kept_and_bad_ones_are_named():
    assert train_threads(3) == 3
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ConfigError, match="--threads: expected a positive integer"):
            train_threads(bad)


def test_the_default_shares_this_process_cores_among_torchrun_processes(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert train_threads() == cores
    monkeypatch.setenv("WORLD_SIZE", str(cores * 4))
    assert train_threads() == 1  # never zero
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert train_threads() == max(1, cores // 2)


def test_the_study_retrains_when_the_thread_count_changes(tmp_path, monkeypatch):
    from rich.console import Console

    from r2s2r.study import runner
    from r2s2r.study.design import get_design
    from r2s2r.study.profiles import get_profile

    def plan(threads):
        monkeypatch.setattr(runner, "train_threads", lambda: threads)
        study = runner.plan_study(get_profile("smoke"), get_design("grounding"), tmp_path, 1, Console(quiet=True))
        return {s.name: s for s in study.stages}

    one, two = plan(1), plan(2)
    trains = [n for n in one if n.startswith("train-")]
    assert trains and all(one[n].key["torch_threads"] == 1 and two[n].key["torch_threads"] == 2 for n in trains)
    for name in one:  # the training stages and everything downstream of them change; the data stages do not
        downstream = name.split("-", 1)[0] in ("train", "eval", "simeval", "videos")
        assert (one[name].hash != two[name].hash) == downstream, name
