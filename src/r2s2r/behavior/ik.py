"""Inverse kinematics of one arm on given kinematics (the factory file or a WorldParams arm), via mink.

``ArmIK.solve(T_base_tool, q_seed)`` returns encoder-frame joint values putting the tool frame at
``T_base_tool`` (pose of the tool in the arm's base frame), or reports that it could not;
``solve_restarts`` tries several seeds and random restarts, with an acceptance test.
The tool frame is ``T_flange_tool`` (4x4) in the flange frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mink
import mujoco
import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.geometry import rotation_angle, split_T
from r2s2r.world import rizon


@dataclass(frozen=True)
class IKConfig:
    pos_tol: float = 1e-3  # m
    rot_tol: float = np.radians(0.5)  # rad
    max_iters: int = 60
    dt: float = 0.2  # integration step of the differential IK, s
    posture_cost: float = 1e-3  # pull toward the seed (resolves the redundant 7th DoF)
    damping: float = 1e-4
    stall_iters: int = 0  # give up when the error has not fallen 1 % in this many iterations (0: never)


@dataclass(frozen=True)
class IKResult:
    q: np.ndarray  # (7,) encoder values, rad
    ok: bool
    pos_err: float  # m
    rot_err: float  # rad


class ArmIK:
    """Differential IK (mink, QP with joint limits) on one arm's kinematics."""

    def __init__(
        self, link_pos, flange_pos, joint_zero, T_flange_tool: np.ndarray | None = None, config: IKConfig = IKConfig()
    ) -> None:
        self.config = config
        spec = mujoco.MjSpec()
        spec.compiler.degree = False
        parent = spec.worldbody
        for i in range(rizon.N_JOINTS):
            body = parent.add_body(name=f"link{i + 1}", pos=list(link_pos[i]), quat=list(rizon.LINK_QUAT[i]))
            body.add_joint(
                name=f"joint{i + 1}",
                type=mujoco.mjtJoint.mjJNT_HINGE,
                axis=list(rizon.JOINT_AXIS[i]),
                range=list(rizon.JOINT_RANGE[i]),
                ref=-joint_zero[i],
            )
            body.add_geom(
                type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], mass=rizon.LINK_MASS[i], contype=0, conaffinity=0
            )
            parent = body
        flange = parent.add_body(name="flange", pos=list(flange_pos))
        T = np.eye(4) if T_flange_tool is None else np.asarray(T_flange_tool, float)
        pos, quat = split_T(T)
        flange.add_site(name="tool", pos=list(pos), quat=list(quat))
        self.model = spec.compile()
        self._cfg = mink.Configuration(self.model)
        self._task = mink.FrameTask("tool", "site", position_cost=1.0, orientation_cost=1.0)
        self._posture = mink.PostureTask(self.model, cost=config.posture_cost)
        self._limits = [mink.ConfigurationLimit(self.model)]

    @classmethod
    def from_kinematics(cls, kin, T_flange_tool: np.ndarray | None = None, config: IKConfig = IKConfig()) -> ArmIK:
        """From a ``KinematicCalibration`` or an ``ArmParams`` (anything with link_pos/flange_pos/joint_zero)."""
        return cls(kin.link_pos, kin.flange_pos, kin.joint_zero, T_flange_tool, config)

    def forward(self, q: np.ndarray) -> np.ndarray:
        """T_base_tool at encoder values ``q``."""
        self._cfg.update(np.asarray(q, float))
        return self._cfg.get_transform_frame_to_world("tool", "site").as_matrix()

    def solve(self, T_base_tool: np.ndarray, q_seed: np.ndarray) -> IKResult:
        T_base_tool = np.asarray(T_base_tool, float)
        if T_base_tool.shape != (4, 4) or not np.all(np.isfinite(T_base_tool)):
            raise ConfigError(f"IK target: expected a finite 4x4 pose, got shape {T_base_tool.shape}")
        c = self.config
        lo, hi = rizon.JOINT_RANGE[:, 0], rizon.JOINT_RANGE[:, 1]
        q = np.clip(np.asarray(q_seed, float), lo + 1e-6, hi - 1e-6)
        self._cfg.update(q)
        pos, quat = split_T(T_base_tool)
        self._task.set_target(mink.SE3.from_rotation_and_translation(mink.SO3(wxyz=quat), pos))
        self._posture.set_target(q)
        history: list[float] = []
        for _ in range(c.max_iters):
            T_now = self._cfg.get_transform_frame_to_world("tool", "site").as_matrix()
            pe = float(np.linalg.norm(T_now[:3, 3] - T_base_tool[:3, 3]))
            re = rotation_angle(T_now[:3, :3], T_base_tool[:3, :3])
            if pe < c.pos_tol and re < c.rot_tol:
                return IKResult(self._cfg.q.copy(), True, pe, re)
            history.append(pe / c.pos_tol + re / c.rot_tol)
            if c.stall_iters and len(history) > c.stall_iters and history[-1] > 0.99 * history[-1 - c.stall_iters]:
                return IKResult(self._cfg.q.copy(), False, pe, re)
            vel = mink.solve_ik(
                self._cfg, [self._task, self._posture], c.dt, "daqp", damping=c.damping, limits=self._limits
            )
            self._cfg.integrate_inplace(vel, c.dt)
        T_now = self._cfg.get_transform_frame_to_world("tool", "site").as_matrix()
        pe = float(np.linalg.norm(T_now[:3, 3] - T_base_tool[:3, 3]))
        re = rotation_angle(T_now[:3, :3], T_base_tool[:3, :3])
        return IKResult(self._cfg.q.copy(), pe < c.pos_tol and re < c.rot_tol, pe, re)

    def solve_restarts(
        self,
        T_base_tool: np.ndarray,
        seeds: list[np.ndarray],
        rng: np.random.Generator,
        restarts: int = 4,
        accept: Callable[[np.ndarray], bool] | None = None,
    ) -> IKResult | None:
        """IK from each seed, then from ``restarts`` random configurations inside the joint
        limits: the first solution within tolerance that ``accept`` (e.g. a collision check)
        takes, or None when the pose is unreachable (or reachable only where ``accept`` refuses)."""
        lo, hi = rizon.JOINT_RANGE[:, 0], rizon.JOINT_RANGE[:, 1]
        for k in range(len(seeds) + restarts):
            q0 = np.asarray(seeds[k], float) if k < len(seeds) else rng.uniform(lo, hi)
            res = self.solve(T_base_tool, q0)
            if res.ok and (accept is None or accept(res.q)):
                return res
        return None
