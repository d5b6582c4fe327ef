"""Joint-space paths: RRT-Connect, shortcutting, and time parameterisation under joint limits.

Paths are lists of configurations (rad) joined by straight joint-space segments. ``free(q)`` and
``motion_free(qa, qb)`` are the caller's collision checks (``CellCollision`` in the planner).
``time_parameterize`` times a path as fast as the joint velocity and acceleration limits allow,
with a trapezoidal speed profile on each segment that starts and ends at rest (so every
waypoint is passed at rest: shortcutting first keeps those few).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError

Config = np.ndarray
Free = Callable[[np.ndarray], bool]
MotionFree = Callable[[np.ndarray, np.ndarray], bool]


@dataclass(frozen=True)
class RRTConfig:
    step: float = 0.3  # rad: largest joint step of one tree extension
    max_samples: int = 1500  # random samples before giving up
    shortcut_tries: int = 60  # random shortcut attempts

    def __post_init__(self) -> None:
        if not 0 < self.step <= 2.0 or self.max_samples < 1 or self.shortcut_tries < 0:
            raise ConfigError(f"rrt: step in (0, 2] rad, max_samples >= 1, shortcut_tries >= 0 expected, got {self}")


class _Tree:
    def __init__(self, root: np.ndarray) -> None:
        self.nodes = [root]
        self.parent = [-1]

    def nearest(self, q: np.ndarray) -> int:
        return int(np.argmin(np.max(np.abs(np.asarray(self.nodes) - q), axis=1)))

    def add(self, q: np.ndarray, parent: int) -> int:
        self.nodes.append(q)
        self.parent.append(parent)
        return len(self.nodes) - 1

    def path_to(self, i: int) -> list[np.ndarray]:
        out = []
        while i >= 0:
            out.append(self.nodes[i])
            i = self.parent[i]
        return out[::-1]


def _steer(q_from: np.ndarray, q_to: np.ndarray, step: float) -> np.ndarray:
    d = q_to - q_from
    far = float(np.max(np.abs(d)))
    return q_to.copy() if far <= step else q_from + d * (step / far)


def _extend(tree: _Tree, q: np.ndarray, motion_free: MotionFree, step: float) -> tuple[str, int]:
    """One step of ``tree`` toward ``q``: ('reached' | 'advanced' | 'trapped', new node)."""
    i = tree.nearest(q)
    q_new = _steer(tree.nodes[i], q, step)
    if not motion_free(tree.nodes[i], q_new):
        return "trapped", i
    j = tree.add(q_new, i)
    return ("reached" if np.array_equal(q_new, q) else "advanced"), j


def _connect(tree: _Tree, q: np.ndarray, motion_free: MotionFree, step: float) -> tuple[str, int]:
    while True:
        status, j = _extend(tree, q, motion_free, step)
        if status != "advanced":
            return status, j


def rrt_connect(
    q_start: np.ndarray,
    q_goal: np.ndarray,
    motion_free: MotionFree,
    lo: np.ndarray,
    hi: np.ndarray,
    rng: np.random.Generator,
    config: RRTConfig = RRTConfig(),
) -> list[np.ndarray] | None:
    """A collision-free path from ``q_start`` to ``q_goal`` (both included), or None.

    Tries the direct segment first; then grows two trees (Kuffner and LaValle's RRT-Connect),
    sampling uniformly inside the joint limits [lo, hi]."""
    q_start, q_goal = np.asarray(q_start, float), np.asarray(q_goal, float)
    if motion_free(q_start, q_goal):
        return [q_start, q_goal]
    a, b = _Tree(q_start), _Tree(q_goal)
    for _ in range(config.max_samples):
        q_rand = rng.uniform(lo, hi)
        status, i = _extend(a, q_rand, motion_free, config.step)
        if status != "trapped":
            status_b, j = _connect(b, a.nodes[i], motion_free, config.step)
            if status_b == "reached":
                pa, pb = a.path_to(i), b.path_to(j)
                path = pa + pb[::-1][1:]
                return path if np.array_equal(path[0], q_start) else path[::-1]
        a, b = b, a
    return None


def _prune(path: list[np.ndarray], motion_free: MotionFree) -> list[np.ndarray]:
    """Greedy visibility: from each kept waypoint jump to the farthest one it sees directly."""
    out, i = [path[0]], 0
    while i < len(path) - 1:
        j = len(path) - 1
        while j > i + 1 and not motion_free(path[i], path[j]):
            j -= 1
        out.append(path[j])
        i = j
    return out


def shortcut(path: list[np.ndarray], motion_free: MotionFree, rng: np.random.Generator, tries: int) -> list[np.ndarray]:
    """Shorten a path: greedy pruning of waypoints, then randomised shortcuts (two random points of
    the path joined by a straight segment when it is free), then pruning again."""
    path = _prune([np.asarray(q, float) for q in path], motion_free)
    for _ in range(tries):
        if len(path) < 3:
            break
        lengths = np.array([np.max(np.abs(b - a)) for a, b in zip(path[:-1], path[1:], strict=True)])
        cum = np.concatenate([[0.0], np.cumsum(lengths)])
        u, v = np.sort(rng.uniform(0.0, cum[-1], 2))
        i, j = (min(int(np.searchsorted(cum, x, side="right")) - 1, len(lengths) - 1) for x in (u, v))
        if i == j:
            continue
        qa = path[i] + (u - cum[i]) / max(lengths[i], 1e-12) * (path[i + 1] - path[i])
        qb = path[j] + (v - cum[j]) / max(lengths[j], 1e-12) * (path[j + 1] - path[j])
        if motion_free(qa, qb):
            path = path[: i + 1] + [qa, qb] + path[j + 1 :]
    return _prune(path, motion_free)


@dataclass(frozen=True, eq=False)
class Trajectory:
    """A timed joint-space path: straight segments, each a rest-to-rest trapezoidal speed profile
    of its path parameter s in [0, 1] (peak rate ``rate[i]`` 1/s, acceleration ``accel[i]`` 1/s^2)."""

    waypoints: np.ndarray  # (n, dof), rad
    durations: np.ndarray  # (n-1,), s
    rate: np.ndarray  # (n-1,)
    accel: np.ndarray  # (n-1,)

    @property
    def duration(self) -> float:
        return float(np.sum(self.durations))

    def _locate(self, t: float) -> tuple[int, float]:
        if len(self.durations) == 0:
            return -1, 0.0
        t = min(max(t, 0.0), self.duration)
        ends = np.cumsum(self.durations)
        i = min(int(np.searchsorted(ends, t, side="left")), len(ends) - 1)
        return i, t - (ends[i] - self.durations[i])

    def _profile(self, i: int, tau: float) -> tuple[float, float]:
        """(s, ds/dt) of segment ``i`` at local time ``tau``."""
        T, v, a = self.durations[i], self.rate[i], self.accel[i]
        ta = v / a
        if tau < ta:
            return 0.5 * a * tau**2, a * tau
        if tau > T - ta:
            r = max(T - tau, 0.0)
            return 1.0 - 0.5 * a * r**2, a * r
        return 0.5 * a * ta**2 + v * (tau - ta), v

    def sample(self, t: float) -> np.ndarray:
        """Joint positions at time ``t`` (clamped to [0, duration])."""
        i, tau = self._locate(t)
        if i < 0:
            return self.waypoints[0].copy()
        s, _ = self._profile(i, tau)
        return self.waypoints[i] + s * (self.waypoints[i + 1] - self.waypoints[i])

    def velocity(self, t: float) -> np.ndarray:
        i, tau = self._locate(t)
        if i < 0 or t <= 0.0 or t >= self.duration:
            return np.zeros(self.waypoints.shape[1])
        _, ds = self._profile(i, tau)
        return ds * (self.waypoints[i + 1] - self.waypoints[i])


def time_parameterize(path: list[np.ndarray], vmax: np.ndarray, amax: np.ndarray) -> Trajectory:
    """Time a path as fast as per-joint velocity ``vmax`` (rad/s) and acceleration ``amax``
    (rad/s^2) allow, each segment from rest to rest."""
    W = np.asarray(path, float)
    vmax, amax = np.asarray(vmax, float), np.asarray(amax, float)
    if W.ndim != 2 or len(W) < 1 or np.any(vmax <= 0) or np.any(amax <= 0):
        raise ConfigError("time_parameterize: a path of configurations and positive limits expected")
    durations, rates, accels = [], [], []
    for a, b in zip(W[:-1], W[1:], strict=True):
        d = np.abs(b - a)
        if np.max(d) < 1e-12:
            durations.append(0.0), rates.append(1.0), accels.append(1.0)
            continue
        moving = d > 1e-12
        v = float(np.min(vmax[moving] / d[moving]))  # path-parameter limits
        acc = float(np.min(amax[moving] / d[moving]))
        if v * v / acc >= 1.0:  # triangular: the peak rate is never reached
            v = math.sqrt(acc)
            T = 2.0 / v
        else:
            T = 1.0 / v + v / acc
        durations.append(T), rates.append(v), accels.append(acc)
    return Trajectory(W, np.array(durations), np.array(rates), np.array(accels))
