"""The whole world grounding of a cell: every procedure, the grounded ``WorldParams``, and the
measurements behind it (for the mismatch report and for re-fitting).

Order: arm drive (excitation runs, first: see below), cameras (checkerboard sessions), scene
registration (touch probing), belt speed (head camera tracking, registered conveyor), masses
(scale), photometry
(board images + a still scene, rendered in the grounded geometry), then check measurements the
fits never see: a second belt track at another speed, a second weighing, and a second still scene
with another object, for the report.

The drive runs come first, from the arm's resting state: every procedure that moves the arm leaves
its joints a few mrad off their targets (dry friction holds them), and during an excitation run
the held joints then break free on the lab but creep on the simulator (MuJoCo's friction loss is a
soft constraint), which costs the replay 3x its tracking error (measured: 0.21 -> 0.63 mrad).

The grounded world: the spec sheet with the factory kinematics of both arms, the right arm's
identified drive, the calibrated cameras (head cameras placed through the drawing's right-arm base:
the robot frame), the registered conveyor and bins, the measured belt speed scale and masses, the
calibrated image effects and lighting, and visual randomisation around them
(``GROUNDED_RANDOMIZATION``). The left arm's drive, both hands' servos, frictions and the physics
settings stay at their spec-sheet values (not identified here).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from r2s2r.calibrate.arm import ArmCalibration, DriveFitConfig, calibrate_arm
from r2s2r.calibrate.belt import BeltSpeed, BeltSpeedConfig, measure_belt_speed
from r2s2r.calibrate.cameras import CameraCalibConfig, CameraCalibration, CameraViews, calibrate_cameras
from r2s2r.calibrate.excitation import DriveExcitationConfig
from r2s2r.calibrate.masses import MassConfig, ObjectMasses, measure_masses
from r2s2r.calibrate.photometric import (
    PhotometricCalibration,
    PhotometricConfig,
    SceneCapture,
    calibrate_photometry,
    capture_scene,
)
from r2s2r.calibrate.probing import ProbeConfig
from r2s2r.calibrate.registration import SceneRegistration, register_scene
from r2s2r.lab.real_cell import KinematicCalibration, RealCell
from r2s2r.world.params import CameraParams, VisualRandomization, WorldParams

SIDES = ("right", "left")
STAGES = ("arm", "cameras", "registration", "belt", "masses", "photometry", "checks")
# Around the calibrated values: the lab's lamps and daylight vary by about +-10 % and the key
# light's direction by a few degrees over a day; object colours by a few percent between batches.
GROUNDED_RANDOMIZATION = VisualRandomization(light=0.10, azimuth=0.10, ambient=0.10, object_color=0.05)


@dataclass(frozen=True)
class CalibrationConfig:
    """Every procedure's settings. ``seed`` draws the camera sessions' board poses."""

    seed: int = 0
    cameras: CameraCalibConfig = CameraCalibConfig()
    probes: ProbeConfig = ProbeConfig()
    belt: BeltSpeedConfig = BeltSpeedConfig()
    belt_check_speed: float = 0.07  # m/s of the check track
    masses: MassConfig = MassConfig()
    excitation: DriveExcitationConfig = DriveExcitationConfig()
    drive_fit: DriveFitConfig = DriveFitConfig()
    photometric: PhotometricConfig = PhotometricConfig()
    check_scene: PhotometricConfig = PhotometricConfig(
        scene_object="blue_cylinder", scene_placement=(-0.05, -0.03, 1.0)
    )
    randomization: VisualRandomization = GROUNDED_RANDOMIZATION


@dataclass(frozen=True, eq=False)
class Checks:
    """Measurements the fits never used (for the mismatch report)."""

    belt: BeltSpeed  # a second track at ``belt_check_speed``
    masses: ObjectMasses  # a second weighing
    scene: SceneCapture  # a second still scene


@dataclass(frozen=True, eq=False)
class Calibration:
    """A lab's world grounding: the grounded world and everything it came from."""

    lab: str
    world: WorldParams
    factory: dict[str, KinematicCalibration]
    cameras: CameraCalibration
    views: CameraViews
    registration: SceneRegistration
    belt: BeltSpeed
    masses: ObjectMasses
    arm: ArmCalibration
    photometry: PhotometricCalibration
    scene: SceneCapture
    checks: Checks
    seconds: dict[str, float]


