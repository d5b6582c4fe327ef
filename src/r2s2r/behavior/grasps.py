"""Grasp proposals for the five-finger hand: sampled, refined against the object's surface, scored.

A CPU stand-in for a learned grasp generator (GraspGen): the interface is ``GraspSampler.grasps
(object_name) -> ranked Grasps``; a learned model can replace the sampling and keep the rest.

Frames. The *object frame* is the object's body frame: origin at its centre, +z up as it rests on
the belt, whose surface is the plane z = -rest_height. A grasp's pose ``T_object_hand`` is the hand
root frame in the object frame; the hand root is the arm's flange frame (``world/hand.py``: +z the
palm normal, +x the direction the fingers extend, thumb on the -y side). The hand approaches along
its own +z (the palm normal), from the pre-grasp ``standoff`` metres back along -z.

Candidates. Two closures (``power``: all five fingers wrap with the palm on the object;
``pinch``: thumb against index, the others curled away) and three approach families: ``top``
(palm down), ``oblique`` (tilted 45 deg, about the finger axis or across it, either way) and
``side`` (palm normal horizontal), at hand yaws on a grid over one period of the object's
rotational symmetry about its z axis.

Refinement and score. The hand's kinematic model closes along ``hand_grasp_pose`` and each
finger stops where it first meets the object's surface (the servos stall there). Scored terms:
how many fingers meet the surface (of five), the antipodal margin of the best thumb/finger pair
(the segment between the two contacts inside both friction cones: Nguyen's two-contact force
closure, margin 1 - worst angle / cone half-angle), palm support (power: palm-surface gap),
clearance of the hand from the belt plane during the approach and closure, and lift capacity (per
unit grip force, the upward force each contact's friction cone can give, averaged: fingers under
an edge or on a side lift, fingers on a top surface only press the object into the belt), and
simultaneity (the thumb and the opposing fingers reach the surface at nearly the same closure: a
side that touches first shoves the object across the belt until the other side arrives). A pattern
search over the hand position (hand frame) maximises the score. Poses whose hand penetrates the
object before closing, whose open hand meets the belt on the approach, whose fingers would press
more than ``max_press`` into the belt, power grasps whose palm is more than ``max_palm_gap`` off
the object, and poses without a force-closure pair are rejected.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import mujoco
import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.geometry import axis_angle_quat, make_T, quat_to_mat, split_T
from r2s2r.shared_work import SharedWork
from r2s2r.world.hand import FINGERS, GRASP_KINDS, PALM_CENTER, PINCH_CENTER, HandParams, add_hand, hand_grasp_pose
from r2s2r.world.objects import CATALOG
from r2s2r.world.scene import object_geom

APPROACHES = ("top", "oblique", "side")
PALM_DOWN = np.diag([1.0, -1.0, -1.0])  # hand axes in the object frame: palm down, fingers along +x
_ACTIVE = {"power": FINGERS, "pinch": ("thumb", "index")}
_CENTER = {"power": PALM_CENTER, "pinch": PINCH_CENTER}


@dataclass(frozen=True)
class GraspConfig:
    """Sampling, refinement and scoring of grasps. Lengths in m, angles in rad."""

    kinds: tuple[str, ...] = GRASP_KINDS
    approaches: tuple[str, ...] = APPROACHES
    yaw_step: float = math.radians(15.0)  # hand yaw grid over one symmetry period
    closure_steps: int = 20  # closure sweep resolution (then bisected to the first contact)
    contact_tol: float = 0.001  # a finger meets the surface within this distance
    friction: float = 1.0  # pad-object friction: the cone half-angle is atan(friction)
    palm_gaps: tuple[float, ...] = (0.004, 0.009)  # power seeds: palm this far from the object's surface
    max_palm_gap: float = 0.01  # a power grasp closes with the palm on the object (hand.py)
    standoff: float = 0.08  # pre-grasp distance back along the approach, checked clear
    min_clearance: float = 0.001  # the open hand's least height above the belt plane on the approach
    max_press: float = 0.022  # fingers may press this deep into the belt while closing (they slide on it)
    refine_top: int = 6  # best seeds per (kind, approach) refined
    refine_step: float = 0.006  # first step of the pattern search
    refine_rounds: int = 3  # step halvings
    push_window: float = 0.15  # closure lag between thumb and fingers that scores zero simultaneity
    weights: tuple[float, ...] = (1.0, 1.0, 0.5, 0.25, 1.5, 1.0)  # fingers, antipodal, palm, clearance, lift, together

    def __post_init__(self) -> None:
        bad_kind = set(self.kinds) - set(GRASP_KINDS)
        bad_app = set(self.approaches) - set(APPROACHES)
        if not self.kinds or bad_kind:
            raise ConfigError(f"grasps.kinds: expected a subset of {GRASP_KINDS}, got {self.kinds}")
        if not self.approaches or bad_app:
            raise ConfigError(f"grasps.approaches: expected a subset of {APPROACHES}, got {self.approaches}")
        if not 0 < self.yaw_step <= math.pi or self.closure_steps < 2 or self.refine_top < 1:
            raise ConfigError("grasps: yaw_step in (0, pi], closure_steps >= 2 and refine_top >= 1 expected")


@dataclass(frozen=True, eq=False)
class Grasp:
    """One refined, scored grasp. ``T_object_hand``: the hand root (flange) frame in the object frame."""

    T_object_hand: np.ndarray
    kind: str  # "power" | "pinch"
    approach: str  # "top" | "oblique" | "side"
    score: float
    fingers: int  # fingers that meet the surface before full closure
    antipodal: float  # force-closure margin of the best thumb/finger pair, <= 1
    palm_gap: float  # palm-surface distance before closing, m
    clearance: float  # least hand-belt distance during approach and closure, m
    closures: tuple[float, ...] = field(default=(1.0,) * 5)  # per finger: closure at first contact (1: none)
    lift: float = 0.0  # upward force the contacts' friction cones can give per unit grip force
    symmetry: int = 1  # object's rotational symmetry order about its z (0: any angle)

    @property
    def approach_dir(self) -> np.ndarray:
        """Unit approach direction (the palm normal) in the object frame."""
        return self.T_object_hand[:3, 2].copy()

    def pregrasp(self, distance: float) -> np.ndarray:
        """T_object_hand backed ``distance`` m off along the approach."""
        T = self.T_object_hand.copy()
        T[:3, 3] -= distance * T[:3, 2]
        return T

    def about_z(self, angle: float) -> Grasp:
        """The same grasp turned by ``angle`` about the object's z; an equivalent grasp when the
        angle is a multiple of the symmetry period (any angle when ``symmetry`` is 0)."""
        R = make_T((0.0, 0.0, 0.0), axis_angle_quat((0, 0, 1), angle))
        return replace(self, T_object_hand=R @ self.T_object_hand)

    def equivalent_angles(self, step: float) -> np.ndarray:
        """Angles about the object's z giving equivalent grasps (``step`` apart if continuous)."""
        n = self.symmetry
        return np.arange(0.0, 2 * math.pi - 1e-9, step if n == 0 else 2 * math.pi / n)


