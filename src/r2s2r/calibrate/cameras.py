"""Geometric calibration of the cell's cameras from checkerboard captures: intrinsics, distortion,
head-camera extrinsics in the robot frame and wrist-camera hand-eye.

Frames: head cameras are estimated as ``T_base_camera`` in the RIGHT arm's base frame (the robot
frame of the factory kinematics); wrist cameras as ``T_flange_camera`` on their own flange. Camera
frames are OpenCV's (x right, y down, z forward); lengths in m, pixels at full resolution.

Method. Head pair: intrinsics and distortion from ``cv2.calibrateCamera`` per camera (free per-view
board poses, so kinematic errors cannot leak into them; k3 fixed at 0 by default), refitted without
outlier corners; then ``T_base_camera``, intrinsics fixed, from every corner of every view at its
board pose known in the base frame (factory forward kinematics x the paddle's design pose on the
flange): one robust (Huber, outlier-dropping) 6-DoF fit started from the average of the per-view
camera poses. ``cv2.stereoCalibrate`` on the common views gives the pair's relative pose, reported
as a consistency residual. Wrist fisheyes: ``cv2.fisheye.calibrate`` then ``cv2.calibrateHandEye``
(Park) start a joint robust fit of intrinsics + ``T_flange_camera`` + the fixture's (unknown) pose
in the arm's base frame over every corner of every view.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.optimize import least_squares

from r2s2r.calibrate.projection import (
    K_of,
    T_of,
    head_points,
    intr_of,
    lens_with,
    mean_T,
    pose_of,
    project,
    rms_px,
    wrist_points,
    x6_of,
)
from r2s2r.calibrate.views import BoardViews, ViewConfig, capture_head_views, capture_wrist_views
from r2s2r.errors import R2S2RError
from r2s2r.geometry import inv_T, make_T, rotation_angle
from r2s2r.lab.real_cell import RealCell
from r2s2r.world.camera import LensModel
from r2s2r.world.params import Pose, WorldParams


@dataclass(frozen=True)
class CameraCalibConfig:
    """Capture plan and fit settings of the camera calibration (pixels at full resolution)."""

    views: ViewConfig = ViewConfig()
    fix_k3: bool = True  # pinhole k3 held at 0 (weakly observable at these fields of view)
    max_rms_px: float = 1.5  # a fit worse than this means bad detections or a moved target
    huber_px: float = 1.0  # robust loss scale of the joint fits
    outlier_px: float = 1.5  # corners off the fit by more than this (and 5 robust sigmas) are dropped


@dataclass(frozen=True)
class CameraEstimate:
    """One calibrated camera. ``frame`` names the frame ``pose`` is given in: ``"right_base"``
    (T_base_camera, right-arm base frame) for head cameras, ``"{side}_flange"`` (T_flange_camera)
    for wrist cameras. ``rms_px``: RMS corner reprojection error of the final (rigid) model."""

    name: str
    lens: LensModel
    frame: str
    pose: Pose
    n_views: int
    rms_px: float
    n_outliers: int = 0  # corners left out of the final fit (shadow edges, partly hidden squares)
    fixture: Pose | None = None  # wrist cameras: T_base_board of the fixture board, moving arm's base frame

    @property
    def T(self) -> np.ndarray:
        return make_T(self.pose.pos, self.pose.quat)


@dataclass(frozen=True)
class StereoEstimate:
    """``cv2.stereoCalibrate`` of the head pair with fixed intrinsics: ``T_left_right`` (pose of
    head_right in head_left's frame), its RMS (px), and how far it is from the relative pose of the
    two base-frame estimates (m, deg): a consistency residual."""

    T_left_right: Pose
    rms_px: float
    n_pairs: int
    baseline: float  # m
    disagreement_m: float
    disagreement_deg: float


@dataclass(frozen=True)
class CameraCalibration:
    """All four cameras, calibrated."""

    cameras: tuple[CameraEstimate, ...]
    stereo: StereoEstimate

    def camera(self, name: str) -> CameraEstimate:
        for c in self.cameras:
            if c.name == name:
                return c
        raise R2S2RError(f"camera calibration: no camera {name!r}; expected one of {[c.name for c in self.cameras]}")

    def apply_to(self, params: WorldParams) -> WorldParams:
        """``params`` with every calibrated camera's lens and pose; image effects untouched.

        Head cameras go to ``T_world_base @ T_base_camera`` with ``params``' right-arm base pose (the
        grounded world keeps it at the drawing pose); wrist cameras to T_flange_camera on their flange.
        """
        T_world_base = make_T(params.right_arm.base.pos, params.right_arm.base.quat)
        cams = []
        for cam in params.cameras:
            est = next((c for c in self.cameras if c.name == cam.name), None)
            if est is None:
                cams.append(cam)
                continue
            T, parent = (T_world_base @ est.T, "world") if est.frame == "right_base" else (est.T, est.frame)
            cams.append(dataclasses.replace(cam, lens=est.lens, parent=parent, pose=pose_of(T)))
        return params.replace(cameras=tuple(cams))

    def reprojection_errors(self) -> dict[str, float]:
        """RMS reprojection error (px) per camera, and the stereo fit's as ``"stereo"``."""
        return {c.name: c.rms_px for c in self.cameras} | {"stereo": self.stereo.rms_px}


