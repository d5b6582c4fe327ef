"""Belt speed: track an object riding the belt with a head camera and compare with the commanded speed.

A technician puts a catalog sphere on the running belt; the head camera captures it every
``frame_period`` s. Each frame is segmented by the object's colour inside the belt's image region,
the blob centroid's viewing ray is intersected with the plane of the sphere's centre (the registered
belt top raised by the sphere's radius; a sphere's outline is centred on its centre's image to well
under a pixel), and a straight line fitted to the along-belt position over time gives the surface
speed. ``speed_scale`` = measured / commanded.

Frames: the camera pose and the conveyor pose are both given in the right arm's base frame
(``CameraParams.pose`` is T_base_camera, OpenCV camera axes; ``T_base_conveyor`` has its origin at
the centre of the belt top, +x the direction of travel). Lengths m, times s, speeds m/s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.geometry import inv_T, make_T
from r2s2r.lab.real_cell import RealCell
from r2s2r.segmentation import belt_mask, color_mask, largest_blob
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import CameraParams, WorldParams


@dataclass(frozen=True)
class BeltSpeedConfig:
    """The tracking run. The object starts ``start_x`` m along the belt (belt frame) and travels
    ``commanded_speed * duration`` m; the default stays in the head camera's unoccluded upstream half."""

    object_name: str = "red_sphere"
    commanded_speed: float = 0.12  # m/s
    start_x: float = -0.45  # m, belt frame
    duration: float = 4.0  # s of tracking
    frame_period: float = 0.4  # s between captures
    settle: float = 0.3  # s after placing, before the first frame
    min_frames: int = 6
    min_blob_px: int = 30  # pixels of a valid blob
    max_rmse: float = 0.003  # m, straight-line fit residual beyond which the track is rejected

    def __post_init__(self) -> None:
        if self.object_name not in CATALOG or CATALOG[self.object_name].shape != "sphere":
            raise ConfigError(f"belt speed object {self.object_name!r}: expected a catalog sphere")
        if not 0.02 <= self.commanded_speed <= 0.25 or self.duration <= 0 or self.frame_period <= 0:
            raise ConfigError("belt speed config: expected 0.02-0.25 m/s and positive duration and frame period")


@dataclass(frozen=True)
class BeltTrack:
    """What the camera saw: frame times (s from the first frame) and blob centroids (px)."""

    times: tuple[float, ...]
    pixels: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class BeltSpeed:
    """Measured belt speed. ``fit_rmse_mm``: residual of the along-belt positions about the fitted
    line; ``lateral_drift_mm``: change of the across-belt position over the track (should be ~0)."""

    speed_scale: float
    commanded_speed: float
    measured_speed: float  # m/s
    fit_rmse_mm: float
    lateral_drift_mm: float
    track: BeltTrack

    def apply_to(self, params: WorldParams) -> WorldParams:
        return params.replace(conveyor=dataclasses.replace(params.conveyor, speed_scale=self.speed_scale))

    def report(self) -> dict[str, float]:
        return {"belt_speed_scale": self.speed_scale, "belt_fit_rmse_mm": self.fit_rmse_mm}


def _blob(image: np.ndarray, color: str, mask: np.ndarray, min_px: int) -> tuple[float, float] | None:
    """Centroid (u, v) px of the largest blob of ``color`` ("red"/"blue") inside ``mask``."""
    blob = largest_blob(color_mask(image, color, mask), min_px)
    return None if blob is None else blob[1]


def belt_positions(track: BeltTrack, camera: CameraParams, T_base_conveyor: np.ndarray, height: float) -> np.ndarray:
    """(N, 2) belt-frame (x, y) where each centroid's viewing ray meets the plane ``height`` m above the belt."""
    T_conv_cam = inv_T(T_base_conveyor) @ make_T(camera.pose.pos, camera.pose.quat)
    rays = camera.lens.unproject(np.asarray(track.pixels, float))
    d = rays @ T_conv_cam[:3, :3].T
    o = T_conv_cam[:3, 3]
    s = (height - o[2]) / d[:, 2]
    return (o + s[:, None] * d)[:, :2]


def estimate_speed(
    track: BeltTrack, camera: CameraParams, T_base_conveyor: np.ndarray, height: float, commanded: float
) -> tuple[float, float, float]:
    """(measured speed m/s, fit RMSE m, lateral drift m) of a track; a pure function of its inputs,
    so a changed camera or conveyor pose can be tried on the same images (sensitivity studies)."""
    xy = belt_positions(track, camera, T_base_conveyor, height)
    t = np.asarray(track.times, float)
    A = np.column_stack([t, np.ones_like(t)])
    (v, x0), *_ = np.linalg.lstsq(A, xy[:, 0], rcond=None)
    rmse = float(np.sqrt(np.mean((A @ [v, x0] - xy[:, 0]) ** 2)))
    drift = float(np.polyfit(t, xy[:, 1], 1)[0] * (t[-1] - t[0]))
    return float(v), rmse, drift


def measure_belt_speed(
    lab: RealCell, camera: CameraParams, T_base_conveyor: np.ndarray, config: BeltSpeedConfig = BeltSpeedConfig()
) -> BeltSpeed:
    """Run the belt at ``config.commanded_speed`` with a sphere on it and track it with ``camera``
    (its intrinsics and pose T_base_camera); ``T_base_conveyor`` from the registration. The belt is
    stopped afterwards and the object stays wherever it rode to."""
    if camera.parent != "world" or camera.name not in lab.cameras:
        raise ConfigError(f"belt speed camera {camera.name!r}: expected a fixed camera of the lab {lab.cameras}")
    obj = CATALOG[config.object_name]
    spec = WorldParams.nominal().conveyor
    mask = belt_mask(camera, np.asarray(T_base_conveyor, float), spec.length, spec.width)
    lab.set_belt_speed(config.commanded_speed)
    lab.place_object(config.object_name, config.start_x, 0.0, 0.0)
    lab.hold(config.settle)
    n = int(round(config.duration / config.frame_period)) + 1
    times, pixels, missed = [], [], []
    for k in range(n):
        if k:
            lab.hold(config.frame_period)
        c = _blob(lab.capture(camera.name), obj.color, mask, config.min_blob_px)
        if c is None:
            missed.append(k)
        else:
            times.append(k * config.frame_period)
            pixels.append(c)
    lab.set_belt_speed(0.0)
    if len(times) < config.min_frames:
        raise R2S2RError(
            f"belt speed: the {obj.color} {config.object_name} was found on the belt in {len(times)} of {n} "
            f"{camera.name} frames; at least {config.min_frames} are needed (missed frames {missed})"
        )
    track = BeltTrack(tuple(times), tuple(pixels))
    v, rmse, drift = estimate_speed(
        track, camera, np.asarray(T_base_conveyor, float), obj.size[0], config.commanded_speed
    )
    if rmse > config.max_rmse:
        raise R2S2RError(
            f"belt speed: the tracked positions deviate {1000 * rmse:.1f} mm RMS from constant speed; at most "
            f"{1000 * config.max_rmse:.0f} mm expected (object slipping, occluded, or a wrong camera pose)"
        )
    return BeltSpeed(
        speed_scale=v / config.commanded_speed,
        commanded_speed=config.commanded_speed,
        measured_speed=v,
        fit_rmse_mm=1000 * rmse,
        lateral_drift_mm=1000 * drift,
        track=track,
    )
