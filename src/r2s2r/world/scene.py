"""Assemble the conveyor pick-and-sort cell as a ``mujoco.MjSpec`` from ``WorldParams``.

Names used across r2s2r (``{side}`` is ``right`` or ``left``):
bodies ``{side}_base``, ``{side}_link1..7``, ``{side}_flange``, ``{side}_hand``, ``belt``,
``object``, ``{color}_bin``, ``target``; joints/actuators ``{side}_joint1..7`` and
``{side}_{finger}_{k}`` (see ``hand.HAND_JOINTS``); cameras by ``CameraParams.name``.
Actuator order: right arm (7), right hand (20), left arm (7), left hand (20).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.geometry import R_CV_TO_MJCAM, mat_to_quat, quat_to_mat
from r2s2r.world import rizon
from r2s2r.world.hand import HAND_JOINTS, add_hand
from r2s2r.world.objects import CATALOG, COLOR_RGBA
from r2s2r.world.params import ArmParams, WorldParams
from r2s2r.world.target import Checkerboard

SIDES = ("right", "left")
BELT_PERIOD = 0.05  # belt texture period and wrap distance, m
LINK_RADIUS = (0.065, 0.06, 0.055, 0.055, 0.05, 0.05, 0.045)
# Collision bits. Default geoms (contype 1, conaffinity 1) collide with each other; hand geoms
# (contype 1, conaffinity 2) touch anything but each other; the moving belt (2, 4) touches only
# objects and hands, never the static cell it slides through (bins, rails, frame); objects
# (1, 1|2) touch everything.
BELT_CONTYPE, BELT_CONAFFINITY = 2, 4
OBJECT_CONAFFINITY = 1 | 2
_GEOM = mujoco.mjtGeom


def arm_joint_names(side: str) -> list[str]:
    return [f"{side}_joint{i + 1}" for i in range(rizon.N_JOINTS)]


def hand_joint_names(side: str) -> list[str]:
    return [f"{side}_{j}" for j in HAND_JOINTS]


def actuator_names() -> list[str]:
    names = []
    for side in SIDES:
        names += arm_joint_names(side) + hand_joint_names(side)
    return names


@dataclass(frozen=True)
class TargetMount:
    """Where a calibration target is mounted: on a flange (``parent="right_flange"`` ...) or
    at a fixture in the world (``parent="world"``); ``pos``/``quat`` give T_parent_target."""

    board: Checkerboard
    parent: str
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if self.parent not in ("world", "right_flange", "left_flange"):
            raise ConfigError(
                f"target mount: expected parent 'world', 'right_flange' or 'left_flange', got {self.parent!r}"
            )


def _add_arm(spec: mujoco.MjSpec, side: str, arm: ArmParams, hand_params) -> None:
    base = spec.worldbody.add_body(name=f"{side}_base", pos=list(arm.base.pos), quat=list(arm.base.quat))
    base.add_geom(
        name=f"{side}_base_geom",
        type=_GEOM.mjGEOM_CYLINDER,
        size=[0.07, 0.04],
        pos=[0, 0, 0.04],
        rgba=[0.8, 0.8, 0.82, 1],
    )
    parent = base
    for i in range(rizon.N_JOINTS):
        body = parent.add_body(name=f"{side}_link{i + 1}", pos=list(arm.link_pos[i]), quat=list(rizon.LINK_QUAT[i]))
        body.gravcomp = 1.0
        lo, hi = rizon.JOINT_RANGE[i]
        body.add_joint(
            name=f"{side}_joint{i + 1}",
            type=mujoco.mjtJoint.mjJNT_HINGE,
            axis=list(rizon.JOINT_AXIS[i]),
            range=[lo, hi],
            ref=-arm.joint_zero[i],
            damping=arm.damping[i],
            frictionloss=arm.friction[i],
            armature=arm.armature[i],
            actgravcomp=True,
        )
        child = arm.link_pos[i + 1] if i + 1 < rizon.N_JOINTS else arm.flange_pos
        end = np.asarray(child, float)
        if i == rizon.N_JOINTS - 1:  # stop short of the flange so the hand can sit on it
            end = end * max(0.0, 1 - LINK_RADIUS[i] / np.linalg.norm(end))
        body.add_geom(
            name=f"{side}_link{i + 1}_geom",
            type=_GEOM.mjGEOM_CAPSULE,
            size=[LINK_RADIUS[i], 0, 0],
            fromto=[0, 0, 0, *end],
            mass=arm.link_mass[i],
            rgba=[0.85, 0.86, 0.88, 1] if i % 2 == 0 else [0.3, 0.32, 0.35, 1],
        )
        parent = body
    flange = parent.add_body(name=f"{side}_flange", pos=list(arm.flange_pos))
    flange.gravcomp = 1.0
    flange.add_site(name=f"{side}_flange_site", size=[0.005, 0, 0])
    for i in range(rizon.N_JOINTS):
        act = spec.add_actuator(
            name=f"{side}_joint{i + 1}", target=f"{side}_joint{i + 1}", trntype=mujoco.mjtTrn.mjTRN_JOINT
        )
        act.set_to_position(kp=arm.kp[i], kv=arm.kv[i])
        act.ctrlrange = list(rizon.JOINT_RANGE[i])
        act.ctrllimited = True
        act.forcerange = [-rizon.TORQUE_LIMIT[i], rizon.TORQUE_LIMIT[i]]
        act.forcelimited = True
        act.delay = arm.delay
        act.nsample = math.ceil(arm.delay / spec.option.timestep) + 2 if arm.delay > 0 else 0
    add_hand(spec, flange, f"{side}_", hand_params, side)
    spec.add_exclude(bodyname1=f"{side}_link7", bodyname2=f"{side}_hand")
    spec.add_exclude(bodyname1=f"{side}_link6", bodyname2=f"{side}_hand")


def _add_conveyor(spec: mujoco.MjSpec, params: WorldParams) -> None:
    c = params.conveyor
    frame = spec.worldbody.add_body(name="conveyor", pos=list(c.pose.pos), quat=list(c.pose.quat))
    half_l, half_w = c.length / 2, c.width / 2
    grey = [0.45, 0.47, 0.5, 1]
    frame.add_geom(
        name="conveyor_bed", type=_GEOM.mjGEOM_BOX, size=[half_l, half_w + 0.02, 0.05], pos=[0, 0, -0.07], rgba=grey
    )
    for s in (-1, 1):
        frame.add_geom(
            name=f"conveyor_rail{'lr'[s > 0]}",
            type=_GEOM.mjGEOM_BOX,
            size=[half_l, 0.01, 0.045],
            pos=[0, s * (half_w + 0.01), -0.03],
            rgba=grey,
        )
        frame.add_geom(
            type=_GEOM.mjGEOM_CYLINDER,
            size=[0.03, half_w],
            pos=[s * half_l, 0, -0.03],
            quat=[0.7071068, 0.7071068, 0, 0],
            rgba=[0.2, 0.2, 0.2, 1],
            contype=0,
            conaffinity=0,
        )
    for sx in (-1, 1):
        for sy in (-1, 1):
            frame.add_geom(
                type=_GEOM.mjGEOM_BOX,
                size=[0.02, 0.02, (c.pose.pos[2] - 0.12) / 2],
                pos=[sx * (half_l - 0.05), sy * half_w, -0.12 - (c.pose.pos[2] - 0.12) / 2],
                rgba=grey,
                contype=0,
                conaffinity=0,
            )
    spec.add_texture(
        name="belt_tex",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=[0.16, 0.16, 0.17],
        rgb2=[0.27, 0.27, 0.28],
        width=64,
        height=64,
    )
    mat = spec.add_material(name="belt_mat", texrepeat=[1 / BELT_PERIOD, 1 / BELT_PERIOD], texuniform=True)
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "belt_tex"
    belt = frame.add_body(name="belt")
    belt.add_joint(name="belt_slide", type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[1, 0, 0], armature=1e3)
    # The belt surface spans [-L/2 - P + s, L/2 + s] for slide position s in [0, P): the conveyor
    # is always covered, and wrapping s by one texture period P is invisible to cameras and contacts.
    belt.add_geom(
        name="belt_surface",
        type=_GEOM.mjGEOM_BOX,
        size=[half_l + BELT_PERIOD / 2, half_w, 0.01],
        pos=[-BELT_PERIOD / 2, 0, -0.01],
        material="belt_mat",
        friction=[c.friction, 0.005, 0.0001],
        contype=BELT_CONTYPE,
        conaffinity=BELT_CONAFFINITY,
    )


def _add_bins(spec: mujoco.MjSpec, params: WorldParams) -> None:
    wall = 0.008
    for b in params.bins:
        body = spec.worldbody.add_body(name=f"{b.color}_bin", pos=list(b.pose.pos), quat=list(b.pose.quat))
        lx, ly, depth = b.size[0] / 2, b.size[1] / 2, b.size[2]
        rgba = list(COLOR_RGBA[b.color][:3]) + [1.0]
        body.add_geom(
            name=f"{b.color}_bin_floor",
            type=_GEOM.mjGEOM_BOX,
            size=[lx + wall, ly + wall, wall / 2],
            pos=[0, 0, -wall / 2],
            rgba=[0.3, 0.3, 0.3, 1],
        )
        for k, (px, py, sx, sy) in enumerate(
            (
                (lx + wall / 2, 0, wall / 2, ly + wall),
                (-lx - wall / 2, 0, wall / 2, ly + wall),
                (0, ly + wall / 2, lx, wall / 2),
                (0, -ly - wall / 2, lx, wall / 2),
            )
        ):
            body.add_geom(
                name=f"{b.color}_bin_wall{k}",
                type=_GEOM.mjGEOM_BOX,
                size=[sx, sy, depth / 2],
                pos=[px, py, depth / 2],
                rgba=rgba,
            )
        body.add_geom(
            type=_GEOM.mjGEOM_BOX,
            size=[lx, ly, (b.pose.pos[2] - wall) / 2],
            pos=[0, 0, -wall - (b.pose.pos[2] - wall) / 2],
            rgba=[0.4, 0.4, 0.42, 1],
        )


def object_geom(name: str) -> dict:
    """Collision geometry of a catalog object in its body frame (origin at its centre, z up as it
    rests): ``type``, ``size`` and ``quat`` keyword arguments for ``MjsBody.add_geom``."""
    cat = CATALOG[name]
    shape = {
        "box": _GEOM.mjGEOM_BOX,
        "cylinder": _GEOM.mjGEOM_CYLINDER,
        "sphere": _GEOM.mjGEOM_SPHERE,
        "capsule": _GEOM.mjGEOM_CAPSULE,
        "ellipsoid": _GEOM.mjGEOM_ELLIPSOID,
    }[cat.shape]
    size = list(cat.size) + [0.0] * (3 - len(cat.size))
    quat = [0.7071068, 0, 0.7071068, 0] if cat.shape == "capsule" else [1, 0, 0, 0]  # capsules lie down
    return {"type": shape, "size": size, "quat": quat}


def _add_object(spec: mujoco.MjSpec, params: WorldParams, name: str) -> None:
    cat = CATALOG[name]
    phys = params.object(name)
    body = spec.worldbody.add_body(name="object", pos=[0.0, 0.0, 0.0])
    body.add_freejoint(name="object_free")
    body.add_geom(
        name="object",
        **object_geom(name),
        mass=phys.mass,
        rgba=list(COLOR_RGBA[cat.color]),
        friction=[phys.friction, 0.01, 0.0005],
        condim=4,
        contype=1,
        conaffinity=OBJECT_CONAFFINITY,
    )


def _add_cameras(spec: mujoco.MjSpec, params: WorldParams) -> None:
    for cam in params.cameras:
        parent = spec.worldbody if cam.parent == "world" else spec.body(cam.parent)
        R = quat_to_mat(cam.pose.quat) @ R_CV_TO_MJCAM
        parent.add_camera(name=cam.name, pos=list(cam.pose.pos), quat=list(mat_to_quat(R)), fovy=60.0)


def _add_target(spec: mujoco.MjSpec, mount: TargetMount) -> None:
    parent = spec.worldbody if mount.parent == "world" else spec.body(mount.parent)
    body = parent.add_body(name="target", pos=list(mount.pos), quat=list(mount.quat))
    mount.board.add_to(body, "target_")


def build_spec(params: WorldParams, object_name: str, target: TargetMount | None = None) -> mujoco.MjSpec:
    """The whole cell with one object (by catalog name) and an optional calibration target."""
    params.object(object_name)  # raises UnknownNameError for a bad name
    spec = mujoco.MjSpec()
    spec.modelname = "r2s2r_cell"
    spec.compiler.degree = False  # every angle in r2s2r is in radians
    ph = params.physics
    spec.option.timestep = ph.timestep
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = ph.impratio
    spec.option.noslip_iterations = ph.noslip_iterations
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.visual.quality.shadowsize = params.render.shadowsize
    spec.visual.quality.offsamples = params.render.offsamples
    spec.visual.quality.numslices = params.render.numslices
    spec.visual.quality.numstacks = params.render.numstacks
    spec.visual.global_.offwidth = 1440
    spec.visual.global_.offheight = 1440
    spec.visual.headlight.active = True
    lt = params.lighting
    spec.visual.headlight.ambient = [lt.ambient] * 3
    spec.visual.headlight.diffuse = [0.0] * 3
    spec.visual.headlight.specular = [0.0] * 3
    spec.worldbody.add_light(
        name="key",
        type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
        pos=[0.4, 0, 2.5],
        dir=list(lt.key_dir),
        diffuse=[lt.key_diffuse * c for c in lt.key_color],
        specular=[0.15] * 3,
        castshadow=True,
    )
    spec.worldbody.add_geom(name="floor", type=_GEOM.mjGEOM_PLANE, size=[3, 3, 0.05], rgba=[0.55, 0.55, 0.52, 1])
    spec.worldbody.add_geom(
        name="pedestal",
        type=_GEOM.mjGEOM_BOX,
        size=[0.16, 0.42, 0.39],
        pos=[-0.02, 0.0, 0.39],
        rgba=[0.25, 0.27, 0.3, 1],
    )
    spec.worldbody.add_geom(
        name="mast",
        type=_GEOM.mjGEOM_CYLINDER,
        size=[0.02, 0.3],
        pos=[-0.16, 0, 1.1],
        rgba=[0.25, 0.27, 0.3, 1],
        contype=0,
        conaffinity=0,
    )
    for side in SIDES:
        _add_arm(spec, side, getattr(params, f"{side}_arm"), getattr(params, f"{side}_hand"))
    _add_conveyor(spec, params)
    _add_bins(spec, params)
    _add_object(spec, params, object_name)
    _add_cameras(spec, params)
    if target is not None:
        _add_target(spec, target)
    for g in spec.geoms:
        g.solref = list(ph.solref)
        g.solimp = [*ph.solimp, 0.5, 2.0]
    return spec