@dataclass(frozen=True, eq=False)
class CameraViews:
    """A capture session of all four cameras (see ``BoardViews``)."""

    views: tuple[BoardViews, ...]

    def __getitem__(self, name: str) -> BoardViews:
        for v in self.views:
            if v.camera == name:
                return v
        raise R2S2RError(f"camera views: no camera {name!r}; expected one of {[v.camera for v in self.views]}")


def capture_camera_views(
    lab: RealCell, rng: np.random.Generator, config: CameraCalibConfig = CameraCalibConfig()
) -> CameraViews:
    """Run the three capture sessions (head pair, right wrist, left wrist) on ``lab``; ``rng``
    draws the board poses."""
    head = capture_head_views(lab, config.views, rng)
    wrists = tuple(capture_wrist_views(lab, side, config.views, rng) for side in ("right", "left"))
    return CameraViews(views=head + wrists)


def calibrate_cameras(
    lab: RealCell, rng: np.random.Generator, config: CameraCalibConfig = CameraCalibConfig()
) -> tuple[CameraCalibration, CameraViews]:
    """Capture on ``lab`` and calibrate; returns the calibration and the views it used."""
    views = capture_camera_views(lab, rng, config)
    return calibrate_from_views(views, config), views


def calibrate_from_views(views: CameraViews, config: CameraCalibConfig = CameraCalibConfig()) -> CameraCalibration:
    """Calibrate all four cameras from a capture session (spec-sheet lenses as starting points).

    Raises ``R2S2RError`` naming the camera when it saw the board in too few views or when its fit
    stays worse than ``config.max_rms_px``."""
    nominal = WorldParams.nominal()
    for v in views.views:
        if len(v.corners) < config.views.min_views:
            raise R2S2RError(
                f"{v.camera}: the target was found in {len(v.corners)} of {v.n_captured} views; "
                f"at least {config.views.min_views} are needed"
            )
    cams = [_calibrate_head(views[n], nominal.camera(n).lens, config) for n in ("head_left", "head_right")]
    cams += [_calibrate_wrist(views[n], nominal.camera(n).lens, config) for n in ("right_wrist", "left_wrist")]
    for c in cams:
        if not c.rms_px < config.max_rms_px:
            raise R2S2RError(
                f"{c.name}: reprojection error {c.rms_px:.2f} px after calibration; expected under "
                f"{config.max_rms_px} px (misdetected corners, or the target moved on its mount)"
            )
    stereo = _stereo(views["head_left"], views["head_right"], cams[0], cams[1])
    return CameraCalibration(cameras=tuple(cams), stereo=stereo)


def reprojection_errors(params: WorldParams, views: CameraViews) -> dict[str, float]:
    """RMS reprojection error (px) of ``params``' cameras on captured views, per camera.

    Head cameras: the board's pose is known in the robot frame, so ``params`` (lens, camera pose in
    the world, right-arm base pose) predicts every corner. Wrist cameras: the fixture's pose in the
    arm's base frame is not known, so it is fitted (6 DoF, shared by every view) for ``params``'
    lens and mount before the error is measured. Every detected corner counts (also those the
    calibration's fits left out as outliers), so the numbers compare any two ``params``.
    """
    out = {}
    for v in views.views:
        cam = params.camera(v.camera)
        obs = v.corners
        parent = "world" if v.T_flange_board is not None else f"{v.side}_flange"
        if cam.parent != parent:
            raise R2S2RError(
                f"reprojection errors: camera {cam.name!r} is mounted on {cam.parent!r}; expected {parent!r}"
            )
        if v.T_flange_board is not None:
            arm = getattr(params, f"{v.side}_arm")
            T_cam_base = inv_T(make_T(cam.pose.pos, cam.pose.quat)) @ make_T(arm.base.pos, arm.base.quat)
            out[v.camera] = rms_px(project(cam.lens, intr_of(cam.lens), head_points(v, T_cam_base)) - obs)
        else:
            T_flange_cam = make_T(cam.pose.pos, cam.pose.quat)
            T_base_board = _fit_fixture(v, cam.lens, T_flange_cam)
            out[v.camera] = rms_px(
                project(cam.lens, intr_of(cam.lens), wrist_points(v, T_flange_cam, T_base_board)) - obs
            )
    return out


