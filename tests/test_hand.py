"""Tests of the programmatic hand model: structure, poses, and grasp/carry/release physics.

The test cell: a table top at z = 0, an object with a free joint resting on it, and the hand
facing down (palm normal -z world) under a "wrist" body driven like a stiff arm: three slide
joints and a yaw hinge with PD servos that track a commanded position and velocity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
import pytest

from r2s2r.errors import ConfigError
from r2s2r.world.hand import (
    FINGERS,
    HAND_JOINTS,
    HandParams,
    add_hand,
    hand_grasp_pose,
    hand_joint_ranges,
    hand_open_pose,
)

P = "rh_"
WRIST_KP, WRIST_KV = 2e4, 400.0  # N/m, N s/m: a stiff arm (the hand is gravity compensated)


@dataclass(frozen=True)
class Obj:
    name: str
    shape: str  # MuJoCo geom type name
    size: tuple[float, ...]
    mass: float
    half_height: float


CUBE5 = Obj("cube5", "box", (0.025, 0.025, 0.025), 0.25, 0.025)
CYL6 = Obj("cyl6", "cylinder", (0.03, 0.035), 0.30, 0.035)
SPHERE6 = Obj("sphere6", "sphere", (0.03,), 0.15, 0.03)
CUBE4 = Obj("cube4", "box", (0.02, 0.02, 0.02), 0.10, 0.02)
OBJ_XY = (0.0, 0.0)


def build_scene(
    obj: Obj,
    dt: float,
    side: str = "right",
    params: HandParams | None = None,
    obj_friction: float = 0.5,
    obj_yaw: float = 0.0,
    obj_xy=OBJ_XY,
) -> mujoco.MjModel:
    spec = mujoco.MjSpec()
    spec.option.timestep = dt
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10
    spec.option.gravity = [0.0, 0.0, -9.81]
    wb = spec.worldbody
    wb.add_light(pos=[0.3, -0.3, 1.0], dir=[-0.3, 0.3, -1.0])
    wb.add_geom(
        name="table",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=[0.2, 0.2, -0.02],
        size=[0.5, 0.5, 0.02],
        friction=[0.6, 0.005, 1e-4],
    )
    body = wb.add_body(
        name="obj",
        pos=[*obj_xy, obj.half_height],
        quat=[math.cos(obj_yaw / 2), 0, 0, math.sin(obj_yaw / 2)],
    )
    body.add_freejoint(name="obj")
    body.add_geom(
        name="obj",
        type=getattr(mujoco.mjtGeom, "mjGEOM_" + obj.shape.upper()),
        size=[*obj.size, *[0.0] * (3 - len(obj.size))],
        mass=obj.mass,
        friction=[obj_friction, 0.005, 1e-4],
        condim=4,
        rgba=[0.8, 0.2, 0.1, 1],
    )
    wrist = wb.add_body(name="wrist", gravcomp=1.0)
    for i, ax in enumerate("xyz"):
        wrist.add_joint(name=f"w{ax}", type=mujoco.mjtJoint.mjJNT_SLIDE, axis=np.eye(3)[i].tolist())
    wrist.add_joint(name="wyaw", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 0, 1], armature=0.05)
    wrist.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.03], mass=1.0, contype=0, conaffinity=0)
    flange = wrist.add_body(name="flange", quat=[0, 1, 0, 0], gravcomp=1.0)  # palm faces -z
    add_hand(spec, flange, P, params or HandParams(), side)
    # ctrl[20:24]: wrist position targets (x, y, z, yaw); ctrl[24:28]: velocity targets.
    gains = {
        "wx": (WRIST_KP, WRIST_KV),
        "wy": (WRIST_KP, WRIST_KV),
        "wz": (WRIST_KP, WRIST_KV),
        "wyaw": (200.0, 5.0),
    }
    for kind in ("p", "v"):
        for j, (kp, kv) in gains.items():
            act = spec.add_actuator(name=f"{j}_{kind}", target=j, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            act.set_to_position(kp=kp) if kind == "p" else act.set_to_velocity(kv=kv)
    return spec.compile()


def min_jerk(p0, p1, t: float, duration: float) -> tuple[np.ndarray, np.ndarray]:
    """Position and velocity of a minimum-jerk move from ``p0`` to ``p1`` at time ``t``."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    tau = min(max(t / duration, 0.0), 1.0)
    s = 10 * tau**3 - 15 * tau**4 + 6 * tau**5
    ds = (30 * tau**2 - 60 * tau**3 + 30 * tau**4) / duration
    return p0 + s * (p1 - p0), ds * (p1 - p0)


