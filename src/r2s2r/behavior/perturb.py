"""Perturbed demonstrations (DART, Laskey et al. 2017): noise on what the robot executes, not on the label.

A policy cloned from clean demonstrations only ever saw states on the operator's path; closed loop,
its small errors take it off that path, where it has no data and its errors compound (measured on
lab 0: the cloned policy's hand was up to 12 cm behind the object on the belt at the grasp, while
open loop on held-out demonstration frames it was nearly right). DART's answer: while collecting,
the teleoperation system adds a small, slowly varying offset to the arm joint targets it sends, so
the robot drifts off the operator's path the way a policy would; the operator, watching the cell,
keeps commanding the right targets, and the demonstration records those commands as the actions.
The data then holds off-path states labelled with the way back.

The offset is an Ornstein-Uhlenbeck process per arm joint (stationary standard deviation ``std``,
correlation time ``tau``), starting at zero. It acts only while the operator approaches the object
and fades out over ``fade`` seconds after: the operator's commands are absolute targets that do
not react to where the robot's hand really is, so an offset still present at the grasp misplaces
the hand (measured: with it on all the way, 9 of 20 attempts succeed at 0.04 rad, 1 of 20 at 0.08; with
the fade, 19 of 20 at either). What is sent stays a command a robot may execute: the step from the
previously sent command is limited to the teleoperation system's joint speed and the targets to
its joint ranges, so the safety filter has nothing to change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError


@dataclass(frozen=True)
class Perturbation:
    """Noise added to the arm joint targets sent during a demonstration (not to the recorded action)."""

    std: float = 0.06  # rad: stationary standard deviation of each arm joint's offset (lab 0's DART demos)
    tau: float = 0.5  # s: correlation time of the offset
    fade: float = 0.5  # s: the offset's fade-out once the approach ends

    def __post_init__(self) -> None:
        if not (isinstance(self.std, int | float) and math.isfinite(self.std) and self.std > 0):
            raise ConfigError(f"perturbation std: expected a positive number of rad, got {self.std!r}")
        for name in ("tau", "fade"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"perturbation {name}: expected a positive number of seconds, got {value!r}")


class ArmPerturber:
    """Turns one demonstration's clean commands into the perturbed commands sent to the robot.

    ``lo``/``hi`` bound the sent arm targets and ``max_step`` bounds each sent step (rad, per joint),
    as the teleoperation system bounds its clean commands; ``start`` is the robot's current command."""

    def __init__(
        self,
        perturbation: Perturbation,
        dt: float,
        rng: np.random.Generator,
        lo: np.ndarray,
        hi: np.ndarray,
        max_step: np.ndarray,
        start: np.ndarray,
    ) -> None:
        self.decay = math.exp(-dt / perturbation.tau)
        self.fade_step = dt / perturbation.fade
        self.gain = 1.0
        self.kick = perturbation.std * math.sqrt(1.0 - self.decay**2)
        self.rng = rng
        self.lo, self.hi, self.max_step = (np.asarray(x, dtype=float) for x in (lo, hi, max_step))
        self.offset = np.zeros(len(self.lo))
        self.sent = np.asarray(start, dtype=float)[: len(self.lo)].copy()  # the robot's current arm command

    def __call__(self, command: np.ndarray, approaching: bool) -> np.ndarray:
        """The command to send for the operator's ``command`` (27,): arm joints offset, hand unchanged.
        ``approaching``: the operator is still on the way to the object (else the offset fades out)."""
        n = len(self.offset)
        self.offset = self.decay * self.offset + self.kick * self.rng.standard_normal(n)
        self.gain = 1.0 if approaching else max(0.0, self.gain - self.fade_step)
        arm = np.clip(command[:n] + self.gain * self.offset, self.lo, self.hi)
        arm = self.sent + np.clip(arm - self.sent, -self.max_step, self.max_step)
        self.sent = arm
        return np.concatenate([arm, command[n:]]).astype(command.dtype)
