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


def test_training_threads_share_the_cores_round_by_round():
    from r2s2r.study.runner import training_threads

    assert training_threads(5, 1) == [1] * 5
    assert training_threads(5, 2) == [1, 1, 1, 1, 2]  # the fifth runs alone, on both cores
    assert training_threads(4, 2) == [1] * 4
    assert training_threads(5, 16) == [3] * 5  # the cores shared out; one left over
    assert training_threads(7, 4) == [1] * 4 + [1, 1, 1]
    assert training_threads(6, 4) == [1] * 4 + [2, 2]
    assert training_threads(1, 8) == [8]  # one policy: every core
    assert training_threads(0, 4) == []


def test_the_study_retrains_when_the_thread_count_changes(tmp_path, monkeypatch):
    from rich.console import Console

    from r2s2r.study import runner
    from r2s2r.study.design import get_design
    from r2s2r.study.profiles import get_profile

    def plan(cores):
        monkeypatch.setattr(runner, "train_threads", lambda: cores)
        return runner.plan_study(get_profile("smoke"), get_design("grounding"), tmp_path, 1, Console(quiet=True))

    # five policies share the cores: one thread each two at a time on 2 cores, the fifth alone on both;
    # three each on 16; the baseline stopped early (an agreement anchor: a copy its run keeps) has the
    # baseline's threads and runs after the trainings, not beside them
    two, many = plan(2), plan(16)
    assert (two.cores, many.cores) == (2, 16) and get_profile("smoke").anchor_steps == (10,)
    two, many = ({s.name: s for s in p.stages} for p in (two, many))
    trains = [n for n in two if n.startswith("train-")]
    assert trains[-1] == "train-real-only@10"
    assert [two[n].key["torch_threads"] for n in trains] == [1, 1, 1, 1, 2, 1]
    assert [many[n].key["torch_threads"] for n in trains] == [3] * 6
    assert [two[n].cores for n in trains] == [1, 1, 1, 1, 2, None]
    assert all(many[n].side_by_side for n in trains[:-1]) and not many[trains[-1]].side_by_side
    for name in two:  # the training stages and everything downstream of them change; the data stages do not
        downstream = name.split("-", 1)[0] in ("train", "eval", "simeval", "videos") or "@" in name
        assert (two[name].hash != many[name].hash) == downstream, name
    single = {s.name: s for s in plan(1).stages}
    assert not any(single[n].side_by_side for n in trains)  # one core: trained in the study's process


def test_the_plan_trains_every_policy_before_any_evaluation(tmp_path, monkeypatch):
    from rich.console import Console

    from r2s2r.study import costs, runner
    from r2s2r.study.design import get_design
    from r2s2r.study.profiles import get_profile

    monkeypatch.setattr(runner, "train_threads", lambda: 2)
    profile = get_profile("smoke").replace(anchor_steps=())  # the design's five trainings only
    study = runner.plan_study(profile, get_design("grounding"), tmp_path, 2, Console(quiet=True))
    kinds = [s.name.split("-", 1)[0] for s in study.stages]
    last_train = max(i for i, k in enumerate(kinds) if k == "train")
    first_use = min(i for i, k in enumerate(kinds) if k in ("eval", "simeval", "videos"))
    assert last_train < first_use and kinds.count("train") == 5
    # the estimate: two rounds of two one-thread trainings side by side, then the fifth alone on both cores
    none = {s.name: False for s in study.stages}
    trains = [s for s in study.stages if s.side_by_side]
    shared, alone = trains[0].estimate_s, trains[-1].estimate_s
    assert shared == pytest.approx(costs.COST_S["train_lane_slowdown"] * alone) and shared > alone
    rest = sum(s.estimate_s for s in study.stages if not s.side_by_side)
    assert runner.expected_wall_s(study, none) == pytest.approx(rest + 2 * shared + alone)
    cached = {**none, **{s.name: True for s in trains[:3]}}  # one shared run left, then the fifth
    assert runner.expected_wall_s(study, cached) == pytest.approx(rest + shared + alone)
