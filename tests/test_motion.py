"""Motion planning pieces: IK with restarts, collision checks of the cell, RRT-Connect, timing."""

from __future__ import annotations

import numpy as np
import pytest

from r2s2r.behavior.collision import CellCollision, CollisionConfig, coarse_to_fine
from r2s2r.behavior.ik import ArmIK, IKConfig
from r2s2r.behavior.rrt import rrt_connect, shortcut, time_parameterize
from r2s2r.errors import ConfigError
from r2s2r.geometry import make_T, rotation_angle
from r2s2r.world import rizon
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import Condition
from r2s2r.world.engine import home_command
from r2s2r.world.hand import hand_open_pose
from r2s2r.world.params import WorldParams

LO, HI = rizon.JOINT_RANGE[:, 0] + 0.02, rizon.JOINT_RANGE[:, 1] - 0.02


@pytest.fixture(scope="module")
def cell():
    c = SimCell(WorldParams.nominal(), CellConfig(image_size=16, cameras=("head_left",)))
    c.reset(Condition("nominal", "red_cube", 0.05, -0.2, 0.0, 0.0), np.random.default_rng(0))
    yield c
    c.close()


@pytest.fixture(scope="module")
def checker(cell):
    return CellCollision(cell.engine.model, cell.engine.data, CollisionConfig(resolution=0.005))


def test_ik_reaches_random_reachable_poses_or_reports_unreachable():
    ik = ArmIK.from_kinematics(WorldParams.nominal().right_arm, None, IKConfig(max_iters=80, stall_iters=8))
    rng = np.random.default_rng(5)
    found = 0
    for _ in range(25):
        q_true = rng.uniform(LO, HI)
        T = ik.forward(q_true)
        res = ik.solve_restarts(T, [np.asarray(rizon.HOME_Q)], rng, restarts=6)
        if res is None:
            continue
        found += 1
        T_got = ik.forward(res.q)
        assert np.linalg.norm(T_got[:3, 3] - T[:3, 3]) < 1e-3
        assert rotation_angle(T_got[:3, :3], T[:3, :3]) < np.radians(0.5)
        assert np.all(res.q >= rizon.JOINT_RANGE[:, 0] - 1e-6) and np.all(res.q <= rizon.JOINT_RANGE[:, 1] + 1e-6)
    assert found >= 22, f"only {found}/25 reachable poses solved"
    far = make_T((2.0, 0.0, 0.5), (1, 0, 0, 0))
    assert ik.solve_restarts(far, [np.asarray(rizon.HOME_Q)], rng, restarts=2) is None


def test_collision_checks_name_what_touches(cell, checker):
    home = home_command()
    assert checker.free(home[:7], home[7:], object_pose=cell.engine.object_pose())
    # palm down, its surface 5 mm into the belt, beside the object
    params = cell.params
    ik = ArmIK.from_kinematics(params.right_arm)
    T_world_base = make_T(params.right_arm.base.pos, params.right_arm.base.quat)
    T = np.eye(4)
    T[:3, :3] = np.diag([1.0, -1.0, -1.0])
    T[:3, 3] = [0.52, -0.1, params.conveyor.pose.pos[2] + 0.03 - 0.005]  # palm surface at z = +3 cm
    res = ik.solve_restarts(np.linalg.inv(T_world_base) @ T, [np.array([0.5, -0.8, 0.1, 2.0, -0.25, 1.3, 0.8])],
                            np.random.default_rng(0))  # fmt: skip
    assert res is not None
    hits = checker.collisions(res.q, home[7:])
    assert any("belt_surface" in (a, b) for a, b, _ in hits) and all(d < checker.config.margin for _, _, d in hits)
    allowed = checker.collisions(res.q, home[7:], allow=("hand_belt",))
    assert not any("belt_surface" in (a, b) for a, b, _ in allowed)
    # a held object is carried with the hand: where the hand is free, the object may not be
    T_hand_object = make_T((0.0, 0.0, -0.06), (1, 0, 0, 0))  # behind the hand, inside the wrist
    hits = checker.collisions(home[:7], home[7:], held=T_hand_object)
    assert hits and all("object" in (a, b) and ("right_link" in a + b) for a, b, _ in hits)
    assert checker.free(home[:7], home[7:], held=make_T((0.06, -0.012, 0.055), (1, 0, 0, 0)))  # in the palm
    with pytest.raises(ConfigError, match="allowances"):
        checker.free(home[:7], allow=("everything",))
    assert coarse_to_fine(4) == [0, 4, 2, 1, 3] and sorted(coarse_to_fine(7)) == list(range(8))