def symmetry_order(object_name: str) -> int:
    """Rotational symmetry order of a catalog object about its resting z axis (0: continuous)."""
    cat = CATALOG[object_name]
    s = cat.size
    if cat.shape in ("cylinder", "sphere"):
        return 0
    if cat.shape == "box":
        return 4 if abs(s[0] - s[1]) < 1e-9 else 2
    if cat.shape == "ellipsoid":
        return 0 if abs(s[0] - s[1]) < 1e-9 else 2
    return 2  # a capsule lying along x


def _orientations(approach: str) -> list[np.ndarray]:
    """Hand rotations (object frame) of one approach family before the yaw about z."""
    if approach == "top":
        return [PALM_DOWN]
    tilt = math.pi / 4 if approach == "oblique" else math.pi / 2
    out = []
    for axis in ((1, 0, 0), (0, 1, 0)):  # about the finger axis (palm turns sideways) or across it
        for sign in (1, -1):
            out.append(quat_to_mat(axis_angle_quat(axis, sign * tilt)) @ PALM_DOWN)
    return out


class _HandProbe:
    """Kinematic model of the hand (on a mocap mount) around one object resting on the belt plane."""

    def __init__(self, object_name: str) -> None:
        cat = CATALOG[object_name]
        spec = mujoco.MjSpec()
        spec.compiler.degree = False
        mount = spec.worldbody.add_body(name="mount", mocap=True)
        add_hand(spec, mount, "", HandParams(), "right")
        spec.worldbody.add_geom(name="object", **object_geom(object_name))
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.belt_z = -cat.rest_height
        self.obj = m.geom("object").id
        self.finger_geoms = {f: [m.geom(f"{f}_link{k}").id for k in range(3)] for f in FINGERS}
        self.palm = m.geom("palm").id
        self.hand_geoms = [g for g in range(m.ngeom) if g != self.obj]
        self._fromto = np.zeros(6)

    def set(self, T_object_hand: np.ndarray, hand_q: np.ndarray) -> None:
        pos, quat = split_T(T_object_hand)
        self.data.mocap_pos[0], self.data.mocap_quat[0] = pos, quat
        self.data.qpos[:] = hand_q
        mujoco.mj_kinematics(self.model, self.data)

    def dist(self, g: int) -> float:
        return mujoco.mj_geomDistance(self.model, self.data, g, self.obj, 0.2, self._fromto)

    def contact_normal(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        """(point on the object, outward unit normal there) nearest to hand geom ``g``."""
        self.dist(g)
        p_hand, p_obj = self._fromto[:3].copy(), self._fromto[3:].copy()
        n = p_hand - p_obj
        norm = np.linalg.norm(n)
        return p_obj, (n / norm if norm > 1e-9 else p_obj / max(np.linalg.norm(p_obj), 1e-9))

    def belt_clearance(self, geoms: list[int] | None = None) -> float:
        """Least height of the hand geoms (all by default) above the belt plane (negative: below), m."""
        m, d = self.model, self.data
        low = math.inf
        for g in self.hand_geoms if geoms is None else geoms:
            R, c, s = d.geom_xmat[g].reshape(3, 3), d.geom_xpos[g], m.geom_size[g]
            if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE:
                z = c[2] - abs(R[2, 2]) * s[1] - s[0]
            else:  # the palm box
                z = c[2] - float(np.abs(R[2]) @ s)
            low = min(low, z)
        return low - self.belt_z


@dataclass
class _Eval:
    score: float
    fingers: int = 0
    antipodal: float = -1.0
    palm_gap: float = math.inf
    clearance: float = -math.inf
    closures: tuple[float, ...] = (1.0,) * 5
    lift: float = 0.0


_REJECT = _Eval(-math.inf)


class GraspSampler:
    """Ranked grasps per catalog object (computed once per object and kept by this sampler; with a
    ``shared`` folder, once per object among the processes sharing it: ``r2s2r.shared_work``)."""

    def __init__(self, config: GraspConfig = GraspConfig(), shared: Path | None = None) -> None:
        self.config = config
        self._probes: dict[str, _HandProbe] = {}
        self._ranked: dict[str, tuple[Grasp, ...]] = {}
        self._work = SharedWork(shared)
        self._key = hashlib.sha256(repr(config).encode()).hexdigest()[:12]

    def _probe(self, object_name: str) -> _HandProbe:
        if object_name not in CATALOG:
            raise ConfigError(f"grasps: unknown object {object_name!r}; expected one of {sorted(CATALOG)}")
        if object_name not in self._probes:
            self._probes[object_name] = _HandProbe(object_name)
        return self._probes[object_name]

    def grasps(self, object_name: str) -> tuple[Grasp, ...]:
        """Refined grasps of ``object_name``, best score first (rejected poses left out)."""
        if object_name not in self._ranked:
            name = f"grasps-{self._key}-{object_name}"
            self._ranked[object_name] = self._work.map([name], lambda _: self._propose(object_name))[name]
        return self._ranked[object_name]

    def evaluate(self, object_name: str, T_object_hand: np.ndarray, kind: str, approach: str = "top") -> Grasp | None:
        """Score one hand pose as it is (no refinement); None if it is rejected."""
        e = self._evaluate(self._probe(object_name), np.asarray(T_object_hand, float), kind)
        return None if e.score == -math.inf else self._grasp(object_name, T_object_hand, kind, approach, e)

    def _grasp(self, name: str, T: np.ndarray, kind: str, approach: str, e: _Eval) -> Grasp:
        return Grasp(
            T_object_hand=np.array(T, float),
            kind=kind,
            approach=approach,
            score=float(e.score),
            fingers=e.fingers,
            antipodal=float(e.antipodal),
            palm_gap=float(e.palm_gap),
            clearance=float(e.clearance),
            closures=e.closures,
            lift=e.lift,
            symmetry=symmetry_order(name),
        )

    def seed_poses(self, object_name: str, kind: str, R_object_hand: np.ndarray) -> list[np.ndarray]:
        """Closure centre on the object's centre; power seeds slide back along the approach until
        the palm is each of ``palm_gaps`` off the surface."""
        T = np.eye(4)
        T[:3, :3] = R_object_hand
        T[:3, 3] = -R_object_hand @ np.asarray(_CENTER[kind])
        if kind != "power":
            return [T]
        probe = self._probe(object_name)
        probe.set(T, hand_grasp_pose(kind, 0.0))
        gap = probe.dist(probe.palm)
        out = []
        for want in self.config.palm_gaps:
            Tg = T.copy()
            Tg[:3, 3] -= (want - gap) * R_object_hand[:, 2]
            out.append(Tg)
        return out

    def _propose(self, name: str) -> tuple[Grasp, ...]:
        c = self.config
        probe = self._probe(name)
        n = symmetry_order(name)
        period = 2 * math.pi / n if n else c.yaw_step
        yaws = np.arange(0.0, period - 1e-9, c.yaw_step)
        out: list[Grasp] = []
        for kind in c.kinds:
            for approach in c.approaches:
                seeds = []
                for R0 in _orientations(approach):
                    for yaw in yaws:
                        R = quat_to_mat(axis_angle_quat((0, 0, 1), yaw)) @ R0
                        for T in self.seed_poses(name, kind, R):
                            seeds.append((self._evaluate(probe, T, kind).score, len(seeds), T))
                seeds.sort(key=lambda s: (-s[0], s[1]))
                for score, _, T in seeds[: c.refine_top]:
                    if score == -math.inf:
                        break
                    T, e = self._refine(probe, T, kind, score)
                    out.append(self._grasp(name, T, kind, approach, e))
        out.sort(key=lambda g: -g.score)
        return tuple(out)

    def _refine(self, probe: _HandProbe, T: np.ndarray, kind: str, score: float) -> tuple[np.ndarray, _Eval]:
        """Pattern search over the hand position along its own axes (step halving)."""
        c = self.config
        best_T, best = T, self._evaluate(probe, T, kind)
        step = c.refine_step
        for _ in range(c.refine_rounds):
            improved = True
            while improved:
                improved = False
                for axis in range(3):
                    for sign in (1.0, -1.0):
                        cand = best_T.copy()
                        cand[:3, 3] += sign * step * best_T[:3, axis]
                        e = self._evaluate(probe, cand, kind)
                        if e.score > best.score + 1e-6:
                            best_T, best, improved = cand, e, True
            step /= 2
        return best_T, best

    def _evaluate(self, probe: _HandProbe, T: np.ndarray, kind: str) -> _Eval:
        c = self.config
        pre = hand_grasp_pose(kind, 0.0)
        clearance = math.inf
        for back in (c.standoff, c.standoff / 2, 0.0):  # the approach: clear of object and belt
            Tb = T.copy()
            Tb[:3, 3] -= back * T[:3, 2]
            probe.set(Tb, pre)
            clearance = min(clearance, probe.belt_clearance())
            if clearance < c.min_clearance or min(probe.dist(g) for g in probe.hand_geoms) <= 0.0:
                return _REJECT
        palm_gap = probe.dist(probe.palm)
        if kind == "power" and palm_gap > c.max_palm_gap:
            return _REJECT
        closures, contacts, hand_q, pressed = self._close(probe, T, kind)
        if pressed < -c.max_press:
            return _REJECT
        clearance = min(clearance, pressed)
        probe.set(T, hand_q)
        idle = [g for f in FINGERS if f not in _ACTIVE[kind] for g in probe.finger_geoms[f]] + [probe.palm]
        if probe.belt_clearance(idle) < c.min_clearance or min(probe.dist(g) for g in idle) <= 0.0:
            return _REJECT
        antipodal = self._antipodal(contacts)
        if antipodal <= 0.0:
            return _REJECT
        # Lift capacity: per unit grip force, the most upward force each contact's friction cone can
        # give (pushing on a downward-facing surface lifts, a top surface pushes down), averaged.
        mu = c.friction
        lift = float(np.mean([-n[2] + mu * math.sqrt(max(1.0 - n[2] ** 2, 0.0)) for _, n in contacts.values()]))
        # Simultaneity: the thumb and the fingers opposing it reach the surface together; a side that
        # touches first pushes the object, unopposed, until the other side arrives.
        others = [closures[i] for i, f in enumerate(FINGERS) if f in contacts and f != "thumb"]
        lag = abs(closures[0] - float(np.mean(others))) if others else 1.0
        together = max(0.0, 1.0 - lag / c.push_window)
        w = c.weights
        palm = math.exp(-max(palm_gap, 0.0) / 0.01) if kind == "power" else 0.0
        score = (
            w[0] * len(contacts) / len(FINGERS)
            + w[1] * min(antipodal, 1.0)
            + w[2] * palm
            + w[3] * min(clearance / c.max_press, 1.0)
            + w[4] * min(lift / mu, 1.0)
            + w[5] * together
        )
        return _Eval(score, len(contacts), antipodal, palm_gap, clearance, closures, lift)

    def _antipodal(self, contacts: dict[str, tuple[np.ndarray, np.ndarray]]) -> float:
        """Best two-contact force-closure margin between the thumb and another finger (-1: none)."""
        if "thumb" not in contacts:
            return -1.0
        half_angle = math.atan(self.config.friction)
        p_t, n_t = contacts["thumb"]
        best = -1.0
        for f, (p_f, n_f) in contacts.items():
            line = p_f - p_t
            length = float(np.linalg.norm(line))
            if f == "thumb" or length < 1e-6:
                continue
            line /= length  # thumb pushes along +line (against its normal), the finger along -line
            worst = max(math.acos(np.clip(-n_t @ line, -1, 1)), math.acos(np.clip(n_f @ line, -1, 1)))
            best = max(best, 1.0 - worst / half_angle)
        return best

    def _close(self, probe: _HandProbe, T: np.ndarray, kind: str):
        """Close the hand from its pre-shape; each finger stops where it first meets the object.

        A finger that reaches the belt first presses on it and slides along it (the servos keep
        closing): the sweep goes on through the belt plane and reports how deep the fingers would
        press (the least finger clearance, negative when pressing). Returns (closure per finger,
        {finger: (object point, outward normal)}, hand joints at rest, least finger clearance)."""
        c = self.config
        active = list(_ACTIVE[kind])
        stop = {f: 1.0 for f in FINGERS}
        contacts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        moving, prev, clearance = set(active), 0.0, math.inf
        for s in np.linspace(0.0, 1.0, c.closure_steps + 1)[1:]:
            probe.set(T, hand_grasp_pose(kind, float(s)))
            for f in sorted(moving, key=active.index):
                clearance = min(clearance, probe.belt_clearance(probe.finger_geoms[f]))
                if min(probe.dist(g) for g in probe.finger_geoms[f]) > c.contact_tol:
                    continue
                lo, hi = prev, float(s)  # bisect to the first touch
                for _ in range(5):
                    mid = 0.5 * (lo + hi)
                    probe.set(T, hand_grasp_pose(kind, mid))
                    lo, hi = (
                        (mid, hi) if min(probe.dist(g) for g in probe.finger_geoms[f]) > c.contact_tol else (lo, mid)
                    )
                probe.set(T, hand_grasp_pose(kind, hi))
                contacts[f] = probe.contact_normal(min(probe.finger_geoms[f], key=probe.dist))
                stop[f] = hi
                moving.discard(f)
                probe.set(T, hand_grasp_pose(kind, float(s)))
            prev = float(s)
            if not moving:
                break
        hand_q = np.concatenate([hand_grasp_pose(kind, stop[f])[4 * i : 4 * i + 4] for i, f in enumerate(FINGERS)])
        return tuple(stop[f] for f in FINGERS), contacts, hand_q, clearance
