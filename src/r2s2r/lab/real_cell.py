"""``RealCell``: what a lab implements with hardware drivers, and the values it returns.

Everything "real" in r2s2r goes through this protocol: trials (reset to a condition, observe,
act, and the scorer's verdict) and the measurement procedures calibration needs (full-resolution
captures, joint encoders, executed trajectories with encoder records, guarded moves that stop on
contact, a scale, a mountable calibration target, the robot's factory calibration file, lighting
and belt speed). Joint values are encoder readings in rad; ``side`` is ``"right"`` or ``"left"``.
Every command a real robot would execute passes the lab's safety filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from r2s2r.world import rizon
from r2s2r.world.cell import Observe
from r2s2r.world.conditions import Condition
from r2s2r.world.judge import Verdict
from r2s2r.world.scene import TargetMount

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class EncoderRecord:
    """A joint trajectory as executed: times (s, from the start of the motion), the commanded
    targets after the safety filter and the encoder readings, (N, 7) each, at the lab's servo rate."""

    side: str
    t: np.ndarray
    q_cmd: np.ndarray
    q: np.ndarray


@dataclass(frozen=True)
class GuardedMoveResult:
    """Where a guarded move stopped: ``contact`` tells whether the probe touched something;
    ``q`` is the arm's encoder reading (7,) at the stop."""

    contact: bool
    q: np.ndarray
    force: float  # contact force on the probe when it stopped, N


@dataclass(frozen=True)
class KinematicCalibration:
    """The robot maker's kinematic calibration file for one arm (close to, not equal to, the
    true kinematics). ``forward(q)`` gives T_base_flange for encoder readings ``q``."""

    side: str
    link_pos: tuple[Vec3, ...]
    flange_pos: Vec3
    joint_zero: tuple[float, ...]

    def forward(self, q: np.ndarray) -> np.ndarray:
        return rizon.forward_kinematics(q, self.link_pos, self.flange_pos, self.joint_zero)


@dataclass(frozen=True)
class HumanView:
    """What a person standing at the cell sees of the current trial, at human accuracy (about
    a centimetre and ten degrees; belt speed within about ten percent). For the teleoperator
    only: a program that needs the object's pose estimates it from images."""

    time: float  # s since the trial started
    object_name: str  # the person recognises which catalog object it is
    object_pos: np.ndarray  # (3,) world frame, m
    object_yaw: float  # about world z, rad
    belt_speed: float  # m/s along the belt's direction of travel
    belt_dir: np.ndarray  # (3,) unit direction of travel, world frame
    bin_pos: dict[str, np.ndarray]  # colour -> (3,) centre of the bin's inside floor, world frame


@runtime_checkable
class TrialCell(Protocol):
    """What running trials needs of a cell: the trial itself, the person's view, the arm's encoders
    and factory calibration (the teleoperator's IK), full-resolution captures (trial videos) and the
    safety filter's counts. Every ``RealCell`` is one; so is a simulated cell behind the lab's
    interface (``r2s2r.lab.simulated_cell.SimulatedCell``)."""

    cameras: tuple[str, ...]  # every camera by name; trials observe ``policy_cameras``
    policy_cameras: tuple[str, ...]
    image_size: int
    control_dt: float

    # --- trials ---------------------------------------------------------------------------
    def reset(self, condition: Condition, seed: int) -> dict[str, np.ndarray]:
        """Set up a trial: lighting and belt speed of ``condition``, its object placed upstream,
        the picking arm at home. Returns the first observation."""

    def observe(self) -> dict[str, np.ndarray]:
        """Policy cameras (uint8, ``image_size`` square) and ``proprio`` (27 joint positions)."""

    def act(self, action: np.ndarray, observe: Observe = True) -> dict[str, np.ndarray]:
        """Execute one 10 Hz action (7 arm + 20 hand joint targets) and observe. With ``observe``
        False the caller reads only ``proprio`` of the result, with a collection of camera names only
        those cameras' images and ``proprio``: a cell may skip the other cameras (the twin does, keeping
        every later frame as it would have been); a real one may still send them."""

    def last_command(self, side: str) -> np.ndarray:
        """The joint targets (27,) the side's controller is tracking: the last command as it reached
        the robot, after the safety filter (what a demonstration records as its action)."""

    def verdict(self) -> Verdict:
        """The scorer's verdict on the current trial."""

    def human_view(self) -> HumanView:
        """The scene as the teleoperator sees it (see ``HumanView``)."""

    def capture(self, camera: str, size: tuple[int, int] | None = None) -> np.ndarray:
        """One frame (H, W, 3) uint8 of ``camera``: at full resolution, or read out at ``size`` =
        (width, height) (the sensor cropped centrally to that aspect ratio and scaled; trial videos)."""

    def read_encoders(self, side: str) -> np.ndarray:
        """Joint encoders of one side: 7 arm + 20 hand (27,), rad."""

    def factory_calibration(self, side: str) -> KinematicCalibration:
        """The robot maker's kinematic calibration file of one arm."""

    def safety_report(self) -> dict[str, int]:
        """How many commands the safety filter changed, by kind of violation."""


@runtime_checkable
class RealCell(TrialCell, Protocol):
    """A real (or twin) pick-and-sort cell: trials and every measurement calibration needs."""

    # --- measurements ---------------------------------------------------------------------
    def move_to(self, side: str, q: np.ndarray, duration: float) -> EncoderRecord:
        """Smooth (minimum-jerk) joint move of one arm (7,) or arm + hand (27,) in ``duration`` s."""

    def execute_trajectory(self, side: str, t: np.ndarray, q: np.ndarray) -> EncoderRecord:
        """Stream arm joint targets ``q`` (N, 7) at times ``t`` (N,) (held between samples) and
        return the encoder record at the servo rate until the last sample's time."""

    def guarded_move(
        self, side: str, q_target: np.ndarray, duration: float, force_threshold: float = 2.0
    ) -> GuardedMoveResult:
        """Move the arm linearly in joint space toward ``q_target`` (7,) over ``duration`` s and
        stop as soon as the index fingertip feels more than ``force_threshold`` N."""

    def weigh(self, object_name: str) -> float:
        """Put catalog object ``object_name`` on the scale; its reading in kg."""

    def mount_target(self, mount: TargetMount | None) -> None:
        """Mount a calibration target (on a flange or at a fixture), or remove it (None)."""

    def set_lighting(self, scale: float, tint: Vec3 = (1.0, 1.0, 1.0), azimuth: float = 0.0) -> None:
        """Dim/brighten, tint and turn the key light (as a condition's lighting shift does)."""

    def set_belt_speed(self, speed: float) -> None:
        """Command the belt speed (m/s)."""

    def place_object(self, object_name: str, start_x: float, lateral: float, yaw: float) -> None:
        """A technician puts ``object_name`` on the belt at belt-frame (x, y) with ``yaw``."""

    def hold(self, duration: float) -> None:
        """Let ``duration`` s pass with the robots holding their commands."""