def test_rrt_connect_finds_a_path_that_is_free_at_fine_resolution(cell, checker):
    hand = hand_open_pose()

    def motion_free(a, b):
        return checker.motion_free(a, b, q_hand=hand)

    rng = np.random.default_rng(3)
    pairs = []  # free start and goal whose straight motion is blocked
    while len(pairs) < 2:
        q_a, q_b = rng.uniform(LO, HI), rng.uniform(LO, HI)
        if checker.free(q_a, hand) and checker.free(q_b, hand) and not motion_free(q_a, q_b):
            pairs.append((q_a, q_b))
    for q_a, goal in pairs:
        path = rrt_connect(q_a, goal, motion_free, LO, HI, rng)
        assert path is not None
        path = shortcut(path, motion_free, rng, 40)
        np.testing.assert_array_equal(path[0], q_a)
        np.testing.assert_array_equal(path[-1], goal)
        for a, b in zip(path[:-1], path[1:], strict=True):
            n = int(np.ceil(np.max(np.abs(b - a)) / 0.002))  # finer than the planner's checks
            assert all(checker.free(a + k / n * (b - a), hand) for k in range(n + 1))


def test_rrt_connect_goes_around_an_obstacle():
    """A 2-D toy: a wall between start and goal with a gap; the path must pass the gap."""
    lo, hi = np.array([-1.0, -1.0]), np.array([1.0, 1.0])

    def free(q):
        return not (abs(q[0]) < 0.1 and q[1] < 0.6)

    def motion_free(a, b):
        n = int(np.ceil(np.max(np.abs(b - a)) / 0.005))
        return all(free(a + k / n * (b - a)) for k in range(n + 1))

    rng = np.random.default_rng(0)
    path = rrt_connect(np.array([-0.5, -0.5]), np.array([0.5, -0.5]), motion_free, lo, hi, rng)
    assert path is not None and max(q[1] for q in path) > 0.6
    short = shortcut(path, motion_free, rng, 100)
    assert len(short) <= len(path) and all(motion_free(a, b) for a, b in zip(short[:-1], short[1:], strict=True))


def test_time_parameterisation_respects_the_limits():
    path = [np.zeros(7), np.array([1.0, 0.5, 0, 0, 0, 0, 0]), np.array([1.0, 0.5, -2.0, 0, 0.3, 0, 0])]
    vmax = np.asarray(rizon.VELOCITY_LIMIT) * 0.7
    amax = np.full(7, 6.0)
    traj = time_parameterize(path, vmax, amax)
    dt = 1e-3
    t = np.arange(0.0, traj.duration + dt, dt)
    q = np.array([traj.sample(x) for x in t])
    v = np.diff(q, axis=0) / dt
    a = np.diff(v, axis=0) / dt
    assert np.all(np.abs(v) <= vmax * 1.01) and np.all(np.abs(a) <= amax * 1.05)
    np.testing.assert_allclose(q[0], path[0])
    np.testing.assert_allclose(q[-1], path[-1], atol=1e-9)
    np.testing.assert_allclose(traj.sample(traj.durations[0]), path[1], atol=1e-9)  # passes the waypoint
    np.testing.assert_allclose(traj.velocity(0.0), 0.0)  # rest to rest
    np.testing.assert_allclose(traj.velocity(traj.duration), 0.0)
    # time-optimal per segment: one joint saturates its velocity or acceleration limit
    peak_v = np.max(np.abs(v[: int(traj.durations[0] / dt) - 2]), axis=0)
    assert np.max(peak_v / vmax) > 0.97 or np.max(np.abs(a) / amax) > 0.97
    with pytest.raises(ConfigError):
        time_parameterize(path, -vmax, amax)