class Cell:
    """The test scene plus helpers to drive the wrist and hand and watch the object."""

    def __init__(self, obj: Obj, dt: float, side: str = "right", **scene) -> None:
        self.m = build_scene(obj, dt, side, **scene)
        self.d = mujoco.MjData(self.m)
        self.obj = obj
        self.dt = dt
        self.hand_body = self.m.body(P + "hand").id
        self.obj_body = self.m.body("obj").id
        self.obj_geom = self.m.geom("obj").id
        self.table = self.m.geom("table").id
        self.hand_geoms = {g for g in range(self.m.ngeom) if self.m.geom(g).name.startswith(P)}
        self.wrist = np.zeros(3)
        self.q_hand = hand_open_pose()

    def set_hand(self, q: np.ndarray, qpos_too: bool = False) -> None:
        self.q_hand = np.asarray(q, float)
        if qpos_too:
            self.d.qpos[7 + 4 : 7 + 4 + 20] = q

    def place_wrist(self, p) -> None:
        self.wrist = np.asarray(p, float)
        self.d.qpos[7:10] = p
        self.d.ctrl[20:23] = p
        mujoco.mj_forward(self.m, self.d)

    def palm_center_offset(self) -> np.ndarray:
        """palm_center minus the wrist (flange) origin in world, m."""
        return self.d.site(P + "palm_center").xpos - self.d.xpos[self.hand_body]

    def move(self, target, duration: float, hand=None, watch=None) -> None:
        """Min-jerk wrist move to ``target`` (world, m) while ``hand(t)`` gives hand targets."""
        start = self.wrist.copy()
        n = round(duration / self.dt)
        for k in range(n):
            t = (k + 1) * self.dt
            p, v = min_jerk(start, target, t, duration)
            self.d.ctrl[20:23] = p
            self.d.ctrl[24:27] = v
            self.d.ctrl[:20] = self.q_hand if hand is None else hand(t)
            mujoco.mj_step(self.m, self.d)
            if watch is not None:
                watch(self)
        self.wrist = np.asarray(target, float)
        if hand is not None:
            self.q_hand = np.asarray(hand(duration), float)

    def hold(self, duration: float, watch=None) -> None:
        self.move(self.wrist, duration, watch=watch)

    def obj_in_palm(self) -> np.ndarray:
        """Object centre in the hand frame, m."""
        R = self.d.xmat[self.hand_body].reshape(3, 3)
        return R.T @ (self.d.xpos[self.obj_body] - self.d.xpos[self.hand_body])

    def obj_contacts(self) -> set[int]:
        out = set()
        for c in self.d.contact[: self.d.ncon]:
            if c.geom1 == self.obj_geom:
                out.add(int(c.geom2))
            elif c.geom2 == self.obj_geom:
                out.add(int(c.geom1))
        return out

    def warnings(self) -> int:
        return int(sum(w.number for w in self.d.warning))

    def healthy(self) -> bool:
        return bool(np.all(np.isfinite(self.d.qpos)) and np.all(np.isfinite(self.d.qvel)))


# --- model structure -----------------------------------------------------------------------


