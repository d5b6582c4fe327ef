"""Arm drive identification: estimates against lab twins' hidden drives, on two lab seeds."""

import dataclasses

import mujoco
import numpy as np
import pytest

from r2s2r.calibrate.arm import (
    ArmDynamics,
    DriveExcitationConfig,
    drive_model_params,
    drive_model_spec,
    small_signal_targets,
    tracking_rmse,
)
from r2s2r.errors import R2S2RError
from r2s2r.lab.twin import _hidden_params
from r2s2r.world import rizon
from r2s2r.world.params import PhysicsParams, WorldParams


def _joint_inertia(params: WorldParams) -> np.ndarray:
    """Diagonal of the right arm's joint-space inertia (with armature) at home, kg m^2."""
    model = drive_model_spec(params).compile()
    data = mujoco.MjData(model)
    data.qpos[:7] = rizon.HOME_Q
    mujoco.mj_forward(model, data)
    out = []
    for j in range(7):
        e, col = np.zeros(model.nv), np.zeros(model.nv)
        e[j] = 1.0
        mujoco.mj_mulM(model, data, col, e)
        out.append(col[j])
    return np.asarray(out)


def test_excitation_stays_within_rated_speed_and_starts_and_ends_at_rest():
    cfg = DriveExcitationConfig()
    for j in range(7):
        t, x = small_signal_targets(j, cfg)
        assert np.all(np.diff(t) > 0) and x[0] == 0.0 and x[-1] == 0.0
        speed = np.abs(np.diff(np.r_[0.0, x])) / np.diff(np.r_[0.0, t])
        assert speed.max() <= rizon.VELOCITY_LIMIT[j]  # the safety filter's rated-speed check
        assert np.abs(x).max() <= cfg.amplitude + 1e-12


def test_dynamics_apply_to_replaces_only_the_drive_of_one_arm(nominal):
    arm = nominal.right_arm
    dyn = ArmDynamics("right", tuple(np.r_[arm.kp] * 1.1), arm.kv, (2.0,) * 7, (0.3,) * 7, arm.armature, 0.03)
    out = dyn.apply_to(nominal)
    assert out.right_arm.kp == dyn.kp and out.right_arm.delay == 0.03 and out.right_arm.damping == (2.0,) * 7
    assert out.right_arm.link_pos == arm.link_pos and out.left_arm == nominal.left_arm
    with pytest.raises(R2S2RError, match="no drive records"):
        tracking_rmse(nominal, [])


@pytest.fixture
def calibrated(lab_calibration):
    """The arm part of a whole calibration per lab seed (tests/conftest.py)."""
    lab, cal = lab_calibration
    return lab, cal.arm


@pytest.mark.slow
def test_drive_identification_recovers_the_hidden_drives(calibrated):
    lab, cal = calibrated
    truth = _hidden_params(lab)
    arm, dyn = truth.right_arm, cal.dynamics
    assert lab.safety_report() == {}
    np.testing.assert_allclose(lab.read_encoders("right")[:7], rizon.HOME_Q, atol=0.02)  # after every procedure
    assert abs(dyn.delay - arm.delay) <= 0.005
    kp_err = np.asarray(dyn.kp) / arm.kp - 1
    kv_err = np.asarray(dyn.kv) / arm.kv - 1
    # Joints 1-4: link inertia dominates and kv >> damping, so kp and kv themselves are identified.
    assert np.all(np.abs(kp_err[:4]) < 0.10), kp_err
    assert np.all(np.abs(kv_err[:4]) < 0.10), kv_err
    # Every joint: the drive relative to its inertia (the free-motion invariants) is identified.
    i_est = _joint_inertia(dyn.apply_to(drive_model_params(lab.factory_calibration("right"))))
    i_true = _joint_inertia(dataclasses.replace(truth, physics=PhysicsParams()))
    kp_rel = (np.asarray(dyn.kp) / i_est) / (np.asarray(arm.kp) / i_true) - 1
    visc_rel = ((np.r_[dyn.kv] + dyn.damping) / i_est) / ((np.r_[arm.kv] + arm.damping) / i_true) - 1
    assert np.all(np.abs(kp_rel) < 0.10), kp_rel
    assert np.all(np.abs(visc_rel) < 0.10), visc_rel
    assert np.all(np.abs(np.asarray(dyn.friction) - arm.friction) < 0.2), (dyn.friction, arm.friction)


@pytest.mark.slow
def test_grounded_simulator_tracks_the_lab_much_better_than_the_spec_sheet(calibrated):
    lab, cal = calibrated
    assert cal.rmse_grounded < 0.25 * cal.rmse_nominal
    assert cal.rmse_grounded < 5e-4  # rad
    grounded = cal.dynamics.apply_to(WorldParams.nominal())
    assert tracking_rmse(grounded, cal.runs) < 0.5 * tracking_rmse(WorldParams.nominal(), cal.runs)
    for run in cal.runs:  # raw records are plain arrays
        assert run.q.shape == run.q_cmd.shape == (len(run.t), 7) and run.hand_q.shape == (20,)
