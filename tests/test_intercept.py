"""Interception of objects on the moving belt: prediction, and the hand meeting the object."""

from __future__ import annotations

import numpy as np
import pytest

from r2s2r.behavior.intercept import BeltMotion, GraspTiming, grasp_track
from r2s2r.geometry import inv_T, make_T
from r2s2r.world.conditions import Condition
from r2s2r.world.engine import home_command


@pytest.fixture(scope="module")
def cell(small_cell):
    return small_cell


def test_belt_motion_predicts_the_riding_object(cell):
    cell.reset(Condition("belt_speed", "red_cube", 0.15, -0.2, 0.03, 0.5), np.random.default_rng(0))
    motion = BeltMotion.from_cell(cell)
    np.testing.assert_allclose(np.linalg.norm(motion.velocity), 0.15 * cell.params.conveyor.speed_scale)
    for _ in range(10):
        cell.step(home_command())
    T_pred, T_true = motion.pose(cell.time), cell.engine.object_pose()
    assert np.linalg.norm(T_pred[:3, 3] - T_true[:3, 3]) < 0.003
    np.testing.assert_allclose(T_pred[:3, :3], T_true[:3, :3], atol=1e-3)
    # the object reaches the belt's end at the predicted time (half the length from the start)
    assert motion.end_time == pytest.approx((cell.params.conveyor.length / 2 + 0.2) / 0.15, rel=1e-3)


def test_grasp_track_meets_the_object_at_belt_speed():
    T0 = make_T((0.5, 0.2, 0.75), (1, 0, 0, 0))
    motion = BeltMotion(T0, np.array([0.0, -0.12, 0.0]), 0.0, 20.0)
    T_object_hand = make_T((0.0, 0.0, 0.08), (0, 1, 0, 0))  # palm down above the centre
    timing = GraspTiming()
    dt = 0.01
    track = grasp_track(motion, T_object_hand, 2.0, timing, dt)
    rel = np.array([(inv_T(motion.pose(t)) @ T)[:3, 3] for t, T in zip(track.times, track.poses, strict=True)])
    at_grasp = int(round(timing.descend / dt))
    # pre-grasp: backed off along the approach, half a descent's belt travel ahead (it speeds up)
    ahead = motion.velocity * timing.descend / 2
    np.testing.assert_allclose(rel[0], T_object_hand[:3, 3] + [0, 0, timing.standoff] + ahead, atol=1e-9)
    n_close = int(timing.close / dt)
    np.testing.assert_allclose(
        rel[at_grasp : at_grasp + n_close], np.tile(T_object_hand[:3, 3], (n_close, 1)), atol=1e-9
    )
    v = np.diff(track.poses[:, :3, 3], axis=0) / dt
    np.testing.assert_allclose(v[0], 0.0, atol=1e-3)  # starts at rest ...
    np.testing.assert_allclose(v[at_grasp], motion.velocity, atol=2e-3)  # ... moves with the belt to grasp
    np.testing.assert_allclose(v[-1], 0.0, atol=2e-3)  # ... and ends the lift at rest
    assert track.poses[-1][2, 3] - track.poses[at_grasp][2, 3] == pytest.approx(timing.lift_height, abs=1e-3)
    assert list(track.phase[[0, at_grasp + 1, -1]]) == [0, 1, 2] and track.closure[-1] == 1.0


@pytest.mark.parametrize("speed", [0.05, 0.10, 0.18])
def test_interception_meets_the_object_at_several_belt_speeds(cell, planner, speed):
    """Executed under physics, the hand arrives at the planned grasp pose relative to the moving
    object (before the fingers touch it) within a centimetre, at slow and fast belt speeds."""
    cond = Condition("belt_speed", "red_cylinder", speed, -0.22, 0.02, 0.0)
    cell.reset(cond, np.random.default_rng(1))
    plan = planner.plan(cell, cond, np.random.default_rng(2))
    m, d = cell.engine.model, cell.engine.data
    hand = m.body("right_hand").id
    step = 0
    while cell.time < plan.t_grasp - 1e-9:
        cell.step(plan.act(cell, step))
        step += 1
    T_world_hand = make_T(d.xpos[hand], d.xquat[hand])
    T_object_hand = inv_T(cell.engine.object_pose()) @ T_world_hand
    err = np.linalg.norm(T_object_hand[:3, 3] - plan.grasp.T_object_hand[:3, 3])
    assert err < 0.01, f"hand {err * 1000:.1f} mm from the planned grasp at {speed} m/s"
