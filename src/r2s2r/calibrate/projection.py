"""Projection helpers of the camera calibration: 6-vector poses, OpenCV lens models vectorised, and
board corners in a camera's frame for the two capture kinds (board on the flange, board on a fixture).

Intrinsics vectors are (fx, fy, cx, cy, *dist) with OpenCV's distortion (pinhole k1, k2, p1, p2, k3;
fisheye k1..k4); a 6-vector pose is (Rodrigues rotation, translation) in m.
"""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np

from r2s2r.calibrate.views import BoardViews
from r2s2r.geometry import inv_T, mat_to_quat
from r2s2r.world.camera import LensModel
from r2s2r.world.params import Pose


def pose_of(T: np.ndarray) -> Pose:
    return Pose(tuple(float(x) for x in T[:3, 3]), tuple(float(x) for x in mat_to_quat(T[:3, :3])))


def T_of(x6: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = cv2.Rodrigues(np.asarray(x6[:3], float))[0]
    T[:3, 3] = x6[3:]
    return T


def x6_of(T: np.ndarray) -> np.ndarray:
    return np.r_[cv2.Rodrigues(np.ascontiguousarray(T[:3, :3]))[0].ravel(), T[:3, 3]]


def rms_px(err: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.sum(err.reshape(-1, 2) ** 2, axis=1))))


def mean_T(Ts: list[np.ndarray]) -> np.ndarray:
    """Chordal mean of rigid transforms."""
    U, _, Vt = np.linalg.svd(np.sum([T[:3, :3] for T in Ts], axis=0))
    T = np.eye(4)
    T[:3, :3] = U @ np.diag([1, 1, np.linalg.det(U @ Vt)]) @ Vt
    T[:3, 3] = np.mean([T_[:3, 3] for T_ in Ts], axis=0)
    return T


def homogeneous(points: np.ndarray) -> np.ndarray:
    return np.c_[points, np.ones(len(points))]


def head_points(v: BoardViews, T_cam_base: np.ndarray) -> np.ndarray:
    """(N, K, 3) board corners in the camera frame (head views: board on the flange)."""
    P = homogeneous(v.board.object_points())
    T = T_cam_base @ v.T_base_flange @ v.T_flange_board  # (N, 4, 4)
    return np.einsum("nij,kj->nki", T, P)[..., :3]


def wrist_points(v: BoardViews, T_flange_cam: np.ndarray, T_base_board: np.ndarray) -> np.ndarray:
    """(N, K, 3) board corners in the camera frame (wrist views: board on a world fixture)."""
    P = homogeneous(v.board.object_points())
    T = inv_T(T_flange_cam) @ np.linalg.inv(v.T_base_flange) @ T_base_board
    return np.einsum("nij,kj->nki", T, P)[..., :3]


def intr_of(lens: LensModel) -> np.ndarray:
    return np.r_[lens.fx, lens.fy, lens.cx, lens.cy, lens.dist]


def lens_with(like: LensModel, intr: np.ndarray) -> LensModel:
    i = [float(x) for x in intr]
    return dataclasses.replace(like, fx=i[0], fy=i[1], cx=i[2], cy=i[3], dist=tuple(i[4:]))


def project(like: LensModel, intr: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """OpenCV's pinhole (k1, k2, p1, p2, k3) or fisheye (k1..k4) model, vectorised: (..., 3) -> (..., 2)."""
    fx, fy, cx, cy = intr[:4]
    z = np.maximum(pts[..., 2], 1e-9)
    x, y = pts[..., 0] / z, pts[..., 1] / z
    r2 = x * x + y * y
    if like.kind == "pinhole":
        k1, k2, p1, p2, k3 = intr[4:9]
        radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
        yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    else:
        k1, k2, k3, k4 = intr[4:8]
        r = np.sqrt(r2)
        th = np.arctan(r)
        t2 = th * th
        s = th * (1 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4)))) / np.maximum(r, 1e-12)
        xd, yd = x * s, y * s
    return np.stack([fx * xd + cx, fy * yd + cy], axis=-1)


def K_of(intr: np.ndarray) -> np.ndarray:
    return np.array([[intr[0], 0, intr[2]], [0, intr[1], intr[3]], [0, 0, 1.0]])