def head_camera_in_base(cameras: CameraCalibration, name: str = "head_left") -> CameraParams:
    """A calibrated head camera as ``CameraParams`` with its pose T_base_camera (right-arm base)."""
    est = cameras.camera(name)
    return CameraParams(name=name, lens=est.lens, parent="world", pose=est.pose)


def with_factory_kinematics(params: WorldParams, factory: dict[str, KinematicCalibration]) -> WorldParams:
    """``params`` with each arm's kinematics from its factory calibration file."""
    arms = {}
    for side, kin in factory.items():
        arm = getattr(params, f"{side}_arm")
        arms[f"{side}_arm"] = dataclasses.replace(
            arm, link_pos=kin.link_pos, flange_pos=kin.flange_pos, joint_zero=kin.joint_zero
        )
    return params.replace(**arms)


def calibrate_lab(
    lab: RealCell,
    config: CalibrationConfig = CalibrationConfig(),
    on_stage: Callable[[str, str, float], None] | None = None,
) -> Calibration:
    """Run every procedure on ``lab`` and assemble the grounded world. ``on_stage(stage, event,
    seconds)`` is called with event ``"start"`` and ``"done"`` for each of ``STAGES``."""
    seconds: dict[str, float] = {}

    def stage(name: str, run: Callable[[], object]):
        if on_stage is not None:
            on_stage(name, "start", 0.0)
        t0 = time.perf_counter()
        out = run()
        seconds[name] = time.perf_counter() - t0
        if on_stage is not None:
            on_stage(name, "done", seconds[name])
        return out

    rng = np.random.default_rng([0xCA11B, config.seed])
    factory = {s: lab.factory_calibration(s) for s in SIDES}
    arm = stage("arm", lambda: calibrate_arm(lab, "right", config.excitation, config.drive_fit))
    cameras, views = stage("cameras", lambda: calibrate_cameras(lab, rng, config.cameras))
    registration = stage("registration", lambda: register_scene(lab, config=config.probes))
    head = head_camera_in_base(cameras)
    belt = stage("belt", lambda: measure_belt_speed(lab, head, registration.T_base("conveyor"), config.belt))
    masses = stage("masses", lambda: measure_masses(lab, config=config.masses))

    geometry = with_factory_kinematics(WorldParams.nominal(), factory)
    for part in (cameras, registration, belt, masses, arm.dynamics):
        geometry = part.apply_to(geometry)

    def photometry():
        scene = capture_scene(lab, config.photometric)
        return calibrate_photometry(views, cameras, scene, geometry, config.photometric), scene

    photo, scene = stage("photometry", photometry)
    world = photo.apply_to(geometry).replace(randomization=config.randomization)

    def checks() -> Checks:
        belt_check = dataclasses.replace(config.belt, commanded_speed=config.belt_check_speed)
        return Checks(
            belt=measure_belt_speed(lab, head, registration.T_base("conveyor"), belt_check),
            masses=measure_masses(lab, config=dataclasses.replace(config.masses, repeats=1)),
            scene=capture_scene(lab, config.check_scene),
        )

    check = stage("checks", checks)
    return Calibration(
        lab=repr(lab),
        world=world,
        factory=factory,
        cameras=cameras,
        views=views,
        registration=registration,
        belt=belt,
        masses=masses,
        arm=arm,
        photometry=photo,
        scene=scene,
        checks=check,
        seconds=seconds,
    )
