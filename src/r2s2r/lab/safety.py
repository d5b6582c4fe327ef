"""The safety filter every command to the robots passes: it clips, counts and logs violations.

Checks, in order, for one side's 27-D joint-target command (7 arm + 20 hand):
1. ``non_finite``: a NaN/inf command is replaced by the previous command;
2. ``joint_limit``: targets are clipped into the joint ranges less a margin;
3. ``velocity``: the arm's step from the previous command is clipped to the rated joint speed;
4. ``workspace``: the flange must stay inside a box (world frame);
5. ``self_collision``: arms, hands and the pedestal must not interpenetrate.
For 4-5, the command is pulled back along its step to the last safe fraction (bisection).
The filter uses the robot's own model (drawing layout + factory kinematics), never the truth.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r.world import rizon
from r2s2r.world.hand import hand_joint_ranges
from r2s2r.world.params import WorldParams
from r2s2r.world.scene import arm_joint_names, build_spec, hand_joint_names

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class SafetyLimits:
    joint_margin: float = 0.02  # rad inside each arm joint range
    speed_scale: float = 1.0  # fraction of the rated joint speeds allowed
    workspace_lo: Vec3 = (-0.40, -0.95, 0.70)  # flange position box, world frame, m
    workspace_hi: Vec3 = (1.05, 0.95, 1.95)
    bisection_steps: int = 8


class SafetyFilter:
    """Makes commands safe for one cell. ``counts`` and ``log`` record what it changed."""

    def __init__(self, model_params: WorldParams, limits: SafetyLimits = SafetyLimits()) -> None:
        self.limits = limits
        spec = build_spec(model_params, model_params.objects[0].name)
        self._model = spec.compile()
        self._data = mujoco.MjData(self._model)
        m = self._model
        self._qadr = {
            s: np.array([m.joint(n).qposadr[0] for n in arm_joint_names(s) + hand_joint_names(s)])
            for s in ("right", "left")
        }
        self._flange = {s: m.body(f"{s}_flange").id for s in ("right", "left")}
        ranges = np.vstack([rizon.JOINT_RANGE, hand_joint_ranges()])
        margin = np.r_[np.full(7, limits.joint_margin), np.zeros(20)]  # hand joints may reach their stops
        self._lo = ranges[:, 0] + margin
        self._hi = ranges[:, 1] - margin
        self._vmax = np.asarray(rizon.VELOCITY_LIMIT) * limits.speed_scale
        self._guarded = self._guarded_geoms()
        self._current = {"right": None, "left": None}
        self.counts: Counter[str] = Counter()
        self.log: deque[str] = deque(maxlen=1000)

    def _guarded_geoms(self) -> tuple[dict[int, str], set[int]]:
        """Map each robot geom to its group (arm link or hand) and list the static guard geoms."""
        m = self._model
        group: dict[int, str] = {}
        for g in range(m.ngeom):
            b = m.geom_bodyid[g]
            chain = []
            while b > 0:
                chain.append(m.body(b).name)
                b = m.body_parentid[b]
            for side in ("right", "left"):
                if f"{side}_hand" in chain:
                    group[g] = f"{side}_hand"
                elif f"{side}_base" in chain:
                    group[g] = chain[0]
        static = {m.geom("pedestal").id, m.geom("floor").id}
        return group, static

    def _collides(self) -> bool:
        m, d = self._model, self._data
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        group, static = self._guarded
        for c in d.contact[: d.ncon]:
            g1, g2 = group.get(c.geom1), group.get(c.geom2)
            if g1 is not None and g2 is not None and g1 != g2:
                return True
            if (g1 is not None and c.geom2 in static) or (g2 is not None and c.geom1 in static):
                return True
        return False

    def _unsafe(self, side: str, q: np.ndarray, other: dict[str, np.ndarray]) -> str | None:
        d = self._data
        d.qpos[self._qadr[side]] = q
        for s, qs in other.items():
            d.qpos[self._qadr[s]] = qs
        mujoco.mj_kinematics(self._model, d)
        p = d.xpos[self._flange[side]]
        if np.any(p < self.limits.workspace_lo) or np.any(p > self.limits.workspace_hi):
            return "workspace"
        if self._collides():
            return "self_collision"
        return None

    def _record(self, kind: str, side: str, detail: str) -> None:
        self.counts[kind] += 1
        self.log.append(f"{kind} ({side}): {detail}")

    def filter(
        self, side: str, q_prev: np.ndarray, q_cmd: np.ndarray, dt: float, other: dict[str, np.ndarray] | None = None
    ) -> np.ndarray:
        """Safe version of command ``q_cmd`` (27,) following ``q_prev`` after ``dt`` seconds.

        ``other`` gives the other side's current command for the collision check.
        """
        q_prev = np.asarray(q_prev, dtype=float)
        q = np.array(q_cmd, dtype=float)
        if q.shape != (27,) or not np.all(np.isfinite(q)):
            self._record("non_finite", side, f"command shape {q.shape} or non-finite values; held previous")
            return q_prev.copy()
        clipped = np.clip(q, self._lo, self._hi)
        if np.any(clipped != q):
            bad = np.flatnonzero(clipped != q)
            self._record("joint_limit", side, f"joints {bad.tolist()} clipped into range")
            q = clipped
        step = q[:7] - q_prev[:7]
        max_step = self._vmax * max(dt, 1e-6)
        if np.any(np.abs(step) > max_step + 1e-12):
            self._record("velocity", side, f"arm step {np.abs(step).max():.3f} rad in {dt:.3f} s clipped")
            q[:7] = q_prev[:7] + np.clip(step, -max_step, max_step)
        other = other or {}
        kind = self._unsafe(side, q, other)
        if kind is None:
            return q
        lo, hi = 0.0, 1.0  # bisect the largest safe fraction of the step
        for _ in range(self.limits.bisection_steps):
            mid = (lo + hi) / 2
            if self._unsafe(side, q_prev + mid * (q - q_prev), other) is None:
                lo = mid
            else:
                hi = mid
        self._record(kind, side, f"step scaled to {lo:.3f}")
        return q_prev + lo * (q - q_prev)
