"""Small rigid-body helpers. Quaternions are wxyz (MuJoCo's order).

Poses are 4x4 homogeneous matrices named ``T_a_b`` (the pose of frame b in frame a).
"""

from __future__ import annotations

import mujoco
import numpy as np

# Rotation taking OpenCV camera axes (x right, y down, z forward) to MuJoCo camera
# axes (x right, y up, looking along -z): a half turn about x.
R_CV_TO_MJCAM = np.diag([1.0, -1.0, -1.0])


def quat_to_mat(quat: np.ndarray | tuple[float, ...]) -> np.ndarray:
    """3x3 rotation matrix of a unit quaternion (wxyz)."""
    mat = np.zeros(9)
    mujoco.mju_quat2Mat(mat, np.asarray(quat, dtype=float))
    return mat.reshape(3, 3)


def mat_to_quat(mat: np.ndarray) -> np.ndarray:
    """Unit quaternion (wxyz, w >= 0) of a 3x3 rotation matrix."""
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(mat, dtype=float).reshape(9))
    return quat if quat[0] >= 0 else -quat


def quat_mul(a: np.ndarray | tuple[float, ...], b: np.ndarray | tuple[float, ...]) -> np.ndarray:
    """Hamilton product a * b (rotate by b, then by a)."""
    out = np.zeros(4)
    mujoco.mju_mulQuat(out, np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return out


def axis_angle_quat(axis: np.ndarray | tuple[float, ...], angle: float) -> np.ndarray:
    """Quaternion of a rotation by ``angle`` (rad) about ``axis``."""
    out = np.zeros(4)
    axis = np.asarray(axis, dtype=float)
    mujoco.mju_axisAngle2Quat(out, axis / np.linalg.norm(axis), float(angle))
    return out


def rpy_quat(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Quaternion of extrinsic x-y-z rotations (roll, then pitch, then yaw), rad."""
    qx = axis_angle_quat((1, 0, 0), roll)
    qy = axis_angle_quat((0, 1, 0), pitch)
    qz = axis_angle_quat((0, 0, 1), yaw)
    return quat_mul(qz, quat_mul(qy, qx))


def make_T(pos: np.ndarray | tuple[float, ...], quat: np.ndarray | tuple[float, ...]) -> np.ndarray:
    """4x4 homogeneous transform from a position and a wxyz quaternion."""
    T = np.eye(4)
    T[:3, :3] = quat_to_mat(quat)
    T[:3, 3] = pos
    return T


def split_T(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position, wxyz quaternion) of a 4x4 homogeneous transform."""
    return np.array(T[:3, 3], dtype=float), mat_to_quat(T[:3, :3])


def inv_T(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid transform."""
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def look_at_cv(
    eye: np.ndarray | tuple[float, ...],
    target: np.ndarray | tuple[float, ...],
    up: tuple[float, float, float] = (0.0, 0.0, 1.0),
) -> np.ndarray:
    """Quaternion of an OpenCV camera frame at ``eye`` looking at ``target``.

    The camera's +z points at the target and its +y (image down) points away from ``up``.
    """
    z = np.asarray(target, float) - np.asarray(eye, float)
    z /= np.linalg.norm(z)
    x = np.cross(z, np.asarray(up, float))
    if np.linalg.norm(x) < 1e-9:
        x = np.cross(z, np.array([1.0, 0.0, 0.0]))
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return mat_to_quat(np.column_stack([x, y, z]))


def rotation_angle(R_a: np.ndarray, R_b: np.ndarray) -> float:
    """Angle (rad) of the rotation taking R_a to R_b."""
    c = (np.trace(R_a.T @ R_b) - 1.0) / 2.0
    return float(np.arccos(np.clip(c, -1.0, 1.0)))


def min_jerk(s):
    """Minimum-jerk time scaling 10 s^3 - 15 s^4 + 6 s^5 of a phase ``s`` (clipped to [0, 1]):
    0 -> 0 and 1 -> 1 with zero velocity and acceleration at both ends. Scalars or arrays."""
    s = np.clip(s, 0.0, 1.0)
    return 10 * s**3 - 15 * s**4 + 6 * s**5
