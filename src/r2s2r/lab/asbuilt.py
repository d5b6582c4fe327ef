"""Draw a cell "as built": how a real cell differs from its spec sheet, from a seed.

Magnitudes follow what labs see (DESIGN.md section 2): cameras off by cm and degrees, focal
lengths by a few percent, real distortion, blur and noise; joint zero offsets of tenths of a
degree and sub-millimetre link errors; PD gains off by up to +-30 %, 20-40 ms actuation delay;
conveyor and bins off by cm and degrees; belt speed scale off by a few percent; masses off by
tens of percent; finer physics and richer rendering than any simulator copy.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from r2s2r.geometry import axis_angle_quat, quat_mul
from r2s2r.lab.real_cell import KinematicCalibration
from r2s2r.world.camera import ImageEffects
from r2s2r.world.params import (
    ArmParams,
    CameraParams,
    ObjectParams,
    PhysicsParams,
    Pose,
    RenderParams,
    WorldParams,
)


def _tup(a) -> tuple:
    return tuple(float(x) for x in np.asarray(a).ravel())


def _perturb_pose(
    pose: Pose,
    rng: np.random.Generator,
    pos_std: float,
    pos_max: float,
    rot_std_deg: float,
    rot_max_deg: float,
    planar: bool = False,
) -> Pose:
    dp = np.clip(rng.normal(0.0, pos_std, 3), -pos_max, pos_max)
    if planar:
        dp[2] *= 0.2
        axis = np.array([0.0, 0.0, 1.0])
    else:
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
    angle = math.radians(float(np.clip(rng.normal(0.0, rot_std_deg), -rot_max_deg, rot_max_deg)))
    q = quat_mul(axis_angle_quat(axis, angle), pose.quat)  # rotate about the parent's axes
    return Pose(_tup(np.asarray(pose.pos) + dp), _tup(q / np.linalg.norm(q)))


def _camera(cam: CameraParams, rng: np.random.Generator) -> CameraParams:
    lens = cam.lens
    f = lens.fx * (1 + float(np.clip(rng.normal(0, 0.02), -0.04, 0.04)))
    if lens.kind == "pinhole":
        dist = (rng.uniform(-0.12, 0.02), rng.uniform(-0.02, 0.08), rng.normal(0, 8e-4), rng.normal(0, 8e-4), 0.0)
        pose = _perturb_pose(cam.pose, rng, 0.01, 0.025, 1.0, 2.5)
    else:
        dist = (
            rng.uniform(-0.04, 0.06),
            rng.uniform(-0.02, 0.02),
            rng.uniform(-0.005, 0.005),
            rng.uniform(-0.002, 0.002),
        )
        pose = _perturb_pose(cam.pose, rng, 0.004, 0.008, 1.0, 2.0)  # wrist mount offsets
    lens = dataclasses.replace(
        lens,
        fx=f,
        fy=f * (1 + rng.normal(0, 0.002)),
        cx=lens.cx + float(np.clip(rng.normal(0, 5), -12, 12)),
        cy=lens.cy + float(np.clip(rng.normal(0, 5), -12, 12)),
        dist=_tup(dist),
    )
    effects = ImageEffects(
        blur_sigma=float(rng.uniform(0.6, 1.5)),
        noise_std=float(rng.uniform(1.5, 4.0)),
        wb_gains=_tup(rng.uniform(0.85, 1.15, 3)),
        gain=float(rng.uniform(0.9, 1.1)),
        vignetting=float(rng.uniform(0.1, 0.35)),
    )
    return dataclasses.replace(cam, lens=lens, pose=pose, effects=effects)


def _arm(arm: ArmParams, rng: np.random.Generator) -> ArmParams:
    def scale(values, lo, hi):
        return _tup(np.asarray(values) * rng.uniform(lo, hi, len(values)))

    return dataclasses.replace(
        arm,
        base=_perturb_pose(arm.base, rng, 0.003, 0.006, 0.3, 0.6, planar=True),
        link_pos=tuple(_tup(np.asarray(p) + rng.normal(0, 8e-4, 3)) for p in arm.link_pos),
        flange_pos=_tup(np.asarray(arm.flange_pos) + rng.normal(0, 5e-4, 3)),
        joint_zero=_tup(np.clip(rng.normal(0, 0.004, 7), -0.01, 0.01)),
        kp=scale(arm.kp, 0.7, 1.3),
        kv=scale(arm.kv, 0.7, 1.3),
        damping=_tup(rng.uniform(0.5, 3.0, 7)),
        friction=_tup(rng.uniform(0.2, 1.5, 7)),
        armature=scale(arm.armature, 0.85, 1.15),
        link_mass=scale(arm.link_mass, 0.95, 1.05),
        delay=float(rng.uniform(0.02, 0.04)),
    )


def draw_as_built(nominal: WorldParams, rng: np.random.Generator) -> WorldParams:
    """Hidden as-built parameters of a lab twin around ``nominal``."""
    hand = nominal.right_hand
    hands = [
        dataclasses.replace(hand, kp=hand.kp * rng.uniform(0.85, 1.15), damping=hand.damping * rng.uniform(0.8, 1.2))
        for _ in range(2)
    ]
    lt = nominal.lighting
    key_dir = np.asarray(lt.key_dir) + rng.normal(0, 0.08, 3) * [1, 1, 0]
    return dataclasses.replace(
        nominal,
        cameras=tuple(_camera(c, rng) for c in nominal.cameras),
        right_arm=_arm(nominal.right_arm, rng),
        left_arm=_arm(nominal.left_arm, rng),
        right_hand=hands[0],
        left_hand=hands[1],
        conveyor=dataclasses.replace(
            nominal.conveyor,
            pose=_perturb_pose(nominal.conveyor.pose, rng, 0.012, 0.03, 1.0, 2.0, planar=True),
            speed_scale=float(rng.uniform(0.95, 1.05)),
            friction=float(rng.uniform(0.8, 1.2)),
        ),
        bins=tuple(
            dataclasses.replace(b, pose=_perturb_pose(b.pose, rng, 0.012, 0.025, 1.5, 3.0, planar=True))
            for b in nominal.bins
        ),
        objects=tuple(
            ObjectParams(o.name, mass=o.mass * float(rng.uniform(0.7, 1.35)), friction=float(rng.uniform(0.7, 1.1)))
            for o in nominal.objects
        ),
        lighting=dataclasses.replace(
            lt,
            key_dir=_tup(key_dir),
            key_diffuse=lt.key_diffuse * rng.uniform(0.85, 1.15),
            key_color=_tup(rng.uniform(0.92, 1.05, 3)),
            ambient=lt.ambient * rng.uniform(0.85, 1.15),
        ),
        physics=PhysicsParams(
            timestep=0.001, solref=(0.008, 1.1), solimp=(0.95, 0.99, 0.0005), impratio=20.0, noslip_iterations=2
        ),
        render=RenderParams(shadowsize=1024, offsamples=2, numslices=16, numstacks=8),
    )


def factory_file(truth: ArmParams, side: str, rng: np.random.Generator) -> KinematicCalibration:
    """The maker's kinematic calibration: the true kinematics up to 0.1 mm and 0.02 deg."""
    return KinematicCalibration(
        side=side,
        link_pos=tuple(_tup(np.asarray(p) + rng.normal(0, 1e-4, 3)) for p in truth.link_pos),
        flange_pos=_tup(np.asarray(truth.flange_pos) + rng.normal(0, 1e-4, 3)),
        joint_zero=_tup(np.asarray(truth.joint_zero) + rng.normal(0, 3e-4, 7)),
    )
