"""Excitation runs for drive identification: per-joint steps and chirps executed on the lab.

Joint values are encoder readings (rad); times in s. See ``calibrate.arm`` for the fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from r2s2r.lab.real_cell import RealCell
from r2s2r.world import rizon


# --- records --------------------------------------------------------------------------------
@dataclass(frozen=True)
class DriveRun:
    """One excitation run as executed by the lab: ``joint`` (0-based) was excited, the others held.

    ``t`` (N,) s from the start of the run at the lab's servo rate; ``q_cmd`` and ``q`` (N, 7):
    commanded targets (after the safety filter) and encoder readings; ``hand_q`` (20,): the
    hand's encoder reading at the start (its targets are held during the run). ``kind`` is
    ``"small"`` (steps and a chirp inside the linear range) or ``"saturation"`` (torque-limited steps).
    """

    side: str
    joint: int
    kind: str
    t: np.ndarray
    q_cmd: np.ndarray
    q: np.ndarray
    hand_q: np.ndarray


# --- excitation -----------------------------------------------------------------------------
@dataclass(frozen=True)
class DriveExcitationConfig:
    """Per-joint excitation around ``pose`` (encoder values, rad), one joint at a time.

    A small run holds, steps through ``levels`` (x ``amplitude``), then plays a chirp from ``f0``
    to ``f1`` Hz whose peak speed is ``chirp_speed`` x the rated joint speed. Targets stream every
    ``stream_dt`` s; a step is a single target after a ``step_gap`` s pause, so that the safety
    filter's rated-speed check admits it. ``saturation_steps``: optional (joint, step rad) runs of
    torque-limited steps (see the module docstring; off by default).
    """

    pose: tuple[float, ...] = rizon.HOME_Q
    amplitude: float = 0.12
    levels: tuple[float, ...] = (1.0, 0.0, -1.0, 0.0, 0.5, -0.5, 0.0)
    level_hold: float = 0.5
    step_gap: float = 0.1
    chirp_duration: float = 2.5
    f0: float = 0.5
    f1: float = 5.0
    chirp_speed: float = 0.6
    stream_dt: float = 0.01
    settle: float = 0.3
    saturation_steps: tuple[tuple[int, float], ...] = ()


def _timeline(segments: list[tuple[float, list[float]]], dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Times and values of ``(gap, values)`` segments: the first value of a segment comes ``gap``
    s after the previous sample (``dt`` if gap is 0), the others every ``dt`` s."""
    ts, xs, t = [], [], 0.0
    for gap, values in segments:
        for k, v in enumerate(values):
            t += gap if (k == 0 and gap > 0) else dt
            ts.append(t)
            xs.append(v)
    return np.asarray(ts), np.asarray(xs)


def small_signal_targets(joint: int, cfg: DriveExcitationConfig) -> tuple[np.ndarray, np.ndarray]:
    """Times (N,) and offsets (N,) of joint ``joint``'s small-signal run: steps, then a chirp."""
    dt = cfg.stream_dt
    hold = int(round(cfg.level_hold / dt))
    segs = [(0.0, [0.0] * int(round(cfg.settle / dt)))]
    segs += [(cfg.step_gap, [lvl * cfg.amplitude] * hold) for lvl in cfg.levels]
    T, f0, f1 = cfg.chirp_duration, cfg.f0, cfg.f1
    tc = np.arange(1, int(round(T / dt)) + 1) * dt
    amp = min(0.5 * cfg.amplitude, cfg.chirp_speed * rizon.VELOCITY_LIMIT[joint] / (2 * np.pi * f1))
    window = np.sin(np.pi * tc / T) ** 2  # starts and ends at rest; |window'| terms stay within the bound
    segs.append((0.0, list(amp * window * np.sin(2 * np.pi * (f0 * tc + (f1 - f0) / (2 * T) * tc**2)))))
    segs.append((0.0, [0.0] * hold))
    return _timeline(segs, dt)


def saturation_targets(step: float, cfg: DriveExcitationConfig) -> tuple[np.ndarray, np.ndarray]:
    """Times and offsets of a saturating-step run: +step, 0, -step, 0, each held ``level_hold`` s."""
    dt = cfg.stream_dt
    hold = int(round(cfg.level_hold / dt))
    segs = [(0.0, [0.0] * int(round(cfg.settle / dt)))]
    segs += [(cfg.step_gap, [v] * hold) for v in (step, 0.0, -step, 0.0)]
    return _timeline(segs, dt)


def run_excitation(
    lab: RealCell, side: str, joint: int, kind: str, t: np.ndarray, offsets: np.ndarray, cfg: DriveExcitationConfig
) -> DriveRun:
    """Move to ``cfg.pose``, let it settle, execute one joint's offsets and return the record."""
    pose = np.asarray(cfg.pose, float)
    lab.move_to(side, pose, 1.0)
    lab.hold(cfg.settle)
    q = np.tile(pose, (len(t), 1))
    q[:, joint] += offsets
    hand_q = np.asarray(lab.read_encoders(side), float)[7:]
    rec = lab.execute_trajectory(side, t, q)
    return DriveRun(side, joint, kind, np.asarray(rec.t), np.asarray(rec.q_cmd), np.asarray(rec.q), hand_q)