def _hand_model(side: str = "right", degree: bool = True, params: HandParams | None = None):
    spec = mujoco.MjSpec()
    spec.compiler.degree = degree
    flange = spec.worldbody.add_body(name="flange")
    add_hand(spec, flange, P, params or HandParams(), side)
    return spec.compile()


@pytest.mark.parametrize("degree", [True, False])
def test_structure_names_ranges_actuators(degree: bool) -> None:
    m = _hand_model(degree=degree)
    assert HAND_JOINTS[:4] == ("thumb_0", "thumb_1", "thumb_2", "thumb_3")
    assert len(HAND_JOINTS) == 20 and HAND_JOINTS[-1] == "little_3"
    assert [m.joint(i).name for i in range(m.njnt)] == [P + j for j in HAND_JOINTS]
    assert [m.actuator(i).name for i in range(m.nu)] == [P + j for j in HAND_JOINTS]
    assert list(m.actuator_trnid[:, 0]) == list(range(20))
    ranges = hand_joint_ranges()
    assert ranges.shape == (20, 2) and np.all(ranges[:, 0] < ranges[:, 1])
    np.testing.assert_allclose(m.jnt_range, ranges, atol=1e-9)  # radians whatever the spec unit
    np.testing.assert_allclose(m.actuator_ctrlrange, ranges, atol=1e-9)
    assert np.all(m.actuator_ctrllimited) and np.all(m.jnt_limited)
    limit = HandParams().force_limit
    np.testing.assert_allclose(m.actuator_forcerange, np.tile([-limit, limit], (20, 1)))
    assert np.all(m.actuator_forcelimited)
    names = [m.geom(g).name for g in range(m.ngeom)]
    assert all(n.startswith(P) for n in names)
    assert all(m.geom_condim[g] in (4, 6) for g in range(m.ngeom))
    np.testing.assert_allclose(m.geom_friction[:, 0], HandParams().friction)
    for site in ["palm_center", "pinch_center", *(f"{f}_tip" for f in FINGERS)]:
        assert m.site(P + site).id >= 0
    hand = m.body(P + "hand").id
    assert m.body_subtreemass[hand] == pytest.approx(HandParams().mass)
    assert np.all(m.body_gravcomp[hand:] == 1.0)


def test_two_hands_in_one_spec() -> None:
    spec = mujoco.MjSpec()
    for prefix, side, y in (("l_", "left", 0.3), ("r_", "right", -0.3)):
        flange = spec.worldbody.add_body(name=prefix + "flange", pos=[0, y, 0.5])
        body = add_hand(spec, flange, prefix, HandParams(mass=0.5), side)
        assert body.name == prefix + "hand"
    m = spec.compile()
    assert m.nu == 40 and m.njnt == 40
    assert m.actuator(20).name == "r_thumb_0"
    assert m.body_subtreemass[m.body("l_hand").id] == pytest.approx(0.5)


def test_hand_frame_layout() -> None:
    """Palm normal +z, fingers along +x and flexing toward +z, thumb on -y (right)."""
    m = _hand_model()
    d = mujoco.MjData(m)
    d.qpos[:] = hand_open_pose()
    mujoco.mj_forward(m, d)
    tip = {f: d.site(P + f"{f}_tip").xpos.copy() for f in FINGERS}
    assert all(tip[f][0] > 0.15 for f in FINGERS[1:])  # fingers extend along +x
    assert tip["thumb"][1] < -0.08  # thumb out on the -y side
    assert tip["index"][1] < tip["middle"][1] < tip["ring"][1] < tip["little"][1]
    assert 0.02 < d.site(P + "palm_center").xpos[2] < 0.1  # grasp centre in front of the palm
    d.qpos[:] = hand_grasp_pose("power", 1.0)
    mujoco.mj_forward(m, d)
    for f in FINGERS:  # closed fingers curl in front of the palm, toward the palm centre
        assert d.site(P + f"{f}_tip").xpos[2] > 0.03
        assert d.site(P + f"{f}_tip").xpos[0] < tip["middle"][0] - 0.05


