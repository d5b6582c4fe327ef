"""The lab twin: hidden as-built parameters behind sensors, measurements, and the safety filter."""

import dataclasses

import mujoco
import numpy as np
import pytest

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.lab.real_cell import EncoderRecord, RealCell
from r2s2r.lab.safety import SafetyFilter
from r2s2r.lab.twin import LabTwin, _hidden_params
from r2s2r.world import rizon
from r2s2r.world.conditions import sample_condition
from r2s2r.world.engine import LEFT_HOLD_Q, CellEngine, home_command
from r2s2r.world.hand import HAND_JOINTS, hand_open_pose
from r2s2r.world.params import WorldParams
from r2s2r.world.scene import build_spec

from .helpers import site_ik


@pytest.fixture(scope="module")
def lab() -> LabTwin:
    return LabTwin(11)


def test_two_seeds_differ_in_hidden_params_but_share_the_interface():
    a, b = LabTwin(1), LabTwin(2)
    assert isinstance(a, RealCell) and isinstance(b, RealCell)
    ta, tb = _hidden_params(a), _hidden_params(b)
    assert ta.content_hash() != tb.content_hash()
    assert ta.right_arm.kp != tb.right_arm.kp and ta.cameras[0].lens.fx != tb.cameras[0].lens.fx
    assert _hidden_params(LabTwin(1)) == ta  # same seed, same cell
    cond = sample_condition("nominal", np.random.default_rng(0))
    oa, ob = a.reset(cond, 0), b.reset(cond, 0)
    assert {k: (v.shape, v.dtype) for k, v in oa.items()} == {k: (v.shape, v.dtype) for k, v in ob.items()}
    assert a.cameras == b.cameras and a.policy_cameras == b.policy_cameras
    assert oa["head_left"].tobytes() != ob["head_left"].tobytes()


def test_as_built_parameters_differ_from_the_spec_sheet_by_realistic_amounts(nominal):
    for seed in range(5):
        truth = _hidden_params(LabTwin(seed))
        for cam, spec in zip(truth.cameras, nominal.cameras, strict=True):
            assert 0.002 < abs(cam.lens.fx / spec.lens.fx - 1) or abs(cam.lens.cx - spec.lens.cx) > 0.5
            assert abs(cam.lens.fx / spec.lens.fx - 1) <= 0.04 + 1e-9
            assert cam.effects.blur_sigma > 0 and cam.effects.noise_std > 0
            assert np.linalg.norm(np.subtract(cam.pose.pos, spec.pose.pos)) < 0.05
        arm = truth.right_arm
        assert 0.02 <= arm.delay <= 0.04
        assert all(0.7 <= k / k0 <= 1.3 for k, k0 in zip(arm.kp, rizon.KP, strict=True))
        assert max(abs(z) for z in arm.joint_zero) < np.radians(0.6)
        assert 0.95 <= truth.conveyor.speed_scale <= 1.05
        assert truth.physics.timestep < nominal.physics.timestep
        assert truth.render.shadowsize > 0


def test_hidden_parameters_are_not_reachable_through_the_public_api(lab):
    forbidden = (WorldParams, mujoco.MjModel, mujoco.MjData, CellEngine, SafetyFilter)
    truth = _hidden_params(lab)
    public = [name for name in dir(lab) if not name.startswith("_")]
    assert "cameras" in public and "reset" in public
    for name in public:
        value = getattr(lab, name)
        assert not isinstance(value, forbidden), name
        if not callable(value):
            assert isinstance(value, (int, float, str, tuple)), name
    assert lab.factory_calibration("right").link_pos != truth.right_arm.link_pos
    assert lab.weigh("red_cube") != truth.object("red_cube").mass
    holders = [k for k, v in vars(lab).items() if isinstance(v, forbidden)]
    assert holders and all(k.startswith("_LabTwin__") for k in holders)  # only name-mangled private state


