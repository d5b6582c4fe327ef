"""Object pose from the first-frame head stereo pair of real demonstrations, against the lab's truth.

The lab's truth (its hidden parameters, through the test-only hook) is read here only to score
the estimate; the estimator sees images and a world's camera and conveyor parameters.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from r2s2r.behavior.demos import STEREO_EXTRAS
from r2s2r.behavior.pose_estimation import estimate_object_pose, settle_on_belt
from r2s2r.data import Dataset
from r2s2r.errors import R2S2RError
from r2s2r.geometry import make_T
from r2s2r.lab.twin import _hidden_params
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import WorldParams


def _stereo(ep):
    return {cam: ep.extras[key] for cam, key in STEREO_EXTRAS.items()}


def _truth_pose(truth: WorldParams, cond: dict) -> tuple[np.ndarray, float]:
    c = truth.conveyor
    obj = CATALOG[cond["object"]]
    p = make_T(c.pose.pos, c.pose.quat) @ np.array([cond["start_x"], cond["lateral"], obj.rest_height, 1.0])
    return p[:3], float(cond["yaw"])


def test_estimates_from_images_match_the_lab_truth(real_demos):
    lab, path = real_demos
    truth = _hidden_params(lab)  # a perfectly calibrated world: the lab's own cameras and conveyor
    errors = []
    with Dataset(path) as ds:
        for i in range(len(ds)):
            ep = ds.episode(i)
            cond = ep.provenance.condition
            est = estimate_object_pose(_stereo(ep), truth)
            p_true, yaw_true = _truth_pose(truth, cond)
            err = float(np.linalg.norm(est.T_world_object[:3, 3] - p_true))
            errors.append(err)
            print(f"demo {i}: {cond['object']} -> {est.object_name}, {1000 * err:.1f} mm, IoU {est.iou:.2f}")
            assert est.object_name == cond["object"]  # size class and shape
            assert est.color == CATALOG[cond["object"]].color
            assert err < 0.005
            if CATALOG[cond["object"]].shape == "box":  # yaw is defined up to the cube's quarter turn
                d = (est.yaw - yaw_true + math.pi / 4) % (math.pi / 2) - math.pi / 4
                assert abs(d) < math.radians(3)
            assert np.linalg.norm(est.stereo_point - p_true) < 0.05  # stereo depth alone: a few cm
            T = settle_on_belt(truth, est)
            assert np.linalg.norm(T[:3, 3] - est.T_world_object[:3, 3]) < 0.002  # it was in stable contact
    print(f"position error: mean {1000 * np.mean(errors):.1f} mm, max {1000 * np.max(errors):.1f} mm")


def test_an_uncalibrated_world_estimates_worse_but_still_finds_the_object(real_demos):
    lab, path = real_demos
    truth = _hidden_params(lab)
    nominal = WorldParams.nominal()  # the spec sheet's head cameras, a few cm and degrees off
    with Dataset(path) as ds:
        ep = ds.episode(1)
    est = estimate_object_pose(_stereo(ep), nominal)
    p_true, _ = _truth_pose(truth, ep.provenance.condition)
    # compare in the robot frame: the nominal world's origin is the drawing's, the lab's is as built
    T_tb, T_nb = (make_T(w.right_arm.base.pos, w.right_arm.base.quat) for w in (truth, nominal))
    p_est_robot = (np.linalg.inv(T_nb) @ np.r_[est.T_world_object[:3, 3], 1.0])[:3]
    p_true_robot = (np.linalg.inv(T_tb) @ np.r_[p_true, 1.0])[:3]
    err = float(np.linalg.norm(p_est_robot - p_true_robot))
    print(f"nominal cameras: {1000 * err:.1f} mm, IoU {est.iou:.2f}")
    assert est.color == "red" and 0.003 < err < 0.05


def test_bad_images_are_rejected(real_demos):
    _, path = real_demos
    nominal = WorldParams.nominal()
    with Dataset(path) as ds:
        ep = ds.episode(0)
    images = _stereo(ep)
    with pytest.raises(R2S2RError, match="full-resolution head_right"):
        estimate_object_pose({**images, "head_right": images["head_right"][::2, ::2]}, nominal)
    grey = np.full_like(images["head_left"], 90)
    with pytest.raises(R2S2RError, match="no red or blue object"):
        estimate_object_pose({"head_left": grey, "head_right": grey}, nominal)
    assert dataclasses.is_dataclass(est := estimate_object_pose(images, nominal)) and est.scores
