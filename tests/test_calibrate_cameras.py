"""Geometric camera calibration on lab twins: intrinsics, head-camera poses in the robot frame,
wrist hand-eye, reprojection residuals, and unusable captures."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from r2s2r.calibrate.cameras import (
    CameraViews,
    calibrate_from_views,
    reprojection_errors,
)
from r2s2r.calibrate.views import ViewConfig, capture_wrist_views
from r2s2r.errors import R2S2RError
from r2s2r.geometry import inv_T, make_T, rotation_angle
from r2s2r.lab.twin import LabTwin, _hidden_params
from r2s2r.world import rizon
from r2s2r.world.engine import LEFT_HOLD_Q
from r2s2r.world.params import WorldParams
from r2s2r.world.scene import TargetMount

pytestmark = pytest.mark.slow


@pytest.fixture
def session(lab_calibration):
    """The camera part of a whole calibration per lab seed (tests/conftest.py)."""
    lab, cal = lab_calibration
    return lab, cal.cameras, cal.views


def _true_T(lab: LabTwin, name: str) -> np.ndarray:
    """Truth in the frame the estimate is in: T_base_camera (right-arm base) or T_flange_camera."""
    truth = _hidden_params(lab)
    cam = truth.camera(name)
    T = make_T(cam.pose.pos, cam.pose.quat)
    if cam.parent == "world":
        return inv_T(make_T(truth.right_arm.base.pos, truth.right_arm.base.quat)) @ T
    return T


def test_intrinsics_match_the_truth(session, nominal):
    lab, calibration, _ = session
    truth = _hidden_params(lab)
    for est in calibration.cameras:
        true = truth.camera(est.name).lens
        assert est.lens.kind == true.kind and (est.lens.width, est.lens.height) == (true.width, true.height)
        assert abs(est.lens.fx / true.fx - 1) < 0.01, est.name
        assert abs(est.lens.fy / true.fy - 1) < 0.01, est.name
        assert abs(est.lens.cx - true.cx) < 2.0 and abs(est.lens.cy - true.cy) < 2.0, est.name
        # distortion: the estimated lens maps rays like the true one out to where the board was seen
        # (pinhole: 40 px from the image corners; fisheye: 55 deg off axis), far closer than the spec
        # sheet's lens does
        if true.kind == "pinhole":
            px = np.array([[u, v] for u in (40, true.width / 2, true.width - 40) for v in (40, true.height - 40)])
            rays = true.unproject(px)
        else:
            th, ph = np.radians(55.0), np.linspace(0, 2 * np.pi, 8, endpoint=False)
            rays = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.full(8, np.cos(th))], axis=1)
            px = true.project(rays)
        err = np.linalg.norm(est.lens.project(rays) - px, axis=1).max()
        err_nominal = np.linalg.norm(nominal.camera(est.name).lens.project(rays) - px, axis=1).max()
        assert err < 3.0 and err < 0.3 * err_nominal, (est.name, err, err_nominal)


def test_poses_match_the_truth_in_the_robot_frame(session):
    lab, calibration, _ = session
    for est in calibration.cameras:
        assert est.frame == ("right_base" if est.name.startswith("head") else est.name.replace("wrist", "flange"))
        T_true = _true_T(lab, est.name)
        assert np.linalg.norm(est.T[:3, 3] - T_true[:3, 3]) < 0.005, est.name
        assert np.degrees(rotation_angle(est.T[:3, :3], T_true[:3, :3])) < 0.5, est.name


def test_grounded_cameras_reproject_the_lab_views_better_than_the_spec_sheet(session):
    _, calibration, views = session
    nominal = WorldParams.nominal()
    before = reprojection_errors(nominal, views)
    after = reprojection_errors(calibration.apply_to(nominal), views)
    own = calibration.reprojection_errors()
    assert set(before) == set(after) == {"head_left", "head_right", "right_wrist", "left_wrist"}
    for name in before:
        # (all corners count here, those the fits left out at shadow edges too)
        assert after[name] < min(1.5, before[name] / 3), (name, before[name], after[name])
        assert own[name] < 0.6 and own[name] <= after[name] + 1e-9
    assert own["stereo"] < 1.0
    stereo = calibration.stereo
    assert stereo.n_pairs >= 8 and stereo.disagreement_m < 0.002 and stereo.disagreement_deg < 0.1
    T_lr_true = inv_T(_true_T(session[0], "head_left")) @ _true_T(session[0], "head_right")
    assert abs(stereo.baseline - np.linalg.norm(T_lr_true[:3, 3])) < 0.002


def test_apply_to_places_cameras_through_the_nominal_robot_base(session):
    _, calibration, _ = session
    nominal = WorldParams.nominal()
    grounded = calibration.apply_to(nominal)
    T_world_base = make_T(nominal.right_arm.base.pos, nominal.right_arm.base.quat)
    for cam, old in zip(grounded.cameras, nominal.cameras, strict=True):
        est = calibration.camera(cam.name)
        T = make_T(cam.pose.pos, cam.pose.quat)
        expected = T_world_base @ est.T if cam.name.startswith("head") else est.T
        np.testing.assert_allclose(T, expected, atol=1e-9)
        assert cam.parent == old.parent and cam.effects == old.effects and cam.lens == est.lens
    assert grounded.replace(cameras=nominal.cameras) == nominal


def test_the_procedure_is_safe_and_leaves_the_cell_as_found(session):
    lab, _, views = session
    assert lab.safety_report() == {}
    np.testing.assert_allclose(lab.read_encoders("right")[:7], rizon.HOME_Q, atol=0.02)
    np.testing.assert_allclose(lab.read_encoders("left")[:7], LEFT_HOLD_Q, atol=0.02)
    for v in views.views:
        assert len(v.corners) >= 0.7 * v.n_captured and v.n_captured >= 15, v.camera


def test_too_few_views_raise_naming_the_camera(session):
    _, _, views = session
    v = views["head_right"]
    cut = dataclasses.replace(
        v, q=v.q[:3], T_base_flange=v.T_base_flange[:3], corners=v.corners[:3], view_ids=v.view_ids[:3]
    )
    bad = CameraViews(tuple(cut if x.camera == "head_right" else x for x in views.views))
    with pytest.raises(R2S2RError, match=r"head_right: the target was found in 3 of 20 views; at least 8"):
        calibrate_from_views(bad)


class _MisplacedTarget:
    """A lab whose technician mounts every calibration target on a stand behind the robots."""

    def __init__(self, lab: LabTwin) -> None:
        self._lab = lab

    def __getattr__(self, name):
        return getattr(self._lab, name)

    def mount_target(self, mount: TargetMount | None) -> None:
        self._lab.mount_target(None if mount is None else TargetMount(mount.board, "world", (-1.5, 0.0, 0.3)))


def test_a_target_the_camera_cannot_see_is_an_unusable_capture(session):
    lab, _, views = session
    config = ViewConfig(n_views=8)
    misplaced = capture_wrist_views(_MisplacedTarget(lab), "left", config, np.random.default_rng(0))
    assert misplaced.n_captured == 8 and len(misplaced.corners) == 0
    bad = CameraViews(tuple(misplaced if v.camera == "left_wrist" else v for v in views.views))
    with pytest.raises(R2S2RError, match=r"left_wrist: the target was found in 0 of 8 views; at least 8"):
        calibrate_from_views(bad)
    # a fixture no pose of the arm can show to its wrist camera fails before anything moves
    far = ViewConfig(max_candidates=30, left_fixture=(-1.5, 0.0, 0.3))
    with pytest.raises(R2S2RError, match=r"left_wrist: only \d+ of 30 sampled board poses"):
        capture_wrist_views(lab, "left", far, np.random.default_rng(0))
    assert lab.safety_report() == {}


def test_same_lab_seed_and_rng_give_the_same_views():
    config = ViewConfig(n_views=3, min_views=3)
    a = capture_wrist_views(LabTwin(5), "right", config, np.random.default_rng(7))
    b = capture_wrist_views(LabTwin(5), "right", config, np.random.default_rng(7))
    assert np.array_equal(a.q, b.q) and np.array_equal(a.corners, b.corners)
