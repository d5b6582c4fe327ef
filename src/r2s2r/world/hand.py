"""MuJoCo model (built with ``mujoco.MjSpec``) of a human-scale 20-DoF five-finger hand.

Wuji Hand 2 class: four fingers with abduction + MCP/PIP/DIP flexion and a four-joint opposable
thumb, collision geometry from primitives (a box palm, capsule phalanges). Units are SI (m, kg,
N m) and radians.

Hand frame (the hand root body sits at the identity pose of its parent, the arm's flange):

- +z is the palm normal, pointing away from the flange; the palm surface is at z = 3 cm.
- +x is the direction the four fingers extend along the palm (palm spans x = 0..9 cm).
- The thumb sits at the palm's base on the -y side for ``side="right"``, +y for ``"left"``
  (the left hand is the exact mirror image; the same joint values give the mirrored pose).
- Fingers flex toward +z (they curl in front of the palm); finger abduction is positive toward
  the little finger. The thumb's ``_0`` swings it from the palm plane (0) to in front of the palm
  (~1.57); ``_1.._3`` curl it toward +x (toward the fingers).

Sites: ``palm_center`` is where a power-grasped object's centre sits (put it on the object's
centre; the palm then rests on the top of a ~5 cm object); ``pinch_center`` is where a ~4 cm
object sits between the thumb and index pads. Power grasps need objects at least ~4.5 cm tall
(flatter ones: use the pinch). All hand bodies have ``gravcomp=1`` (the arm carries the hand).

Hand geoms use ``contype=1, conaffinity=2``: they touch every geom with the default
``contype=conaffinity=1`` (objects, table, belt) but never each other.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

import mujoco
import numpy as np

from r2s2r.errors import ConfigError

FINGERS = ("thumb", "index", "middle", "ring", "little")
HAND_JOINTS: tuple[str, ...] = tuple(f"{f}_{i}" for f in FINGERS for i in range(4))
SIDES = ("right", "left")
GRASP_KINDS = ("power", "pinch")

# Geometry of the right hand (m, hand frame). Palm: box centre and half-extents.
PALM_POS = (0.045, 0.0, 0.0175)
PALM_HALF = (0.045, 0.0425, 0.0125)
PALM_CENTER = (0.06, -0.012, 0.055)  # grasp centre: a power-grasped object's centre
PINCH_CENTER = (0.08, -0.031, 0.102)  # where a 4 cm object sits between thumb and index pads
PALM_MASS_FRACTION = 0.5  # palm + motors; the rest is spread over the phalanges by volume
# Four fingers: MCP position, phalanx lengths (proximal, middle, distal), capsule radius.
FINGER_MCP = {
    "index": (0.090, -0.03075, 0.0215),
    "middle": (0.092, -0.01025, 0.0215),
    "ring": (0.090, 0.01025, 0.0215),
    "little": (0.085, 0.03075, 0.0215),
}
FINGER_LEN = {
    "index": (0.043, 0.024, 0.021),
    "middle": (0.045, 0.025, 0.022),
    "ring": (0.043, 0.024, 0.021),
    "little": (0.037, 0.021, 0.019),
}
FINGER_RADIUS = {"index": 0.0085, "middle": 0.0085, "ring": 0.0085, "little": 0.008}
# Thumb: CMC position; metacarpal, proximal and distal lengths; radius (shorter, thicker).
THUMB_CMC = (0.01, -0.018, 0.02)
THUMB_LEN = (0.038, 0.032, 0.027)
THUMB_RADIUS = 0.0100
PAD_TORSION = 0.005  # torsional friction length (m) of condim-4 pads: ~contact patch radius
HAND_CONTYPE, HAND_CONAFFINITY = 1, 2

_FINGER_RANGE = ((-0.3, 0.3), (-0.2, 1.6), (0.0, 1.7), (0.0, 1.4))
_THUMB_RANGE = ((0.0, 1.8), (-0.3, 1.2), (0.0, 1.0), (-0.2, 1.4))


@dataclass(frozen=True)
class HandParams:
    """Drive and contact parameters shared by all 20 joints (SI units, rad).

    ``kp`` 4 N m/rad: a joint reaches ``force_limit`` 0.15 rad past contact. The closed grasp
    targets lie 0.3-0.8 rad past contact for the MCP and thumb-base joints, so those press at
    the limit whatever the object's size (PIP/DIP at 0.1-0.6 N m), while a 1 N load on a
    fingertip deflects it only ~1 mm. ``force_limit`` 0.6 N m (a geared micro motor) gives
    10-20 N per finger pad: holding a 300 g object against g plus an 8 m/s^2 carry needs ~4 N of
    friction in all, so the grip has several-fold margin (0.3-1.0 N m all pass the carry tests).
    ``armature`` (the geared motor's reflected rotor inertia, kg m^2) sets the finger dynamics:
    with ``kv + damping`` = 0.09 the servo is damped at ~0.7 of critical, the explicit ``kv``
    term is stable at 1-2 ms steps (kv dt / I = 0.14), and MuJoCo's soft contacts and limits,
    whose stiffness scales with the effective mass, stay stiff enough (2-6 mm penetration at
    the grip forces above). ``friction`` 1.0: rubber pads; MuJoCo uses the larger of the two
    geoms' coefficients.
    """

    kp: float = 4.0  # position-servo stiffness, N m/rad
    kv: float = 0.07  # servo damping, N m s/rad
    damping: float = 0.02  # passive joint damping, N m s/rad
    force_limit: float = 0.6  # actuator torque limit, N m
    friction: float = 1.0  # sliding friction coefficient of finger/palm pads
    mass: float = 0.6  # total hand mass, kg
    armature: float = 1e-3  # reflected rotor inertia per joint, kg m^2

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, numbers.Real) or isinstance(v, bool) or not math.isfinite(v):
                raise ConfigError(f"HandParams.{f.name}={v!r}; expected a finite number")
            if v <= 0:
                raise ConfigError(f"HandParams.{f.name}={v!r}; expected a positive number")


def hand_joint_ranges() -> np.ndarray:
    """(20, 2) joint ranges (rad) in ``HAND_JOINTS`` order; identical for both sides."""
    return np.array(_THUMB_RANGE + _FINGER_RANGE * 4, dtype=float)


def _pose(thumb, index, middle, ring, little) -> np.ndarray:
    return np.array([*thumb, *index, *middle, *ring, *little], dtype=float)


def hand_open_pose() -> np.ndarray:
    """(20,) flat open hand: fingers straight and slightly spread, thumb out beside the palm."""
    return _pose((0.25, 0.0, 0.0, 0.0), (-0.1, 0, 0, 0), (0, 0, 0, 0), (0.08, 0, 0, 0), (0.16, 0, 0, 0))


_CURLED = (0.0, 1.5, 1.6, 1.2)  # a finger folded out of the way
_GRASPS = {  # kind: (pre-shape, closed)
    "power": (
        _pose(
            (0.4, -0.2, 0.2, 0.2),
            (-0.05, 0.2, 0.2, 0.1),
            (0.0, 0.2, 0.2, 0.1),
            (0.05, 0.2, 0.2, 0.1),
            (0.1, 0.2, 0.2, 0.1),
        ),
        _pose(
            (1.65, 0.8, 0.8, 0.5),
            (0.05, 1.25, 1.6, 1.3),
            (0.0, 1.25, 1.6, 1.3),
            (-0.05, 1.25, 1.6, 1.3),
            (-0.1, 1.25, 1.6, 1.3),
        ),
    ),
    "pinch": (
        _pose((1.47, -0.25, 0.5, 0.6), (0.0, 1.0, 0.0, 0.0), _CURLED, _CURLED, _CURLED),
        _pose((1.47, 0.9, 0.1, 0.0), (0.0, 1.6, 0.6, 0.3), _CURLED, _CURLED, _CURLED),
    ),
}


# Closure window (start, end) of the thumb and of the four fingers. Power: the fingers wrap the
# far side first, then the thumb closes the cage (a thumb sweeping in early shoves small objects
# sideways out of the hand).
_WINDOWS = {"power": ((0.1, 1.0), (0.0, 0.7)), "pinch": ((0.0, 1.0), (0.0, 1.0))}


def hand_grasp_pose(kind: str, closure: float) -> np.ndarray:
    """(20,) joint targets (rad) for a ``"power"`` or ``"pinch"`` grasp.

    ``closure`` in [0, 1]: 0 is the open pre-shape, 1 fully closed; the closed targets lie past
    contact with any object of the cell, so the servos squeeze. Each finger moves linearly from
    pre-shape to closed over its own closure window (power: fingers over [0, 0.7], thumb over
    [0.1, 1]). Power: palm on the object's top, ``palm_center`` at its centre. Pinch: thumb and
    index pads meet around ``pinch_center``; the other three fingers stay curled away.
    """
    if kind not in _GRASPS:
        raise ConfigError(f"grasp kind {kind!r}; expected one of {GRASP_KINDS}")
    c = closure
    if isinstance(c, bool) or not isinstance(c, numbers.Real) or not 0.0 <= c <= 1.0:
        raise ConfigError(f"grasp closure {closure!r}; expected a number in [0, 1]")
    pre, closed = _GRASPS[kind]
    (t0, t1), (f0, f1) = _WINDOWS[kind]
    s_thumb, s_finger = (min(max((c - a) / (b - a), 0.0), 1.0) for a, b in ((t0, t1), (f0, f1)))
    s = np.repeat([s_thumb] + [s_finger] * 4, 4)
    return pre + s * (closed - pre)


def _capsule_volume(length: float, radius: float) -> float:
    return math.pi * radius**2 * length + 4.0 / 3.0 * math.pi * radius**3


def add_hand(spec: mujoco.MjSpec, parent: mujoco.MjsBody, prefix: str, params: HandParams, side: str) -> mujoco.MjsBody:
    """Add the hand under ``parent`` (at identity) and return its root body ``{prefix}hand``.

    Joints and their position actuators are named ``{prefix}{suffix}`` for ``HAND_JOINTS``
    (actuators in that order, ``ctrlrange`` = joint range, ``forcerange`` = +-force_limit).
    Sites: ``{prefix}palm_center`` (power-grasp centre), ``{prefix}pinch_center`` and
    ``{prefix}{finger}_tip`` (the centre of each distal capsule's end cap). Every geom name
    starts with ``prefix``. Joint ranges follow ``spec.compiler.degree``.
    """
    if side not in SIDES:
        raise ConfigError(f"hand side {side!r}; expected one of {SIDES}")
    if not isinstance(params, HandParams):
        raise ConfigError(f"hand params {type(params).__name__}; expected HandParams")
    s = 1.0 if side == "right" else -1.0

    def pos(p):  # mirror a point of the right hand
        return [p[0], s * p[1], p[2]]

    def axis(a):  # mirror a rotation axis (a reflection flips the sense of rotations)
        return [a[0], a[1], a[2]] if s > 0 else [-a[0], a[1], -a[2]]

    thumb_links = [(THUMB_RADIUS, ln) for ln in THUMB_LEN]
    links = thumb_links + [(FINGER_RADIUS[f], ln) for f in FINGERS[1:] for ln in FINGER_LEN[f]]
    link_density = (1.0 - PALM_MASS_FRACTION) * params.mass / sum(_capsule_volume(ln, r) for r, ln in links)
    ranges = hand_joint_ranges()
    friction = [params.friction, PAD_TORSION, 1e-4]
    skin, pad = [0.25, 0.25, 0.28, 1.0], [0.15, 0.15, 0.17, 1.0]

    def geom(body, name, **kw):
        g = body.add_geom(name=prefix + name, condim=4, friction=friction, **kw)
        g.contype, g.conaffinity = HAND_CONTYPE, HAND_CONAFFINITY
        return g

    def joint(body, suffix, ax):
        i = HAND_JOINTS.index(suffix)
        body.add_joint(
            name=prefix + suffix,
            type=mujoco.mjtJoint.mjJNT_HINGE,
            axis=axis(ax),
            range=(np.degrees(ranges[i]) if spec.compiler.degree else ranges[i]).tolist(),
            limited=mujoco.mjtLimited.mjLIMITED_TRUE,
            damping=params.damping,
            armature=params.armature,
        )

    hand = parent.add_body(name=prefix + "hand", gravcomp=1.0)
    geom(
        hand,
        "palm",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=pos(PALM_POS),
        size=list(PALM_HALF),
        mass=PALM_MASS_FRACTION * params.mass,
        rgba=skin,
    )
    hand.add_site(name=prefix + "palm_center", pos=pos(PALM_CENTER), size=[0.005])
    hand.add_site(name=prefix + "pinch_center", pos=pos(PINCH_CENTER), size=[0.005])

    def chain(finger, root_pos, direction, axes, lengths, radius):
        """Three capsule links along ``direction``; ``axes[i]`` are the joint axes of link i."""
        body, parent_body, at = None, hand, root_pos
        suffixes = iter(f"{finger}_{i}" for i in range(4))
        for k, (ln, link_axes) in enumerate(zip(lengths, axes, strict=True)):
            body = parent_body.add_body(name=f"{prefix}{finger}_link{k}", pos=pos(at), gravcomp=1.0)
            for ax in link_axes:
                joint(body, next(suffixes), ax)
            end = [ln * d for d in direction]
            geom(
                body,
                f"{finger}_link{k}",
                type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                fromto=[0, 0, 0, *pos(end)],
                size=[radius, 0, 0],
                density=link_density,
                rgba=pad if k == 2 else skin,
            )
            parent_body, at = body, end
        body.add_site(name=f"{prefix}{finger}_tip", pos=pos(at), size=[0.004])

    # Thumb along -y: _0 about -x swings it up in front of the palm, _1.._3 about the base
    # frame's +z curl it toward +x (across the palm at _0 = 0, toward the fingers opposed).
    curl = (0.0, 0.0, 1.0)
    chain(
        "thumb",
        THUMB_CMC,
        (0.0, -1.0, 0.0),
        [[(-1.0, 0.0, 0.0), curl], [curl], [curl]],
        THUMB_LEN,
        THUMB_RADIUS,
    )
    flex = (0.0, -1.0, 0.0)  # +x rotates toward +z
    for f in FINGERS[1:]:
        chain(
            f,
            FINGER_MCP[f],
            (1.0, 0.0, 0.0),
            [[(0.0, 0.0, 1.0), flex], [flex], [flex]],
            FINGER_LEN[f],
            FINGER_RADIUS[f],
        )

    for i, suffix in enumerate(HAND_JOINTS):
        act = spec.add_actuator(name=prefix + suffix, target=prefix + suffix, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=params.kp, kv=params.kv)
        act.ctrlrange = ranges[i].tolist()
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.forcerange = [-params.force_limit, params.force_limit]
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    return hand