def test_left_hand_is_mirror_image() -> None:
    mr, ml = _hand_model("right"), _hand_model("left")
    dr, dl = mujoco.MjData(mr), mujoco.MjData(ml)
    for q in (hand_open_pose(), hand_grasp_pose("power", 0.7), hand_grasp_pose("pinch", 0.5)):
        dr.qpos[:] = dl.qpos[:] = q
        mujoco.mj_forward(mr, dr)
        mujoco.mj_forward(ml, dl)
        np.testing.assert_allclose(dl.site_xpos * [1, -1, 1], dr.site_xpos, atol=1e-12)
    assert dl.site(P + "thumb_tip").xpos[1] > 0.0


def test_poses_within_ranges() -> None:
    lo, hi = hand_joint_ranges().T
    poses = [hand_open_pose()] + [hand_grasp_pose(k, c) for k in ("power", "pinch") for c in np.linspace(0, 1, 11)]
    for q in poses:
        assert q.shape == (20,) and np.all(np.isfinite(q))
        assert np.all(q >= lo) and np.all(q <= hi)
    closed, pre = hand_grasp_pose("power", 1.0), hand_grasp_pose("power", 0.0)
    assert np.all(closed[[5, 9, 13, 17]] > pre[[5, 9, 13, 17]] + 0.5)  # MCPs flex to close


def test_bad_input_raises_config_error() -> None:
    for field, bad in [
        ("kp", -1.0),
        ("kv", 0.0),
        ("friction", math.nan),
        ("mass", math.inf),
        ("force_limit", "1"),
        ("damping", True),
    ]:
        with pytest.raises(ConfigError, match=field):
            HandParams(**{field: bad})
    with pytest.raises(ConfigError, match="kind"):
        hand_grasp_pose("hook", 0.5)
    for bad in (-0.1, 1.5, math.nan, "1"):
        with pytest.raises(ConfigError, match="closure"):
            hand_grasp_pose("power", bad)
    spec = mujoco.MjSpec()
    with pytest.raises(ConfigError, match="side"):
        add_hand(spec, spec.worldbody, P, HandParams(), "middle")


# --- physics -------------------------------------------------------------------------------


class Watch:
    """Tracks the object's largest displacement in the palm frame and any table contact."""

    def __init__(self, ref: np.ndarray) -> None:
        self.ref, self.max_dev, self.table = ref, 0.0, False

    def __call__(self, cell: Cell) -> None:
        self.max_dev = max(self.max_dev, float(np.linalg.norm(cell.obj_in_palm() - self.ref)))
        self.table |= cell.table in cell.obj_contacts()


def grasp(cell: Cell, kind: str) -> np.ndarray:
    """Pre-shape above the object, descend, close over 0.4 s; returns the wrist grasp pose."""
    cell.set_hand(hand_grasp_pose(kind, 0.0), qpos_too=True)
    cell.place_wrist([0.0, 0.0, 0.4])
    obj_pos = np.array([*OBJ_XY, cell.obj.half_height])
    if kind == "power":  # palm_center over the object, palm surface 4 mm above its top
        off = cell.palm_center_offset()
        target = np.array([*(obj_pos[:2] - off[:2]), 2 * cell.obj.half_height + 0.034])
    else:  # the object's centre at pinch_center
        target = obj_pos - (cell.d.site(P + "pinch_center").xpos - cell.d.xpos[cell.hand_body])
    cell.place_wrist(target + [0.0, 0.0, 0.08])
    cell.hold(0.1)
    cell.move(target, 0.4)
    cell.move(target, 0.4, hand=lambda t: hand_grasp_pose(kind, min(t / 0.4, 1.0)))
    cell.hold(0.2)
    return target


OBJECTS = [CUBE5, CYL6, SPHERE6, CUBE4]


