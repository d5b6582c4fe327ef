"""Flexiv Rizon 4S kinematics and drive facts (the spec sheet), and its forward kinematics.

Frames: the arm base frame sits at the bottom of link 1's mount; each link frame is placed at
``LINK_POS[i]`` (rotated by ``LINK_QUAT[i]``) in its parent and rotates about ``JOINT_AXIS[i]``.
The flange frame is ``FLANGE_POS`` in link 7 (its +z is the tool approach axis).
"""

from __future__ import annotations

import numpy as np

from r2s2r.geometry import axis_angle_quat, make_T

N_JOINTS = 7
_RZ180 = (0.0, 0.0, 0.0, 1.0)
_I = (1.0, 0.0, 0.0, 0.0)
LINK_POS: tuple[tuple[float, float, float], ...] = (
    (0.0, 0.0, 0.155),
    (0.0, 0.03, 0.21),
    (0.0, 0.035, 0.205),
    (-0.02, -0.03, 0.19),
    (-0.02, 0.025, 0.195),
    (0.0, 0.03, 0.19),
    (-0.015, 0.073, 0.11),
)
LINK_QUAT: tuple[tuple[float, float, float, float], ...] = (
    _RZ180,
    _I,
    _I,
    _RZ180,
    _RZ180,
    _I,
    (0.707107, 0.0, -0.707107, 0.0),
)
FLANGE_POS: tuple[float, float, float] = (0.0, 0.0, 0.081)
JOINT_AXIS: tuple[tuple[float, float, float], ...] = (
    (0, 0, 1),
    (0, 1, 0),
    (0, 0, 1),
    (0, 1, 0),
    (0, 0, 1),
    (0, 1, 0),
    (0, 0, 1),
)
JOINT_RANGE = np.array(
    [
        (-2.8798, 2.8798),
        (-2.3562, 2.3562),
        (-3.0543, 3.0543),
        (-1.9548, 2.7751),
        (-3.0543, 3.0543),
        (-1.4835, 4.6251),
        (-3.0543, 3.0543),
    ]
)
LINK_MASS: tuple[float, ...] = (3.596, 2.69, 2.354, 2.354, 2.31, 2.223, 1.403)
TORQUE_LIMIT: tuple[float, ...] = (123.0, 123.0, 64.0, 64.0, 39.0, 39.0, 39.0)
KP: tuple[float, ...] = (289.0, 673.0, 224.0, 373.0, 237.0, 232.0, 186.0)
KV: tuple[float, ...] = (61.0, 143.0, 36.0, 59.0, 13.0, 12.0, 9.9)
# Joint speed limits (rad/s) used by the safety filter: the Rizon 4's rated joint speeds.
VELOCITY_LIMIT: tuple[float, ...] = (2.094, 2.094, 2.443, 2.443, 4.887, 4.887, 4.887)
HOME_Q: tuple[float, ...] = (0.0, 0.0, 0.0, 1.57, 0.0, 0.0, 0.0)


def forward_kinematics(
    q: np.ndarray, link_pos=LINK_POS, flange_pos=FLANGE_POS, joint_zero=(0.0,) * N_JOINTS
) -> np.ndarray:
    """T_base_flange for joint readings ``q`` (rad) on given kinematics.

    ``joint_zero`` is the encoder zero offset: the physical joint angle is ``q + joint_zero``.
    """
    return forward_kinematics_many(np.asarray(q, dtype=float)[None], link_pos, flange_pos, joint_zero)[0]


def forward_kinematics_many(
    qs: np.ndarray, link_pos=LINK_POS, flange_pos=FLANGE_POS, joint_zero=(0.0,) * N_JOINTS
) -> np.ndarray:
    """(T, 4, 4) ``forward_kinematics`` of each row of ``qs`` (T, 7), the links' transforms built once."""
    links = [make_T(link_pos[i], LINK_QUAT[i]) for i in range(N_JOINTS)]
    flange = make_T(flange_pos, (1, 0, 0, 0))
    out = np.empty((len(qs), 4, 4))
    for k, q in enumerate(np.asarray(qs, dtype=float)):
        T = np.eye(4)
        for i in range(N_JOINTS):
            T = T @ links[i]
            T = T @ make_T((0, 0, 0), axis_angle_quat(JOINT_AXIS[i], q[i] + joint_zero[i]))
        out[k] = T @ flange
    return out