def test_factory_calibration_is_close_to_the_truth_but_not_equal(lab):
    truth = _hidden_params(lab)
    for side in ("right", "left"):
        cal, arm = lab.factory_calibration(side), getattr(truth, f"{side}_arm")
        err = np.abs(np.subtract(cal.link_pos, arm.link_pos))
        assert 0 < err.max() < 5e-4
        assert 0 < np.abs(np.subtract(cal.joint_zero, arm.joint_zero)).max() < np.radians(0.1)
        q = np.asarray(rizon.HOME_Q)
        fk_true = rizon.forward_kinematics(q, arm.link_pos, arm.flange_pos, arm.joint_zero)
        assert np.linalg.norm(cal.forward(q)[:3, 3] - fk_true[:3, 3]) < 1e-3


def test_scale_and_cameras(lab):
    truth = _hidden_params(lab)
    for name in ("red_cube", "blue_puck"):
        assert abs(lab.weigh(name) - truth.object(name).mass) < 1e-3
    for cam in lab.cameras:
        img = lab.capture(cam)
        spec = truth.camera(cam)
        assert img.shape == (spec.lens.height, spec.lens.width, 3) and img.dtype == np.uint8
    with pytest.raises(R2S2RError, match="unknown camera 'head_middle'"):
        lab.capture("head_middle")
    with pytest.raises(R2S2RError, match="unknown object"):
        lab.weigh("green_cube")


def test_executed_trajectory_tracks_with_the_hidden_delay(lab):
    truth = _hidden_params(lab)
    q0 = lab.read_encoders("right")[:7]
    t = np.arange(1, 101) * 0.01
    q = np.tile(q0, (100, 1))
    q[:, 0] += 0.15 * np.minimum(t / 0.5, 1.0)  # joint 1 ramps 0.15 rad in 0.5 s
    rec = lab.execute_trajectory("right", t, q)
    assert isinstance(rec, EncoderRecord)
    assert rec.q.shape == rec.q_cmd.shape == (len(rec.t), 7)
    assert abs(rec.q[-1, 0] - q0[0] - 0.15) < 0.01
    moved = np.flatnonzero(np.abs(rec.q[:, 0] - q0[0]) > 1e-4)[0]
    commanded = np.flatnonzero(np.abs(rec.q_cmd[:, 0] - q0[0]) > 1e-9)[0]
    assert rec.t[moved] - rec.t[commanded] >= truth.right_arm.delay - 0.002
    lab.move_to("right", home_command(), 1.0)
    lab.hold(0.5)
    np.testing.assert_allclose(lab.read_encoders("right")[:7], rizon.HOME_Q, atol=0.01)


def _point_pose() -> np.ndarray:
    q = hand_open_pose()
    for finger in ("middle", "ring", "little"):
        for k, v in zip((1, 2, 3), (1.5, 1.6, 1.2), strict=True):
            q[HAND_JOINTS.index(f"{finger}_{k}")] = v
    return q


def test_guarded_move_stops_on_the_belt_surface():
    lab = LabTwin(4)
    truth = _hidden_params(lab)
    lab.set_belt_speed(0.0)
    nominal = WorldParams.nominal()
    model = build_spec(nominal, "red_cube").compile()
    belt_z = nominal.conveyor.pose.pos[2]
    down = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # fingers down, palm away
    above = site_ik(model, "right_index_tip", np.array([0.55, -0.05, belt_z + 0.05]), down, np.asarray(rizon.HOME_Q))
    below = site_ik(model, "right_index_tip", np.array([0.55, -0.05, belt_z - 0.03]), down, above)
    lab.move_to("right", np.concatenate([above, _point_pose()]), 2.0)
    result = lab.guarded_move("right", below, duration=4.0, force_threshold=2.0)
    assert result.contact and result.force > 2.0
    true_model = build_spec(truth, "red_cube").compile()
    data = mujoco.MjData(true_model)
    data.qpos[[true_model.joint(f"right_joint{i + 1}").qposadr[0] for i in range(7)]] = result.q
    mujoco.mj_kinematics(true_model, data)
    tip = data.site_xpos[true_model.site("right_index_tip").id]
    true_belt_z = truth.conveyor.pose.pos[2]
    assert abs(tip[2] - true_belt_z) < 0.015  # the tip site is the centre of the fingertip's end cap


