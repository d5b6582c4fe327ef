"""Teleoperated demonstrations on the lab twin: success, limits, replay, resume, parallel collection."""

import dataclasses

import numpy as np
import pytest

from r2s2r.behavior.demos import STEREO_EXTRAS, DemoConfig, collect_demos
from r2s2r.data import Dataset, check_dataset
from r2s2r.lab.twin import LabTwin
from r2s2r.world import rizon
from r2s2r.world.cell import CellConfig
from r2s2r.world.conditions import Condition
from r2s2r.world.hand import hand_joint_ranges
from r2s2r.world.objects import CATALOG

# One small camera keeps these tests fast; the operator never looks at the policy cameras.
CELL = CellConfig(image_size=16, cameras=("head_left",))


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos") / "real"
    lab = LabTwin(3, CELL)
    stats = collect_demos(lab, out, DemoConfig(n=20, seed=1))
    return out, stats


@pytest.mark.slow
def test_twenty_teleop_demos_mostly_succeed(demos):
    out, stats = demos
    print(f"attempt success rate {stats.success_rate:.0%} ({stats.demos}/{stats.attempts}), failures {stats.failures}")
    assert stats.demos == 20
    assert stats.success_rate >= 0.6
    check_dataset(out)
    with Dataset(out) as ds:
        assert len(ds) == 20
        provs = [ds.provenance(i) for i in range(len(ds))]
        assert all(p.source == "real" and p.behavior == "teleop" and p.success for p in provs)
        assert all(p.condition["kind"] == "nominal" and not CATALOG[p.condition["object"]].novel for p in provs)
        assert sum(p.attempts for p in provs) == stats.attempts  # attempts are kept per demonstration
        assert len({p.key for p in provs}) == 20


@pytest.mark.slow
def test_recorded_actions_respect_joint_limits(demos):
    out, _ = demos
    lo = np.r_[rizon.JOINT_RANGE[:, 0], hand_joint_ranges()[:, 0]]
    hi = np.r_[rizon.JOINT_RANGE[:, 1], hand_joint_ranges()[:, 1]]
    with Dataset(out) as ds:
        for ep in ds.episodes():
            assert np.all(ep.actions >= lo - 1e-6) and np.all(ep.actions <= hi + 1e-6)
            assert 40 < ep.num_samples < 250
            assert np.all(np.isfinite(ep.obs["proprio"]))


@pytest.mark.slow
def test_recorded_actions_are_what_reached_the_robot_and_within_rated_speed(demos):
    # the teleoperation system limits its commands, so the safety filter never changes one, and the
    # recorded action (the command after the filter) steps no faster than the rated joint speeds
    out, stats = demos
    assert stats.safety == {}
    max_step = np.asarray(rizon.VELOCITY_LIMIT) * CELL.control.control_dt
    with Dataset(out) as ds:
        for ep in ds.episodes():
            steps = np.abs(np.diff(ep.actions[:, :7], axis=0))
            assert np.all(steps <= max_step + 1e-6)
            first = np.abs(ep.actions[0, :7] - ep.obs["proprio"][0, :7])
            assert np.all(first <= max_step + 1e-3)


@pytest.mark.slow
def test_replaying_recorded_actions_reproduces_the_success(demos):
    out, _ = demos
    lab = LabTwin(3, CELL)
    with Dataset(out) as ds:
        for i in (0, 7):
            ep = ds.episode(i)
            p = ep.provenance
            cond = Condition(**{**p.condition, "light_tint": tuple(p.condition["light_tint"])})
            first = lab.reset(cond, p.seed)
            np.testing.assert_array_equal(first["head_left"], ep.obs["head_left"][0])
            for a in ep.actions:
                lab.act(a)
            assert lab.verdict().success


@pytest.mark.slow
def test_collection_resumes_and_parallel_workers_give_the_same_dataset(tmp_path):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    lab = LabTwin(4, CELL)
    collect_demos(lab, serial, DemoConfig(n=2, seed=5))
    collect_demos(lab, serial, DemoConfig(n=3, seed=5))  # resume: one more
    collect_demos(LabTwin(4, CELL), parallel, DemoConfig(n=3, seed=5, workers=2), lab_seed=4)
    with Dataset(serial) as a, Dataset(parallel) as b:
        assert len(a) == len(b) == 3
        for i in range(3):
            ea, eb = a.episode(i), b.episode(i)
            assert ea.provenance == eb.provenance
            np.testing.assert_array_equal(ea.actions, eb.actions)
            np.testing.assert_array_equal(ea.obs["head_left"], eb.obs["head_left"])
            for key in STEREO_EXTRAS.values():  # the first-frame stereo pair, at full resolution
                assert ea.extras[key].shape == (480, 640, 3)
                np.testing.assert_array_equal(ea.extras[key], eb.extras[key])


def test_bad_demo_config_is_rejected():
    from r2s2r.errors import R2S2RError

    with pytest.raises(R2S2RError, match="--n"):
        DemoConfig(n=0)
    with pytest.raises(R2S2RError, match="--workers"):
        DemoConfig(workers=0)
    assert dataclasses.is_dataclass(DemoConfig())