# --- head cameras -----------------------------------------------------------------------------
def _calibrate_head(v: BoardViews, nominal: LensModel, config: CameraCalibConfig) -> CameraEstimate:
    """Intrinsics from ``cv2.calibrateCamera`` (free per-view board poses: untouched by kinematic
    errors), refitted without outlier corners; then T_base_camera, intrinsics fixed, from every
    corner of every view at its board pose known in the base frame (one robust 6-DoF fit)."""
    P = v.board.object_points()
    keep = np.ones(v.corners.shape[:2], bool)
    flags = cv2.CALIB_USE_INTRINSIC_GUESS | (cv2.CALIB_FIX_K3 if config.fix_k3 else 0)
    K, d = nominal.K, np.zeros(5)
    for _ in range(4):
        _, K, d, rvecs, tvecs = cv2.calibrateCamera(
            [P[k].astype(np.float32) for k in keep],
            [c[k].astype(np.float32) for c, k in zip(v.corners, keep, strict=True)],
            v.size,
            K.copy(),
            d.copy(),
            flags=flags,
        )
        err = np.array(
            [
                np.linalg.norm(cv2.projectPoints(P, r, t, K, d)[0].reshape(-1, 2) - c, axis=1)
                for r, t, c in zip(rvecs, tvecs, v.corners, strict=True)
            ]
        )
        new = err < max(config.outlier_px, 5 * 1.4826 * np.median(err[keep]))
        if np.array_equal(new, keep) or new.sum(axis=1).min() < 6:
            break
        keep = new
    intr = np.r_[K[0, 0], K[1, 1], K[0, 2], K[1, 2], d.ravel()[:5]]
    # each view places the camera in the base frame: T_base_board @ inv(T_cam_board)
    T_base_cam = mean_T(
        [
            Tb @ v.T_flange_board @ inv_T(T_of(np.r_[r.ravel(), t.ravel()]))
            for Tb, r, t in zip(v.T_base_flange, rvecs, tvecs, strict=True)
        ]
    )

    def errors(x: np.ndarray) -> np.ndarray:
        return project(nominal, intr, head_points(v, T_of(x))) - v.corners

    x, rms, n_out = _robust_fit(errors, x6_of(inv_T(T_base_cam)), config)
    return CameraEstimate(
        v.camera, lens_with(nominal, intr), "right_base", pose_of(inv_T(T_of(x))), len(v.corners), rms, n_out
    )


def _robust_fit(errors, x0: np.ndarray, config: CameraCalibConfig) -> tuple[np.ndarray, float, int]:
    """Least squares (Huber) of ``errors(x)`` (N, K, 2) px, refitted without outlier corners until
    the inlier set settles; returns the solution, the inliers' RMS (px) and the outlier count."""
    keep = np.ones(errors(x0).shape[:2], bool)
    x = x0
    for _ in range(4):
        w = keep[..., None].astype(float)
        x = least_squares(
            lambda x_, w=w: (errors(x_) * w).ravel(), x, loss="huber", f_scale=config.huber_px, x_scale="jac"
        ).x
        err = np.linalg.norm(errors(x), axis=-1)
        sigma = 1.4826 * np.median(err[keep])
        new = err < max(config.outlier_px, 5 * sigma)
        if np.array_equal(new, keep):
            break
        keep = new
    return x, rms_px(errors(x)[keep]), int((~keep).sum())


