"""``CommandShaper``: what a teleoperation system does to the commands it sends, for any command source.

A robot's command interface sends only what the robot may execute. The teleoperation system that
collected the demonstrations does it to the operator's commands (``r2s2r.behavior.teleop``): each arm
step is limited to a fraction of the rated joint speeds and every target kept inside the joint ranges
the safety filter allows (arm joints less its margin, hand joints at their stops). A learned policy's
commands pass the same shaping before they reach the robot, so that policy and operator are held to
one standard and the safety filter (``r2s2r.lab.safety``) stays the last line, not the smoother.

Order of operations (the teleop system's): step = clip(target - previous, -max_step, max_step), then
the new command = clip(previous + step, lo, hi); the hand's targets are clipped to their ranges only.
``CommandShaper.shape`` reports whether anything changed, so a caller can count how often the shaping
engaged (a policy whose chunks jump shows it there instead of in the filter's velocity clips).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.lab.safety import SafetyLimits
from r2s2r.world import rizon
from r2s2r.world.hand import hand_joint_ranges

ARM = 7
SPEED_FRACTION = 0.9  # of the rated joint speeds, as the teleoperation system sends
ROUNDING = 1e-3  # rad kept inside the safety filter's arm range (float32 rounding of recorded commands)


def limit_arm_step(previous: np.ndarray, target: np.ndarray, max_step: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """The arm command after ``previous`` towards ``target``: the step clipped to +-``max_step``, then
    the command clipped into [``lo``, ``hi``] (the teleop system's order)."""
    step = np.clip(target - previous, -max_step, max_step)
    return np.clip(previous + step, lo, hi)


@dataclass(frozen=True)
class CommandShaper:
    """Limits 27-D right-side commands (7 arm + 20 hand joint targets, rad) sent every ``control_dt`` s."""

    control_dt: float
    speed_fraction: float = SPEED_FRACTION
    max_step: np.ndarray = field(init=False, repr=False, compare=False)
    lo: np.ndarray = field(init=False, repr=False, compare=False)
    hi: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.control_dt > 0:
            raise ConfigError(f"command shaping: expected a positive control period, got {self.control_dt!r}")
        if not 0 < self.speed_fraction <= 1:
            raise ConfigError(f"command shaping: expected a speed fraction in (0, 1], got {self.speed_fraction!r}")
        margin = SafetyLimits().joint_margin + ROUNDING
        arm = np.asarray(rizon.JOINT_RANGE, dtype=float)
        ranges = np.vstack([np.c_[arm[:, 0] + margin, arm[:, 1] - margin], hand_joint_ranges()])
        step = np.asarray(rizon.VELOCITY_LIMIT, dtype=float) * self.speed_fraction * self.control_dt
        object.__setattr__(self, "max_step", step)
        object.__setattr__(self, "lo", ranges[:, 0])
        object.__setattr__(self, "hi", ranges[:, 1])

    def shape(self, previous: np.ndarray, command: np.ndarray) -> tuple[np.ndarray, bool]:
        """(the command to send after ``previous``, whether shaping changed ``command``). A non-finite
        command holds ``previous`` (the filter would do the same, and count it)."""
        previous = np.asarray(previous, dtype=float)
        command = np.asarray(command, dtype=float)
        if command.shape != (ARM + 20,) or previous.shape != command.shape:
            raise ConfigError(f"command shaping: expected 27-D commands, got {previous.shape} and {command.shape}")
        if not np.all(np.isfinite(command)):
            return previous.copy(), True
        fast = np.abs(command[:ARM] - previous[:ARM]) > self.max_step
        if not (fast.any() or np.any(command < self.lo) or np.any(command > self.hi)):
            return command, False  # sent as it is, to the bit
        out = np.empty_like(command)
        out[:ARM] = limit_arm_step(previous[:ARM], command[:ARM], self.max_step, self.lo[:ARM], self.hi[:ARM])
        out[ARM:] = np.clip(command[ARM:], self.lo[ARM:], self.hi[ARM:])
        return out, True
