"""The trial judge: did the object end, released, in the bin of its colour?

It reads the true simulator state (in the lab twin, the hidden one), as the person scoring a
real trial looks at the cell. Failure modes:

``missed``         the object was never lifted off the belt by the end of the trial
``fell_off_belt``  the object left the belt without being lifted (end or side) and hit the floor
``dropped``        the object was lifted, then came to rest outside both bins or on the floor
``wrong_bin``      the object rests, released, in the other colour's bin
``timeout``        time ran out while the object was held or moving
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r.geometry import quat_to_mat
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import WorldParams

FAILURES = ("missed", "fell_off_belt", "dropped", "wrong_bin", "timeout")
REST_SPEED = 0.03  # m/s
LIFT_HEIGHT = 0.03  # m above its resting height on the belt


@dataclass(frozen=True)
class Verdict:
    done: bool
    success: bool = False
    failure: str | None = None  # one of FAILURES when done and not successful
    lifted: bool = False
    touched: bool = False


class Judge:
    """Tracks one trial. ``update`` after every control step; ``finish`` at the time limit."""

    def __init__(self, model: mujoco.MjModel, params: WorldParams, object_name: str) -> None:
        self._cat = CATALOG[object_name]
        self._obj_body = model.body("object").id
        self._obj_geom = model.geom("object").id
        self._belt_geom = model.geom("belt_surface").id
        hand_root = model.body("right_hand").id
        hand = [g for g in range(model.ngeom) if _descends(model, model.geom_bodyid[g], hand_root)]
        self._hand_geoms = np.array(hand, dtype=int)
        self._belt_z = params.conveyor.pose.pos[2]
        self._bins = [(b.color, np.array(b.pose.pos), quat_to_mat(b.pose.quat), np.array(b.size)) for b in params.bins]
        self.lifted = False
        self.touched = False
        self._rest_steps = 0

    def _contacts(self, data: mujoco.MjData) -> tuple[bool, bool]:
        """(the hand touches the object, the belt does): the geoms the object's contacts pair it with."""
        contacts = data.contact  # the ncon active contacts
        g1, g2 = contacts.geom1, contacts.geom2
        first = g1 == self._obj_geom
        other = np.concatenate([g2[first], g1[~first & (g2 == self._obj_geom)]])
        return bool(np.isin(other, self._hand_geoms).any()), bool((other == self._belt_geom).any())

    def _in_bin(self, pos: np.ndarray) -> str | None:
        for color, origin, R, size in self._bins:
            p = R.T @ (pos - origin)
            if abs(p[0]) < size[0] / 2 and abs(p[1]) < size[1] / 2 and -0.01 < p[2] < size[2]:
                return color
        return None

    def update(self, data: mujoco.MjData) -> Verdict:
        pos = data.xpos[self._obj_body].copy()
        speed = float(np.linalg.norm(data.cvel[self._obj_body][3:]))
        hand, belt = self._contacts(data)
        self.touched |= hand
        if not belt and pos[2] > self._belt_z + self._cat.rest_height + LIFT_HEIGHT:
            self.lifted = True
        at_rest = speed < REST_SPEED and not hand
        self._rest_steps = self._rest_steps + 1 if at_rest else 0
        kw = {"lifted": self.lifted, "touched": self.touched}
        if pos[2] < 0.3:  # on the floor
            return Verdict(True, failure="dropped" if self.lifted else "fell_off_belt", **kw)
        if self._rest_steps >= 3:
            color = self._in_bin(pos)
            if color == self._cat.color:
                return Verdict(True, success=True, **kw)
            if color is not None:
                return Verdict(True, failure="wrong_bin", **kw)
            if self.lifted and not belt:
                return Verdict(True, failure="dropped", **kw)
        return Verdict(False, **kw)

    def finish(self) -> Verdict:
        """Verdict at the time limit, for a trial that ``update`` did not end."""
        failure = "timeout" if self.lifted else "missed"
        return Verdict(True, failure=failure, lifted=self.lifted, touched=self.touched)


def _descends(model: mujoco.MjModel, body: int, root: int) -> bool:
    while body > 0:
        if body == root:
            return True
        body = model.body_parentid[body]
    return False