@pytest.mark.parametrize("dt", [0.002, 0.001])
@pytest.mark.parametrize("obj", OBJECTS, ids=[o.name for o in OBJECTS])
def test_power_grasp_fast_carry(obj: Obj, dt: float) -> None:
    cell = Cell(obj, dt)
    target = grasp(cell, "power")
    cell.move(target + [0.0, 0.0, 0.15], 0.5)  # lift 15 cm
    cell.hold(0.1)
    assert cell.d.xpos[cell.obj_body][2] > obj.half_height + 0.13, "object not lifted"
    watch = Watch(cell.obj_in_palm())
    carry_end = target + [0.0, 0.5, 0.05]  # 0.5 m sideways and 0.1 m down: peak 8 m/s^2
    cell.move(carry_end, 0.6, watch=watch)
    cell.hold(0.5, watch=watch)
    assert not watch.table, "object touched the table during the carry"
    assert watch.max_dev < 0.025, f"object moved {watch.max_dev * 1000:.1f} mm in the palm"
    assert cell.healthy() and cell.warnings() == 0


@pytest.mark.parametrize("dt", [0.002, 0.001])
def test_pinch_lift_and_hold(dt: float) -> None:
    cell = Cell(CUBE4, dt)
    target = grasp(cell, "pinch")
    touching = {cell.m.geom(g).name for g in cell.obj_contacts()}
    assert {P + "thumb_link2", P + "index_link2"} <= touching
    cell.move(target + [0.0, 0.0, 0.15], 0.5)
    watch = Watch(cell.obj_in_palm())
    cell.hold(1.0, watch=watch)
    assert cell.d.xpos[cell.obj_body][2] > CUBE4.half_height + 0.13, "object dropped"
    assert watch.max_dev < 0.01 and not cell.obj_contacts() & {cell.table}
    assert cell.healthy() and cell.warnings() == 0


@pytest.mark.parametrize("kind", ["power", "pinch"])
def test_open_hand_releases_object(kind: str) -> None:
    cell = Cell(CUBE5 if kind == "power" else CUBE4, 0.002)
    target = grasp(cell, kind)
    cell.move(target + [0.0, 0.0, 0.1], 0.4)
    assert cell.d.xpos[cell.obj_body][2] > cell.obj.half_height + 0.08, "object not lifted"
    cell.move(target + [0.0, 0.0, 0.003], 0.4)  # set it back down
    cell.move(cell.wrist, 0.3, hand=lambda t: hand_open_pose())
    cell.move(target + [0.0, 0.0, 0.12], 0.4)
    cell.hold(0.3)
    assert not cell.obj_contacts() & cell.hand_geoms, "hand still touches the object"
    assert cell.table in cell.obj_contacts()
    assert cell.d.xpos[cell.obj_body][2] == pytest.approx(cell.obj.half_height, abs=2e-3)
    assert np.linalg.norm(cell.d.qvel[:6]) < 1e-2  # at rest
    assert cell.healthy() and cell.warnings() == 0


def test_left_hand_power_grasp_carry() -> None:
    cell = Cell(CUBE5, 0.002, side="left")
    target = grasp(cell, "power")
    cell.move(target + [0.0, 0.0, 0.15], 0.5)
    watch = Watch(cell.obj_in_palm())
    cell.move(target + [0.0, -0.5, 0.05], 0.6, watch=watch)
    cell.hold(0.5, watch=watch)
    assert not watch.table and watch.max_dev < 0.025
    assert cell.healthy() and cell.warnings() == 0


def test_peak_carry_acceleration_is_about_8() -> None:
    ts = np.linspace(0, 0.6, 601)
    v = np.array([min_jerk([0, 0], [0.5, -0.1], t, 0.6)[1] for t in ts])
    a = np.linalg.norm(np.gradient(v, ts, axis=0), axis=1)
    assert 7.5 < a.max() < 8.5
