"""Collision checks of the picking arm, its hand and a held object, on a copy of the cell's model.

``CellCollision(model, data)`` copies the compiled cell (every geom, the other arm where it
stands, the belt, bins, pedestal) and answers whether a right-arm configuration collides: the arm
links and the hand against every other geom, the hand against its own arm's upper links, and a
held object against everything but the hand holding it. Contacts closer than ``margin`` count
(MuJoCo reports pairs within the geoms' margins, with their signed distance). The cell's own
collision bits (the belt touches only objects and hands) are replaced in the copy so that every
physical geom is checked against the arm. Configurations are encoder values (rad), the same
convention as the cell's joints and ``ArmIK``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r.behavior.ik import ArmIK, IKResult
from r2s2r.errors import ConfigError
from r2s2r.geometry import split_T
from r2s2r.world.scene import arm_joint_names, hand_joint_names

ALLOWANCES = ("hand_object", "hand_belt", "object_belt")  # contacts a grasp makes on purpose


@dataclass(frozen=True)
class CollisionConfig:
    margin: float = 0.01  # m: closer than this counts as a collision (arm, hand, held object)
    resolution: float = 0.01  # rad: largest joint step between checked configurations of a motion

    def __post_init__(self) -> None:
        if not 0.0 <= self.margin < 0.1 or not 0.0 < self.resolution <= 0.2:
            raise ConfigError(f"collision: margin in [0, 0.1) m and resolution in (0, 0.2] rad expected, got {self}")


def _subtree(model: mujoco.MjModel, root: int) -> set[int]:
    out = set()
    for b in range(model.nbody):
        a = b
        while a > 0 and a != root:
            a = model.body_parentid[a]
        if a == root:
            out.add(b)
    return out


class CellCollision:
    """Collision queries for the right arm in a private copy of a compiled cell."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, config: CollisionConfig = CollisionConfig()):
        self.config = config
        self.model = m = copy.deepcopy(model)
        self.data = mujoco.MjData(m)
        self.data.qpos[:] = data.qpos  # the rest of the cell (other arm, belt) as it stands
        self._arm = np.array([m.joint(n).qposadr[0] for n in arm_joint_names("right")])
        self._hand = np.array([m.joint(n).qposadr[0] for n in hand_joint_names("right")])
        self._obj_q = m.joint("object_free").qposadr[0]
        hand_bodies = _subtree(m, m.body("right_hand").id)
        self._hand_body = m.body("right_hand").id
        link_bodies = {m.body(f"right_link{i + 1}").id for i in range(7)}
        upper = {m.body(f"right_link{i + 1}").id for i in range(5)}
        physical = [g for g in range(m.ngeom) if m.geom_contype[g] or m.geom_conaffinity[g]]
        self.hand_geoms = {g for g in physical if m.geom_bodyid[g] in hand_bodies}
        self.link_geoms = {g for g in physical if m.geom_bodyid[g] in link_bodies}
        self.upper_geoms = {g for g in physical if m.geom_bodyid[g] in upper}
        self.hand_names = frozenset(m.geom(g).name for g in self.hand_geoms)
        self.object_geom = m.geom("object").id
        self.belt_geom = m.geom("belt_surface").id
        self.base_geom = m.geom("right_base_geom").id
        # Collision bits of the copy: robot geoms (contype 1) meet obstacles (conaffinity 1); the
        # hand (contype 4) also meets its upper arm (conaffinity 4) and the arm's base; a held
        # object (contype 8) meets the arm links (conaffinity 8) and the obstacles.
        for g in physical:
            m.geom_contype[g], m.geom_conaffinity[g] = 2, 1  # an obstacle
        for g in self.link_geoms:
            m.geom_contype[g], m.geom_conaffinity[g] = 1, 2 | 8 | (4 if g in self.upper_geoms else 0)
        for g in self.hand_geoms:
            m.geom_contype[g], m.geom_conaffinity[g] = 1 | 4, 2
        m.geom_contype[self.base_geom], m.geom_conaffinity[self.base_geom] = 0, 4
        for g in self.hand_geoms | self.link_geoms | {self.object_geom}:
            m.geom_margin[g] = config.margin
        self._park = np.array([-0.8, 0.0, -1.0, 1.0, 0.0, 0.0, 0.0])  # under the floor: out of every check

        def mask(ids) -> np.ndarray:
            out = np.zeros(m.ngeom, bool)
            out[list(ids)] = True
            return out

        # the belt and the bed under it: a closing hand's fingertips press on the belt and slide
        hand, obj, belt = (
            mask(self.hand_geoms),
            mask([self.object_geom]),
            mask([self.belt_geom, m.geom("conveyor_bed").id]),
        )
        self._allowances = {"hand_object": (hand, obj), "hand_belt": (hand, belt), "object_belt": (obj, belt)}

    # --- state ------------------------------------------------------------------------------
    def _set(self, q_arm, q_hand, object_pose, held) -> None:
        d = self.data
        d.qpos[self._arm] = q_arm
        if q_hand is not None:
            d.qpos[self._hand] = q_hand
        if object_pose is None and held is None:
            d.qpos[self._obj_q : self._obj_q + 7] = self._park
        elif object_pose is not None:
            pos, quat = split_T(object_pose)
            d.qpos[self._obj_q : self._obj_q + 7] = np.concatenate([pos, quat])
        mujoco.mj_kinematics(self.model, d)
        if held is not None:  # the object rides in the hand: place it from the hand's pose
            hid = self._hand_body
            T = np.eye(4)
            T[:3, :3] = d.xmat[hid].reshape(3, 3)
            T[:3, 3] = d.xpos[hid]
            pos, quat = split_T(T @ held)
            d.qpos[self._obj_q : self._obj_q + 7] = np.concatenate([pos, quat])
            mujoco.mj_kinematics(self.model, d)

    def collisions(
        self,
        q_arm: np.ndarray,
        q_hand: np.ndarray | None = None,
        object_pose: np.ndarray | None = None,
        held: np.ndarray | None = None,
        allow: tuple[str, ...] = (),
    ) -> list[tuple[str, str, float]]:
        """Colliding pairs (geom names, signed distance in m) of one configuration.

        ``object_pose``: T_world_object of the object where it lies (an obstacle); ``held``:
        T_hand_object of an object held in the hand (it moves with the hand); neither: the
        object is left out. ``allow``: contacts made on purpose (``hand_object``, ``hand_belt``,
        ``object_belt``: a held object leaving the belt).
        """
        m = self.model
        pairs, dists, keep = self._check(q_arm, q_hand, object_pose, held, allow)
        return [
            (m.geom(int(a)).name or str(a), m.geom(int(b)).name or str(b), float(dist))
            for (a, b), dist in zip(pairs[keep], dists[keep], strict=True)
        ]

    def _check(self, q_arm, q_hand, object_pose, held, allow):
        if not set(allow) <= set(ALLOWANCES):
            raise ConfigError(f"collision allowances {sorted(allow)}; expected some of {ALLOWANCES}")
        m, d = self.model, self.data
        og = self.object_geom
        if held is not None:
            m.geom_contype[og], m.geom_conaffinity[og] = 1 | 8, 2
        else:
            m.geom_contype[og], m.geom_conaffinity[og] = 2, 1
        self._set(q_arm, q_hand, object_pose, held)
        mujoco.mj_collision(m, d)
        n = d.ncon
        pairs = d.contact.geom[:n]
        keep = d.contact.dist[:n] < self.config.margin
        for token, (x, y) in self._allowances.items():
            if token in allow:
                keep &= ~((x[pairs[:, 0]] & y[pairs[:, 1]]) | (x[pairs[:, 1]] & y[pairs[:, 0]]))
        return pairs, d.contact.dist[:n], keep

    def free(self, q_arm, q_hand=None, object_pose=None, held=None, allow=()) -> bool:
        """No collision in this configuration (see ``collisions``)."""
        return not self._check(q_arm, q_hand, object_pose, held, allow)[2].any()

    def motion_free(self, q_from, q_to, q_hand=None, object_pose=None, held=None, allow=()) -> bool:
        """Whether the straight joint-space motion q_from -> q_to is free, checked every
        ``resolution`` rad of the largest joint step (both ends included), coarse to fine (the
        ends, the middle, the quarters, ...) so that a blocked motion is rejected early."""
        q_from, q_to = np.asarray(q_from, float), np.asarray(q_to, float)
        n = max(1, int(np.ceil(np.max(np.abs(q_to - q_from)) / self.config.resolution)))
        return all(
            self.free(q_from + (k / n) * (q_to - q_from), q_hand, object_pose, held, allow) for k in coarse_to_fine(n)
        )


def coarse_to_fine(n: int) -> list[int]:
    """0..n, ends first, then midpoints of ever finer halvings (each index once)."""
    order, seen = [0, n], {0, n}
    step = n
    while step > 1:
        half = step / 2
        for k in np.arange(half, n, step):
            i = int(round(k))
            if i not in seen:
                seen.add(i)
                order.append(i)
        step = half
    order += [i for i in range(n + 1) if i not in seen]
    return order


def collision_free_ik(
    ik: ArmIK,
    checker: CellCollision,
    T_base_tool: np.ndarray,
    seeds: list[np.ndarray],
    rng: np.random.Generator,
    restarts: int = 4,
    **check,
) -> IKResult | None:
    """``ik.solve_restarts`` accepting only collision-free configurations (``check``: the
    arguments of ``CellCollision.free`` besides the arm), or None."""
    return ik.solve_restarts(T_base_tool, seeds, rng, restarts, accept=lambda q: checker.free(q, **check))
