"""The cell compiles, has the Rizon 4S kinematics of the spec sheet, and is physically sane."""

import mujoco
import numpy as np
import pytest

from r2s2r.lab.asbuilt import draw_as_built
from r2s2r.lab.real_cell import KinematicCalibration
from r2s2r.world import rizon
from r2s2r.world.engine import LEFT_HOLD_Q, CellEngine, home_command
from r2s2r.world.hand import HAND_JOINTS
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import WorldParams
from r2s2r.world.rendering import lens_of
from r2s2r.world.scene import actuator_names, build_spec

# The spec sheet of the issue, written out independently of r2s2r.world.rizon.
FACTS = [  # offset in parent, rotation about z before the joint (deg), joint axis
    ((0, 0, 0.155), 180, "z"),
    ((0, 0.03, 0.21), 0, "y"),
    ((0, 0.035, 0.205), 0, "z"),
    ((-0.02, -0.03, 0.19), 180, "y"),
    ((-0.02, 0.025, 0.195), 180, "z"),
    ((0, 0.03, 0.19), 0, "y"),
]


def _rot(axis: str, a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return {
        "x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
        "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
        "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]),
    }[axis]


def _facts_fk(q: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    for (off, rz, axis), qi in zip(FACTS, q[:6], strict=True):
        step = np.eye(4)
        step[:3, :3] = _rot("z", np.radians(rz)) @ _rot(axis, qi)
        step[:3, 3] = off
        T = T @ step
    step = np.eye(4)  # link7: quat wxyz (0.707107, 0, -0.707107, 0) = -90 deg about y, axis z
    step[:3, :3] = _rot("y", -np.pi / 2) @ _rot("z", q[6])
    step[:3, 3] = (-0.015, 0.073, 0.11)
    flange = np.eye(4)
    flange[:3, 3] = rizon.FLANGE_POS
    return T @ step @ flange


def test_nominal_cell_compiles_with_every_object(nominal):
    for name in CATALOG:
        model = build_spec(nominal, name).compile()
        assert model.nu == 54 and model.ncam == 4
        assert [model.actuator(i).name for i in range(model.nu)] == actuator_names()
        assert model.opt.timestep == nominal.physics.timestep


@pytest.mark.parametrize("seed", range(20))
def test_random_world_params_compile_and_settle(nominal, seed):
    params = draw_as_built(nominal, np.random.default_rng(seed))
    model = build_spec(WorldParams.from_dict(params.to_dict()), "blue_cylinder").compile()
    data = mujoco.MjData(model)
    mujoco.mj_step(model, data, nstep=50)
    assert np.all(np.isfinite(data.qpos))


def test_forward_kinematics_match_the_spec_sheet(nominal, rng):
    model = build_spec(nominal, "red_cube").compile()
    data = mujoco.MjData(model)
    adr = [model.joint(f"right_joint{i + 1}").qposadr[0] for i in range(7)]
    base = model.body("right_base").id
    flange = model.body("right_flange").id
    for _ in range(25):
        q = rng.uniform(rizon.JOINT_RANGE[:, 0], rizon.JOINT_RANGE[:, 1])
        data.qpos[adr] = q
        mujoco.mj_kinematics(model, data)
        T_world_base = np.eye(4)
        T_world_base[:3, :3], T_world_base[:3, 3] = data.xmat[base].reshape(3, 3), data.xpos[base]
        T_world_flange = np.eye(4)
        T_world_flange[:3, :3], T_world_flange[:3, 3] = data.xmat[flange].reshape(3, 3), data.xpos[flange]
        T_base_flange = np.linalg.inv(T_world_base) @ T_world_flange
        np.testing.assert_allclose(T_base_flange, _facts_fk(q), atol=1e-5)
        np.testing.assert_allclose(rizon.forward_kinematics(q), _facts_fk(q), atol=1e-5)


def test_compiled_arm_matches_the_drive_facts(nominal):
    model = build_spec(nominal, "red_cube").compile()
    for i in range(7):
        j, a = model.joint(f"right_joint{i + 1}"), model.actuator(f"right_joint{i + 1}")
        np.testing.assert_allclose(j.range, rizon.JOINT_RANGE[i])
        assert a.gainprm[0] == pytest.approx(rizon.KP[i]) and a.biasprm[2] == pytest.approx(-rizon.KV[i])
        np.testing.assert_allclose(a.forcerange, [-rizon.TORQUE_LIMIT[i], rizon.TORQUE_LIMIT[i]])
        assert model.body(f"right_link{i + 1}").mass[0] == pytest.approx(rizon.LINK_MASS[i])
    assert len(HAND_JOINTS) == 20


def test_joint_zero_offsets_shift_the_physical_pose(nominal, rng):
    params = draw_as_built(nominal, rng)
    arm = params.right_arm
    model = build_spec(params, "red_cube").compile()
    data = mujoco.MjData(model)
    q = np.asarray(rizon.HOME_Q)
    data.qpos[[model.joint(f"right_joint{i + 1}").qposadr[0] for i in range(7)]] = q
    mujoco.mj_kinematics(model, data)
    fk = KinematicCalibration("right", arm.link_pos, arm.flange_pos, arm.joint_zero).forward(q)
    T_world_base = np.eye(4)
    T_world_base[:3, :3] = data.xmat[model.body("right_base").id].reshape(3, 3)
    T_world_base[:3, 3] = data.xpos[model.body("right_base").id]
    np.testing.assert_allclose((T_world_base @ fk)[:3, 3], data.xpos[model.body("right_flange").id], atol=1e-6)
    assert np.linalg.norm(fk[:3, 3] - rizon.forward_kinematics(q)[:3, 3]) > 1e-4  # the errors are visible


def test_no_robot_contacts_at_home_and_left_camera_sees_the_pick_zone(nominal):
    engine = CellEngine(nominal)
    engine.load("red_cube")
    engine.park_object()
    mujoco.mj_forward(engine.model, engine.data)
    robot = [g for g in range(engine.model.ngeom) if engine.model.geom(g).name.startswith(("right_", "left_"))]
    touching = [c for c in engine.data.contact[: engine.data.ncon] if c.geom1 in robot or c.geom2 in robot]
    assert touching == []
    np.testing.assert_allclose(engine.joint_positions("left")[:7], LEFT_HOLD_Q)
    np.testing.assert_allclose(engine.joint_positions("right"), home_command())
    cam = engine.model.camera("left_wrist").id
    pick = np.array([0.52, -0.05, 0.75])
    R_mj = engine.data.cam_xmat[cam].reshape(3, 3)
    p_cv = np.diag([1, -1, -1]) @ R_mj.T @ (pick - engine.data.cam_xpos[cam])
    uv = lens_of(nominal.camera("left_wrist")).project(p_cv[None])[0]
    assert 0.2 * 480 < uv[0] < 0.8 * 480 and 0.2 * 480 < uv[1] < 0.8 * 480
