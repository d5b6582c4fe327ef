"""The planner behaviour: planned episodes succeed under contact physics, go through the dataset
store, are reproducible, collision-free and within the arm's limits, and failures name a reason."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from r2s2r.behavior.collision import CellCollision, CollisionConfig
from r2s2r.behavior.intercept import BeltMotion
from r2s2r.behavior.planner import PlannerConfig
from r2s2r.data import Dataset, DatasetWriter, check_dataset, check_episode
from r2s2r.errors import ConfigError, PlanningFailed
from r2s2r.generate.rollout import rollout, sim_features
from r2s2r.world import rizon
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import Condition
from r2s2r.world.hand import hand_grasp_pose
from r2s2r.world.params import Pose, WorldParams

NOMINAL = Condition("nominal", "red_cube", 0.08, -0.2, 0.03, 0.7)
FAST = Condition("belt_speed", "blue_cylinder", 0.17, -0.15, -0.04, -1.2)


@pytest.fixture(scope="module")
def cell(small_cell):
    return small_cell


@pytest.fixture(scope="module")
def episodes(cell, planner):
    return {name: rollout(cell, planner, cond, np.random.default_rng(11), {"seed": 11, "key": k})
            for k, (name, cond) in enumerate((("nominal", NOMINAL), ("fast", FAST)))}  # fmt: skip


@pytest.mark.parametrize("name", ["nominal", "fast"])
def test_a_planned_episode_succeeds(episodes, cell, name):
    res = episodes[name]
    assert res.success, res.failure
    assert res.seconds["plan"] < 10.0  # generous: the first plan of an object also samples its grasps
    ep = res.episode
    check_episode(ep, sim_features(cell))
    assert ep.provenance.behavior == "planner" and ep.provenance.success
    info = ep.datagen_info
    assert info["target_pose"].shape == (ep.num_samples, 4, 4)
    grasp = info["subtask_term_signals"]["grasp"]
    assert grasp[0] == 0 and grasp[-1] == 1 and np.all(np.diff(grasp) >= 0)
    lo = np.r_[rizon.JOINT_RANGE[:, 0], np.full(20, -np.inf)]
    hi = np.r_[rizon.JOINT_RANGE[:, 1], np.full(20, np.inf)]
    assert np.all(ep.actions >= lo) and np.all(ep.actions <= hi)


def test_planned_episodes_go_through_the_dataset_store(episodes, cell, tmp_path):
    with DatasetWriter(tmp_path / "planned", sim_features(cell), control_rate_hz=10.0) as w:
        for res in episodes.values():
            w.add(res.episode)
    check_dataset(tmp_path / "planned")
    with Dataset(tmp_path / "planned") as ds:
        assert len(ds) == 2
        ep = ds.episode(1)
        assert ep.provenance.behavior == "planner" and ep.provenance.condition["belt_speed"] == FAST.belt_speed
        np.testing.assert_array_equal(ep.actions, episodes["fast"].episode.actions)


def test_same_seed_same_plan(cell, planner):
    plans = []
    for _ in range(2):
        cell.reset(NOMINAL, np.random.default_rng(0))
        plans.append(planner.plan(cell, NOMINAL, np.random.default_rng(4)))
    assert plans[0].commands.tobytes() == plans[1].commands.tobytes()


def test_planned_motion_is_collision_free_and_within_the_speed_limits(cell, planner):
    cell.reset(FAST, np.random.default_rng(0))
    plan = planner.plan(cell, FAST, np.random.default_rng(5))
    motion = BeltMotion.from_cell(cell)
    checker = CellCollision(cell.engine.model, cell.engine.data, CollisionConfig(margin=0.0))
    dt = cell.config.control.control_dt
    q = np.vstack([cell.engine.joint_positions("right")[:7], plan.q_plan])
    assert np.all(np.abs(np.diff(q, axis=0)) <= np.asarray(rizon.VELOCITY_LIMIT) * dt + 1e-9)
    # the approach (until the descent starts) and the carry (after the lift), at 0.005 rad
    pre, held = hand_grasp_pose(plan.grasp.kind, 0.0), np.linalg.inv(plan.grasp.T_object_hand)
    closed = hand_grasp_pose(plan.grasp.kind, 1.0)
    times = dt * np.arange(len(q))
    checked = {"approach": 0, "carry": 0}
    for k in range(len(q) - 1):
        if times[k + 1] <= plan.phases["descend"]:
            kw, phase = {"q_hand": pre, "object_pose": motion.pose(times[k + 1])}, "approach"
        elif times[k] >= plan.phases["carry"] and times[k + 1] <= plan.phases["release"]:
            kw, phase = {"q_hand": closed, "held": held}, "carry"
        else:
            continue
        n = max(1, int(np.ceil(np.max(np.abs(q[k + 1] - q[k])) / 0.005)))
        for j in range(n + 1):
            assert checker.free(q[k] + j / n * (q[k + 1] - q[k]), **kw), (k, checker.collisions(q[k], **kw))
        checked[phase] += 1
    assert min(checked.values()) >= 5, checked  # both phases moved over several control steps


def test_an_unreachable_bin_is_a_planning_failure(planner):
    far = WorldParams.nominal()
    bins = tuple(dataclasses.replace(b, pose=Pose((2.5, -0.58, 0.62))) if b.color == "red" else b for b in far.bins)
    cell = SimCell(far.replace(bins=bins), CellConfig(image_size=16, cameras=("head_left",)))
    res = rollout(cell, planner, NOMINAL, np.random.default_rng(0), {"seed": 0})
    cell.close()
    assert (res.success, res.failure, res.episode) == (False, "plan:release_unreachable", None)
    with pytest.raises(ConfigError, match="speed_fraction"):
        PlannerConfig(speed_fraction=1.5)
    assert issubclass(PlanningFailed, Exception)


def test_generate_one_shows_a_planned_episode(tmp_path, capsys):
    import cv2

    from r2s2r.cli import main

    world = WorldParams.nominal().save(tmp_path / "world.json")
    out = tmp_path / "planned.mp4"
    args = ["generate-one", "--behavior", "planner", "--world", str(world), "--seed", "2", "--video", str(out)]
    assert main(args) == 0
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "planner episode, seed 2, nominal: success" in err
    cap = cv2.VideoCapture(str(out))
    assert cap.read()[0] and int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) > 20