def test_safety_filter_clips_counts_and_logs(nominal):
    lab = LabTwin(3)
    lab.reset(sample_condition("nominal", np.random.default_rng(1)), 0)
    bad = home_command()
    bad[0] = 10.0  # far outside joint 1's range
    lab.act(bad)
    report = lab.safety_report()
    assert report.get("joint_limit", 0) >= 1 and report.get("velocity", 0) >= 1
    q = lab.read_encoders("right")
    assert rizon.JOINT_RANGE[0, 0] <= q[0] <= rizon.JOINT_RANGE[0, 1]
    nan = home_command()
    nan[3] = np.nan
    lab.act(nan)
    assert lab.safety_report()["non_finite"] == 1

    flt = SafetyFilter(nominal)
    prev = home_command()
    low = prev.copy()
    low[1], low[3] = 1.2, 0.6  # shoulder forward, elbow open: the flange dives under the box
    out = flt.filter("right", prev, low, dt=10.0)
    assert flt.counts["workspace"] == 1 and "workspace" in flt.log[-1]
    assert not np.allclose(out, low)
    rng = np.random.default_rng(0)
    left = {"left": np.r_[LEFT_HOLD_Q, np.zeros(20)]}
    found = False
    for _ in range(400):  # find a self-colliding command and check the filter stops short of it
        cand = prev.copy()
        cand[:7] = rng.uniform(rizon.JOINT_RANGE[:, 0], rizon.JOINT_RANGE[:, 1])
        if flt._unsafe("right", cand, left) == "self_collision":
            found = True
            before = flt.counts["self_collision"]
            safe = flt.filter("right", prev, cand, dt=100.0, other=left)
            assert flt.counts["self_collision"] == before + 1
            assert flt._unsafe("right", safe, left) is None  # what it sends is collision-free
            assert not np.allclose(safe, cand)
            break
    assert found


def test_bad_lab_input_gets_clear_errors():
    with pytest.raises(R2S2RError, match="lab seed"):
        LabTwin(-1)
    lab = LabTwin(0)
    with pytest.raises(R2S2RError, match="before reset"):
        lab.act(home_command())
    with pytest.raises(R2S2RError, match="arm side"):
        lab.read_encoders("middle")
    with pytest.raises(R2S2RError, match="belt speed"):
        lab.set_belt_speed(3.0)
    with pytest.raises(R2S2RError, match="trajectory"):
        lab.execute_trajectory("right", np.array([0.1, 0.05]), np.zeros((2, 7)))
    assert dataclasses.is_dataclass(lab.factory_calibration("left"))


def test_skipping_frames_leaves_the_frames_a_trial_does_observe_unchanged():
    """``act(observe=False)`` renders nothing, ``act(observe=cameras)`` those cameras only, yet every
    skipped frame advances the camera noise as a render would: the frames read at steps 2, 3 and 5
    equal those of the same trial observed at every step."""
    cond = sample_condition("nominal", np.random.default_rng(4))
    action = home_command()
    action[1] += 0.05
    every, skipping = LabTwin(5), LabTwin(5)
    assert every.reset(cond, 9)["head_left"].tobytes() == skipping.reset(cond, 9)["head_left"].tobytes()
    observe = {2: ("left_wrist",), 3: True, 4: ("head_left", "nowhere"), 5: True}
    with pytest.raises(ConfigError, match="nowhere"):
        skipping.act(action, observe=observe[4])  # (a refused request steps nothing: checked before acting)
    for step in range(1, 6):
        full = every.act(action)
        part = skipping.act(action, observe=observe.get(step, False) if step != 4 else False)
        np.testing.assert_array_equal(full["proprio"], part["proprio"])
        if step in (3, 5):
            assert set(part) == set(full)
        elif step == 2:
            assert set(part) == {"left_wrist", "proprio"}  # the wrist alone, the head's frame skipped
        else:
            assert set(part) == {"proprio"}  # nothing rendered
        for cam in set(part) - {"proprio"}:
            np.testing.assert_array_equal(part[cam], full[cam])
    # the noise does change from frame to frame, so a skip that drew nothing would be caught
    assert every.observe()["head_left"].tobytes() != every.observe()["head_left"].tobytes()
