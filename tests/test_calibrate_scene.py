"""Scene grounding on lab twins: touch-probed conveyor and bin poses, belt speed, object masses.

Truth comes from ``_hidden_params`` and is compared in the right arm's base frame
(T_base_thing = inv(T_world_base_true) @ T_world_thing_true).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from r2s2r.calibrate.belt import BeltSpeedConfig, estimate_speed
from r2s2r.calibrate.masses import measure_masses
from r2s2r.calibrate.registration import PARTS, Probe, nominal_base_poses, register_scene
from r2s2r.errors import R2S2RError
from r2s2r.geometry import axis_angle_quat, inv_T, make_T, mat_to_quat
from r2s2r.lab.twin import LabTwin, _hidden_params
from r2s2r.world import rizon
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import Pose, WorldParams


def _yaw(T: np.ndarray) -> float:
    return math.atan2(T[1, 0], T[0, 0])


def _pose_error(T_est: np.ndarray, T_true: np.ndarray) -> tuple[np.ndarray, float]:
    """Position error (m, base frame) and yaw error (rad)."""
    dyaw = (_yaw(T_est) - _yaw(T_true) + math.pi) % (2 * math.pi) - math.pi
    return T_est[:3, 3] - T_true[:3, 3], dyaw


def _head_camera_in_base(lab: LabTwin):
    """The true head_left camera with its pose re-expressed as T_base_camera (test hook: the camera
    calibration is another module's job)."""
    truth = _hidden_params(lab)
    cam = truth.camera("head_left")
    T = inv_T(make_T(truth.right_arm.base.pos, truth.right_arm.base.quat)) @ make_T(cam.pose.pos, cam.pose.quat)
    return dataclasses.replace(cam, pose=Pose(tuple(T[:3, 3]), tuple(mat_to_quat(T[:3, :3]))))


@pytest.fixture
def grounded(lab_calibration):
    """Registration, belt speed and masses of a whole calibration per lab seed (tests/conftest.py);
    the belt speed used the calibrated head camera (its sensitivity to that camera's pose is
    tested below)."""
    lab, cal = lab_calibration
    return lab, cal.registration, cal.belt, cal.masses, lab.safety_report(), lab.read_encoders("right")[:7]


@pytest.mark.slow
def test_registration_recovers_conveyor_and_bins(grounded):
    lab, reg, _, _, report, home = grounded
    truth = nominal_base_poses(_hidden_params(lab))  # the truth's layout in its true base frame
    drawing = nominal_base_poses(WorldParams.nominal())
    assert report == {}  # no command was clipped by the safety filter
    np.testing.assert_allclose(home, rizon.HOME_Q, atol=0.02)  # back home (servo friction: ~0.01 rad)
    for part in PARTS:
        est = getattr(reg, part)
        assert all(est.observed[:3]), (part, est.std)  # x, y, z all observed (the belt's end face is probed)
        dp, dyaw = _pose_error(reg.T_base(part), truth[part])
        dp0, dyaw0 = _pose_error(drawing[part], truth[part])
        assert np.abs(dp).max() < 0.003, (part, dp)
        assert abs(dyaw) < math.radians(0.5), (part, math.degrees(dyaw))
        assert np.linalg.norm(dp) < np.linalg.norm(dp0) and abs(dyaw) < abs(dyaw0) + math.radians(0.1)
        assert max(abs(r) for r in est.residuals_mm) < 2.0 and est.rms_mm < 1.0
    assert set(reg.report()) == {f"{p}_probe_{k}_mm" for p in PARTS for k in ("rms", "max")}


@pytest.mark.slow
def test_grounded_params_place_parts_at_the_nominal_base(grounded):
    lab, reg, belt, masses, _, _ = grounded
    nominal = WorldParams.nominal()
    params = masses.apply_to(belt.apply_to(reg.apply_to(nominal)))
    assert params.right_arm == nominal.right_arm  # the base stays where the drawing puts it
    T_world_base = make_T(nominal.right_arm.base.pos, nominal.right_arm.base.quat)
    c = params.conveyor.pose
    np.testing.assert_allclose(make_T(c.pos, c.quat), T_world_base @ reg.T_base("conveyor"), atol=1e-9)
    for color in ("red", "blue"):
        b = params.bin(color).pose
        np.testing.assert_allclose(make_T(b.pos, b.quat), T_world_base @ reg.T_base(f"{color}_bin"), atol=1e-9)
    assert params.conveyor.speed_scale == belt.speed_scale
    assert WorldParams.from_dict(params.to_dict()) == params


@pytest.mark.slow
def test_belt_speed_scale_within_two_percent(grounded):
    lab, reg, belt, _, _, _ = grounded
    true_scale = _hidden_params(lab).conveyor.speed_scale
    assert abs(belt.speed_scale / true_scale - 1) < 0.02
    assert abs(belt.speed_scale - true_scale) < abs(1.0 - true_scale) or abs(1.0 - true_scale) < 0.005
    assert belt.fit_rmse_mm < 2.0 and abs(belt.lateral_drift_mm) < 5.0
    # Sensitivity to the camera pose: 5 mm / 0.5 deg perturbations change the estimate by about 1 % at most.
    cam = _head_camera_in_base(lab)
    T = make_T(cam.pose.pos, cam.pose.quat)
    height = CATALOG[BeltSpeedConfig().object_name].size[0]
    worst = 0.0
    for i in range(3):
        for dT in (
            make_T(0.005 * np.eye(3)[i], (1, 0, 0, 0)),
            make_T((0, 0, 0), axis_angle_quat(np.eye(3)[i], 0.0087)),
        ):
            T2 = dT @ T if dT[:3, :3].trace() == 3 else T @ dT
            cam2 = dataclasses.replace(cam, pose=Pose(tuple(T2[:3, 3]), tuple(mat_to_quat(T2[:3, :3]))))
            v, _, _ = estimate_speed(belt.track, cam2, reg.T_base("conveyor"), height, belt.commanded_speed)
            worst = max(worst, abs(v / belt.measured_speed - 1))
    assert worst < 0.01


@pytest.mark.slow
def test_masses_within_two_grams(grounded):
    lab, _, _, masses, _, _ = grounded
    truth = _hidden_params(lab)
    assert {n for n, _ in masses.masses} == set(CATALOG)
    params = masses.apply_to(WorldParams.nominal())
    for o in truth.objects:
        nominal = WorldParams.nominal().object(o.name).mass
        assert abs(params.object(o.name).mass - o.mass) < 0.002
        assert abs(params.object(o.name).mass - o.mass) < abs(nominal - o.mass) + 1e-4


@pytest.mark.slow
def test_a_probe_into_free_space_raises_naming_the_part_and_point():
    lab = LabTwin(3)
    air = Probe("conveyor", "air", (0.25, -0.08, 0.15), (0, 0, 1))  # 15 cm above the belt: nothing there
    probes = (air, Probe("red_bin", "floor0", (0, 0, 0), (0, 0, 1)), Probe("blue_bin", "floor0", (0, 0, 0), (0, 0, 1)))
    with pytest.raises(R2S2RError, match=r"conveyor probe 'air' found no surface.*\[\d+, \d+, \d+\] mm"):
        register_scene(lab, probes=probes)
    assert lab.safety_report() == {}
    np.testing.assert_allclose(lab.read_encoders("right")[:7], rizon.HOME_Q, atol=0.02)  # sent home again


def test_bad_inputs_raise():
    lab = LabTwin(0)
    with pytest.raises(R2S2RError, match="missing"):
        register_scene(lab, probes=(Probe("conveyor", "top", (0, 0, 0), (0, 0, 1)),))
    with pytest.raises(R2S2RError, match="expected a catalog sphere"):
        BeltSpeedConfig(object_name="red_cube")
    with pytest.raises(R2S2RError, match="unknown object"):
        measure_masses(lab, ("green_cube",))
