"""The shared rollout of a simulated behaviour: recording, failure reasons, determinism, video."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from r2s2r.data import check_episode
from r2s2r.generate import PlanningFailed, rollout, sim_features
from r2s2r.generate.one import generate_one
from r2s2r.world import rizon
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import sample_condition
from r2s2r.world.engine import home_command
from r2s2r.world.params import WorldParams


class _Plan:
    source_demo = 7

    def __init__(self, n: int) -> None:
        self.n = n

    def act(self, cell, step):
        if step >= self.n:
            return None
        q = home_command()
        q[0] += 0.01 * step  # a slow sweep of joint 1
        return q

    def info(self, step):
        return {"target_pose": np.eye(4) * (step + 1), "subtask_term_signals": {"grasp": np.int8(step > 3)}}


class _Sweep:
    name = "sweep"

    def plan(self, cell, condition, rng):
        return _Plan(int(rng.integers(5, 8)))


class _NoPlan:
    name = "noplan"

    def plan(self, cell, condition, rng):
        raise PlanningFailed("unreachable", "test")


@pytest.fixture(scope="module")
def cell():
    c = SimCell(WorldParams.nominal(), CellConfig(image_size=32, max_duration=1.5))
    yield c
    c.close()


def _run(cell, seed, **kw):
    cond = sample_condition("nominal", np.random.default_rng(seed))
    return rollout(cell, _Sweep(), cond, np.random.default_rng(seed), {"seed": seed, "key": 3}, **kw)


def test_failed_rollout_is_not_recorded_unless_asked(cell):
    res = _run(cell, 0)
    assert not res.success and res.failure == "missed" and res.episode is None
    assert res.steps == 15  # 1.5 s at 10 Hz, then the judge calls it


def test_recorded_episode_fits_the_sim_features(cell):
    res = _run(cell, 1, keep_failures=True)
    ep = res.episode
    check_episode(ep, sim_features(cell))
    assert ep.num_samples == res.steps
    info = ep.datagen_info
    assert info["eef_pose"].shape == (res.steps, 4, 4) and info["object_pose"].shape == (res.steps, 4, 4)
    assert info["subtask_term_signals"]["grasp"].tolist()[:6] == [0, 0, 0, 0, 1, 1]
    np.testing.assert_allclose(info["target_pose"][2], 3 * np.eye(4))
    # the held action after the plan ends repeats its last target
    n = next(k for k in range(res.steps) if k > 0 and np.array_equal(ep.actions[k], ep.actions[k - 1]))
    assert np.all(ep.actions[n:] == ep.actions[n - 1])
    # the recorded eef pose is the flange on the arm's own kinematics at the recorded joints
    arm = cell.params.right_arm
    from r2s2r.geometry import make_T

    T = make_T(arm.base.pos, arm.base.quat) @ rizon.forward_kinematics(
        ep.obs["proprio"][-1, :7].astype(float), arm.link_pos, arm.flange_pos, arm.joint_zero
    )
    np.testing.assert_allclose(info["eef_pose"][-1], T, atol=1e-5)
    p = ep.provenance
    assert (p.source, p.behavior, p.key, p.source_demo, p.failure) == ("sim", "sweep", 3, 7, "missed")
    assert p.world_hash == cell.params.content_hash()


def test_same_seed_same_bytes(cell):
    a, b = _run(cell, 2, keep_failures=True).episode, _run(cell, 2, keep_failures=True).episode
    for k, v in a.arrays().items():
        assert v.tobytes() == b.arrays()[k].tobytes(), k
    c = _run(cell, 3, keep_failures=True).episode
    assert a.obs["head_left"].tobytes() != c.obs["head_left"].tobytes()


def test_planning_failure_is_a_reason(cell):
    cond = sample_condition("nominal", np.random.default_rng(0))
    res = rollout(cell, _NoPlan(), cond, np.random.default_rng(0), {"seed": 0})
    assert (res.success, res.failure, res.steps, res.episode) == (False, "plan:unreachable", 0, None)


def test_generate_one_writes_a_video(tmp_path):
    out = tmp_path / "one.mp4"
    res = generate_one(_Sweep(), WorldParams.nominal(), "nominal", 0, out, CellConfig(image_size=32, max_duration=1.0))
    cap = cv2.VideoCapture(str(out))
    frames = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    ok, img = cap.read()
    assert ok and img.shape == (240, 640, 3) and frames == res.steps == 10
    assert not list(tmp_path.glob(".*tmp*"))


def test_sim_episodes_carry_the_object_state_truth(cell):
    from r2s2r.data.object_state import OBJECT_STATE, POSITION, SPEED, WHICH, YAW
    from r2s2r.geometry import inv_T, make_T
    from r2s2r.world.objects import KNOWN_OBJECTS

    res = _run(cell, 1, keep_failures=True)
    ep = res.episode
    y = ep.obs[OBJECT_STATE]
    assert y.shape == (res.steps, 14) and np.isfinite(y).all()
    cond = ep.provenance.condition
    c = cell.params.conveyor
    T_belt = inv_T(make_T(c.pose.pos, c.pose.quat))
    truth = np.einsum("ij,tj->ti", T_belt, np.c_[ep.datagen_info["object_pose"][:, :3, 3], np.ones(res.steps)])
    np.testing.assert_allclose(y[:, POSITION], truth[:, :3], atol=1e-5)
    assert abs(y[0, 0] - cond["start_x"]) < 0.01 and abs(y[0, 1] - cond["lateral"]) < 0.01
    np.testing.assert_allclose(y[:, SPEED], c.speed_scale * cond["belt_speed"], rtol=1e-5)
    assert KNOWN_OBJECTS[int(np.argmax(y[0, WHICH]))] == cond["object"] and y[0, WHICH].sum() == 1
    assert np.allclose(np.linalg.norm(y[:, YAW], axis=1), 1.0, atol=1e-5) or np.allclose(y[:, YAW], 0.0)