def _stereo(left: BoardViews, right: BoardViews, el: CameraEstimate, er: CameraEstimate) -> StereoEstimate:
    common = np.intersect1d(left.view_ids, right.view_ids)
    il = [int(np.flatnonzero(left.view_ids == i)[0]) for i in common]
    ir = [int(np.flatnonzero(right.view_ids == i)[0]) for i in common]
    obj = [left.board.object_points().astype(np.float32)] * len(common)
    rms, *_, R, t, _, _ = cv2.stereoCalibrate(
        obj,
        [left.corners[i].astype(np.float32) for i in il],
        [right.corners[i].astype(np.float32) for i in ir],
        K_of(intr_of(el.lens)),
        np.asarray(el.lens.dist),
        K_of(intr_of(er.lens)),
        np.asarray(er.lens.dist),
        left.size,
        flags=cv2.CALIB_FIX_INTRINSIC,
    )
    T_right_left = np.eye(4)
    T_right_left[:3, :3], T_right_left[:3, 3] = R, t.ravel()
    T_lr = inv_T(T_right_left)
    T_lr_base = inv_T(el.T) @ er.T
    return StereoEstimate(
        T_left_right=pose_of(T_lr),
        rms_px=float(rms),
        n_pairs=len(common),
        baseline=float(np.linalg.norm(T_lr[:3, 3])),
        disagreement_m=float(np.linalg.norm(T_lr[:3, 3] - T_lr_base[:3, 3])),
        disagreement_deg=float(np.degrees(rotation_angle(T_lr[:3, :3], T_lr_base[:3, :3]))),
    )


# --- wrist cameras ----------------------------------------------------------------------------
def _calibrate_wrist(v: BoardViews, nominal: LensModel, config: CameraCalibConfig) -> CameraEstimate:
    n = len(v.corners)
    obj = [v.board.object_points().reshape(1, -1, 3).astype(np.float64)] * n
    img = [c.reshape(1, -1, 2).astype(np.float64) for c in v.corners]
    flags = cv2.fisheye.CALIB_RECOMPUTE_EXTRINSIC | cv2.fisheye.CALIB_FIX_SKEW | cv2.fisheye.CALIB_USE_INTRINSIC_GUESS
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-9)
    try:
        _, K, D, rvecs, tvecs = cv2.fisheye.calibrate(
            obj, img, v.size, nominal.K.copy(), np.zeros((4, 1)), flags=flags, criteria=criteria
        )
        intr0 = np.r_[K[0, 0], K[1, 1], K[0, 2], K[1, 2], D.ravel()]
    except cv2.error:  # ill-conditioned start: per-view PnP with the spec-sheet lens instead
        intr0 = intr_of(nominal)
        rvecs, tvecs = [], []
        for o, i in zip(obj, img, strict=True):
            _, r, t = cv2.fisheye.solvePnP(o, i, nominal.K, np.zeros(4))
            rvecs.append(r)
            tvecs.append(t)
    T_cam_board = [T_of(np.r_[r.ravel(), t.ravel()]) for r, t in zip(rvecs, tvecs, strict=True)]
    R_fc, t_fc = cv2.calibrateHandEye(
        [T[:3, :3] for T in v.T_base_flange],
        [T[:3, 3] for T in v.T_base_flange],
        [T[:3, :3] for T in T_cam_board],
        [T[:3, 3] for T in T_cam_board],
        method=cv2.CALIB_HAND_EYE_PARK,
    )
    T_flange_cam = np.eye(4)
    T_flange_cam[:3, :3], T_flange_cam[:3, 3] = R_fc, t_fc.ravel()
    T_base_board = mean_T([Tb @ T_flange_cam @ Tc for Tb, Tc in zip(v.T_base_flange, T_cam_board, strict=True)])

    def errors(x: np.ndarray) -> np.ndarray:
        return project(nominal, x[:8], wrist_points(v, T_of(x[8:14]), T_of(x[14:]))) - v.corners

    x, rms, n_out = _robust_fit(errors, np.r_[intr0, x6_of(T_flange_cam), x6_of(T_base_board)], config)
    lens, T_flange_camera, fixture = lens_with(nominal, x[:8]), pose_of(T_of(x[8:14])), pose_of(T_of(x[14:]))
    return CameraEstimate(v.camera, lens, f"{v.side}_flange", T_flange_camera, n, rms, n_out, fixture=fixture)


def _fit_fixture(v: BoardViews, lens: LensModel, T_flange_cam: np.ndarray) -> np.ndarray:
    """T_base_board of a fixture board that best explains the views for this lens and mount."""
    intr = intr_of(lens)
    guesses = []
    for Tb, c in zip(v.T_base_flange, v.corners, strict=True):
        rays = lens.unproject(c)
        ok, r, t = cv2.solvePnP(v.board.object_points(), rays[:, :2] / rays[:, 2:], np.eye(3), None)
        if ok:
            guesses.append(Tb @ T_flange_cam @ T_of(np.r_[r.ravel(), t.ravel()]))

    def residuals(x: np.ndarray) -> np.ndarray:
        return (project(lens, intr, wrist_points(v, T_flange_cam, T_of(x))) - v.corners).ravel()

    sol = least_squares(residuals, x6_of(mean_T(guesses)), loss="huber", f_scale=3.0, x_scale="jac")
    return T_of(sol.x)
