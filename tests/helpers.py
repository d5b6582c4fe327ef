"""Test helpers: a small damped-least-squares IK on a compiled cell model."""

from __future__ import annotations

import mujoco
import numpy as np

from r2s2r.geometry import mat_to_quat
from r2s2r.world import rizon


def site_ik(
    model: mujoco.MjModel,
    site: str,
    pos: np.ndarray,
    rot: np.ndarray | None,
    q0: np.ndarray,
    side: str = "right",
    iters: int = 300,
) -> np.ndarray:
    """Arm joints (7,) putting ``site`` at world ``pos`` (and, if given, its body at rotation ``rot``)."""
    data = mujoco.MjData(model)
    qadr = np.array([model.joint(f"{side}_joint{i + 1}").qposadr[0] for i in range(7)])
    vadr = np.array([model.joint(f"{side}_joint{i + 1}").dofadr[0] for i in range(7)])
    sid = model.site(site).id
    q = np.array(q0, dtype=float)
    jp, jr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    for _ in range(iters):
        data.qpos[qadr] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        err = [np.asarray(pos) - data.site_xpos[sid]]
        if rot is not None:
            R = data.site_xmat[sid].reshape(3, 3)
            dq = np.zeros(3)
            mujoco.mju_subQuat(dq, mat_to_quat(rot), mat_to_quat(R))
            err.append(R @ dq * 0.5)
        e = np.concatenate(err)
        if np.linalg.norm(e) < 1e-5:
            break
        mujoco.mj_jacSite(model, data, jp, jr, sid)
        J = np.vstack([jp[:, vadr]] + ([jr[:, vadr]] if rot is not None else []))
        q = q + J.T @ np.linalg.solve(J @ J.T + 1e-4 * np.eye(len(e)), e)
        q = np.clip(q, rizon.JOINT_RANGE[:, 0] + 0.03, rizon.JOINT_RANGE[:, 1] - 0.03)
    return q
