"""``WorldParams``: every property in which a real cell can differ from its spec sheet.

One frozen, JSON-serialisable value describes a whole cell: cameras (intrinsics, distortion,
mounting, image degradations), both arms (kinematics, joint zeros, drive gains, damping,
friction, actuation delay), hands, conveyor and bin layout, object masses and frictions,
lighting, physics and renderer settings. ``WorldParams.nominal()`` is the spec sheet; the lab
twin draws hidden as-built values around it; calibration estimates them from measurements.

Frames: ``world`` has z up, origin on the floor; ``Pose`` values are ``T_parent_frame``.
Camera frames follow OpenCV (x right, y down, z forward).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from r2s2r import atomic
from r2s2r.dataclass_json import from_jsonable, to_jsonable
from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.files import read_json
from r2s2r.geometry import look_at_cv, rpy_quat
from r2s2r.world import rizon
from r2s2r.world.camera import ImageEffects, LensModel
from r2s2r.world.hand import HandParams
from r2s2r.world.objects import CATALOG

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
SCHEMA_VERSION = 2  # 2: visual randomisation ranges


def _check(cond: bool, where: str, expected: str, got: object) -> None:
    if not cond:
        raise ConfigError(f"{where}: expected {expected}, got {got!r}")


def _finite(values, where: str) -> None:
    arr = np.asarray(values, dtype=float)
    _check(bool(np.all(np.isfinite(arr))), where, "finite values", values)


@dataclass(frozen=True)
class Pose:
    """A rigid pose ``T_parent_frame``: position (m) and unit quaternion (wxyz)."""

    pos: Vec3
    quat: Quat = (1.0, 0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        _finite(self.pos + self.quat, "pose")
        norm = math.sqrt(sum(c * c for c in self.quat))
        _check(abs(norm - 1.0) < 1e-3, "pose.quat", "a unit quaternion (wxyz)", self.quat)


@dataclass(frozen=True)
class CameraParams:
    """One physical camera: its lens, where it is mounted, and how its images degrade.

    ``lens`` holds the intrinsics and OpenCV distortion at full sensor resolution (pinhole:
    k1, k2, p1, p2, k3; fisheye: OpenCV's equidistant k1..k4). ``pose`` is ``T_parent_camera``
    with the OpenCV camera frame; ``parent`` is ``"world"`` or a flange body such as
    ``"right_flange"``. ``effects.blur_sigma`` is in full-resolution pixels.
    """

    name: str
    lens: LensModel
    parent: str
    pose: Pose
    effects: ImageEffects = ImageEffects()


@dataclass(frozen=True)
class ArmParams:
    """One 7-DoF arm: base pose, kinematics, encoder zeros and joint drives (7 values each)."""

    base: Pose
    link_pos: tuple[Vec3, ...] = rizon.LINK_POS
    flange_pos: Vec3 = rizon.FLANGE_POS
    joint_zero: tuple[float, ...] = (0.0,) * 7  # rad; physical angle = encoder + joint_zero
    kp: tuple[float, ...] = rizon.KP  # N m/rad
    kv: tuple[float, ...] = rizon.KV  # N m s/rad
    damping: tuple[float, ...] = (1.0,) * 7  # passive viscous damping, N m s/rad
    friction: tuple[float, ...] = (0.5,) * 7  # dry friction (frictionloss), N m
    armature: tuple[float, ...] = (0.4, 0.4, 0.2, 0.2, 0.1, 0.1, 0.1)  # reflected rotor inertia, kg m^2
    link_mass: tuple[float, ...] = rizon.LINK_MASS  # kg
    delay: float = 0.0  # actuation delay of commanded targets, s

    def __post_init__(self) -> None:
        for name in ("link_pos", "joint_zero", "kp", "kv", "damping", "friction", "armature", "link_mass"):
            v = getattr(self, name)
            _check(len(v) == 7, f"arm.{name}", "7 values (one per joint)", v)
            _finite(v, f"arm.{name}")
        for name in ("kp", "kv", "link_mass", "armature"):
            _check(min(getattr(self, name)) > 0, f"arm.{name}", "positive values", getattr(self, name))
        for name in ("damping", "friction"):
            _check(min(getattr(self, name)) >= 0, f"arm.{name}", "non-negative values", getattr(self, name))
        _check(max(abs(z) for z in self.joint_zero) < 0.1, "arm.joint_zero", "offsets under 0.1 rad", self.joint_zero)
        _check(0.0 <= self.delay <= 0.09, "arm.delay", "a delay in [0, 0.09] s (under one control period)", self.delay)


@dataclass(frozen=True)
class ConveyorParams:
    """The conveyor. ``pose`` is T_world_belt: origin at the centre of the belt's top surface,
    +x the direction of travel, +z up. ``speed_scale`` = actual / commanded belt speed."""

    pose: Pose
    length: float = 1.2
    width: float = 0.30
    speed_scale: float = 1.0
    friction: float = 1.0

    def __post_init__(self) -> None:
        _check(
            self.length > 0.3 and self.width > 0.1,
            "conveyor size",
            "length > 0.3 m, width > 0.1 m",
            (self.length, self.width),
        )
        _check(0.5 < self.speed_scale < 1.5, "conveyor.speed_scale", "a value in (0.5, 1.5)", self.speed_scale)
        _check(self.friction > 0, "conveyor.friction", "positive", self.friction)


@dataclass(frozen=True)
class BinParams:
    """A bin. ``pose`` is T_world_bin: origin at the centre of the inside floor, z up.
    ``size`` is the inside (length x, width y, depth z) in m."""

    color: str
    pose: Pose
    size: Vec3 = (0.18, 0.18, 0.12)

    def __post_init__(self) -> None:
        _check(self.color in ("red", "blue"), "bin.color", "'red' or 'blue'", self.color)
        _check(min(self.size) > 0.02, "bin.size", "each side > 2 cm", self.size)


@dataclass(frozen=True)
class ObjectParams:
    """Physical properties of one catalog object (its shape and size come from the catalog)."""

    name: str
    mass: float  # kg
    friction: float = 0.9

    def __post_init__(self) -> None:
        if self.name not in CATALOG:
            raise UnknownNameError("object", self.name, tuple(CATALOG))
        _check(0.005 < self.mass < 2.0, f"object {self.name!r}.mass", "a mass in (0.005, 2) kg", self.mass)
        _check(self.friction > 0, f"object {self.name!r}.friction", "positive", self.friction)


@dataclass(frozen=True)
class LightingParams:
    """Lab lighting: a key light from above (direction in world), plus ambient light."""

    key_dir: Vec3 = (0.3, -0.2, -1.0)
    key_diffuse: float = 0.7
    key_color: Vec3 = (1.0, 1.0, 1.0)
    ambient: float = 0.3

    def __post_init__(self) -> None:
        _check(self.key_dir[2] < 0, "lighting.key_dir", "a direction pointing down (z < 0)", self.key_dir)
        _check(
            0 <= self.key_diffuse <= 2 and 0 <= self.ambient <= 1,
            "lighting",
            "diffuse in [0,2], ambient in [0,1]",
            (self.key_diffuse, self.ambient),
        )


@dataclass(frozen=True)
class PhysicsParams:
    """Simulator settings. Simulated worlds use a 2 ms step; the lab twin runs finer."""

    timestep: float = 0.002
    solref: tuple[float, float] = (0.02, 1.0)
    solimp: tuple[float, float, float] = (0.9, 0.95, 0.001)
    impratio: float = 10.0
    noslip_iterations: int = 0

    def __post_init__(self) -> None:
        _check(0 < self.timestep <= 0.005, "physics.timestep", "a step in (0, 0.005] s", self.timestep)
        _check(
            abs(0.02 / self.timestep - round(0.02 / self.timestep)) < 1e-6,
            "physics.timestep",
            "a step dividing 20 ms",
            self.timestep,
        )
        _check(self.solref[0] >= 2 * self.timestep, "physics.solref", "time constant >= 2 timesteps", self.solref)


@dataclass(frozen=True)
class RenderParams:
    """Renderer quality. MuJoCo's defaults (4096 shadows, 4x MSAA, 28x16 facets per round
    primitive) cost tens of ms a frame on a CPU rasteriser; see docs/benchmarks.md."""

    shadowsize: int = 0  # shadow map side, px (0: no shadows)
    offsamples: int = 0  # MSAA samples
    numslices: int = 16  # facets around capsules, cylinders, spheres
    numstacks: int = 8

    def __post_init__(self) -> None:
        _check(self.shadowsize >= 0 and self.offsamples >= 0, "render", "non-negative sizes", self)
        _check(
            4 <= self.numslices <= 64 and 2 <= self.numstacks <= 32,
            "render.numslices/numstacks",
            "4..64 and 2..32",
            (self.numslices, self.numstacks),
        )


# Shadows and anti-aliasing: how the photometric calibration renders the scenes it fits the lighting to
# (``PhotometricConfig.fit_render``: the lighting is identified on shadowed renders), with MSAA. The
# simulator's own default (``RenderParams()``) renders lean, for generation speed; a simulated
# *evaluation*, which stands in for the lab's cameras, may render with this (``r2s2r eval --shadows``).
SHADOWED_RENDER = RenderParams(shadowsize=1024, offsamples=2)


@dataclass(frozen=True)
class VisualRandomization:
    """Per-episode appearance randomisation of a simulated world around its own (calibrated) values.

    Each simulated episode draws: the key light's intensity x U(1 - ``light``, 1 + ``light``), its
    direction turned about world z by U(-``azimuth``, ``azimuth``) rad, the ambient light x
    U(1 - ``ambient``, 1 + ``ambient``), and each colour channel of the object x U(1 - ``object_color``,
    1 + ``object_color``), on top of the trial condition's lighting. All zero (the default): none.
    The lab twin never randomises (it is the real cell)."""

    light: float = 0.0
    azimuth: float = 0.0  # rad
    ambient: float = 0.0
    object_color: float = 0.0

    def __post_init__(self) -> None:
        for name in ("light", "ambient", "object_color"):
            v = getattr(self, name)
            _check(0.0 <= v <= 0.5, f"randomization.{name}", "a fraction in [0, 0.5]", v)
        _check(0.0 <= self.azimuth <= math.pi, "randomization.azimuth", "an angle in [0, pi] rad", self.azimuth)

    @property
    def active(self) -> bool:
        return any((self.light, self.azimuth, self.ambient, self.object_color))


def _nominal_cameras() -> tuple[CameraParams, ...]:
    look = (0.45, -0.15, 0.72)  # between the pick zone and the bins
    head = LensModel("pinhole", 640, 480, 430.0, 430.0, 319.5, 239.5, (0.0,) * 5)
    cams = []
    for name, y in (("head_left", 0.03), ("head_right", -0.03)):  # a stereo pair, 6 cm baseline
        eye = (0.10, y, 2.0)
        pose = Pose(eye, tuple(look_at_cv(eye, (look[0], look[1] + y, look[2]))))
        cams.append(CameraParams(name=name, lens=head, parent="world", pose=pose))
    # Wrist fisheyes sit on the back of the wrist and look past the fingers at the grasp zone.
    wrist = LensModel("fisheye", 480, 480, 200.0, 200.0, 239.5, 239.5, (0.0,) * 4)
    eye_w, target_w = (-0.07, 0.0, 0.02), (0.05, 0.0, 0.35)
    pose_w = Pose(eye_w, tuple(look_at_cv(eye_w, target_w, up=(-1.0, 0.0, 0.0))))
    for side in ("right", "left"):
        cams.append(CameraParams(name=f"{side}_wrist", lens=wrist, parent=f"{side}_flange", pose=pose_w))
    return tuple(cams)


def _nominal_objects() -> tuple[ObjectParams, ...]:
    return tuple(ObjectParams(name=o.name, mass=round(o.nominal_mass, 4)) for o in CATALOG.values())


@dataclass(frozen=True)
class WorldParams:
    """Everything the simulator needs to build one cell. Frozen and JSON-serialisable."""

    cameras: tuple[CameraParams, ...] = field(default_factory=_nominal_cameras)
    right_arm: ArmParams = ArmParams(base=Pose((0.0, -0.22, 0.78)))
    left_arm: ArmParams = ArmParams(base=Pose((0.0, 0.22, 0.78)))
    right_hand: HandParams = HandParams()
    left_hand: HandParams = HandParams()
    conveyor: ConveyorParams = ConveyorParams(pose=Pose((0.52, 0.15, 0.72), tuple(rpy_quat(0, 0, -math.pi / 2))))
    bins: tuple[BinParams, ...] = (
        BinParams("red", Pose((0.08, -0.58, 0.62))),
        BinParams("blue", Pose((0.30, -0.58, 0.62))),
    )
    objects: tuple[ObjectParams, ...] = field(default_factory=_nominal_objects)
    lighting: LightingParams = LightingParams()
    physics: PhysicsParams = PhysicsParams()
    render: RenderParams = RenderParams()
    randomization: VisualRandomization = VisualRandomization()
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        _check(self.schema_version == SCHEMA_VERSION, "schema_version", str(SCHEMA_VERSION), self.schema_version)
        names = [c.name for c in self.cameras]
        _check(len(set(names)) == len(names), "cameras", "unique names", names)
        for c in self.cameras:
            _check(
                c.parent in ("world", "right_flange", "left_flange"),
                f"camera {c.name!r}.parent",
                "'world', 'right_flange' or 'left_flange'",
                c.parent,
            )
        _check(
            sorted(b.color for b in self.bins) == ["blue", "red"],
            "bins",
            "one red and one blue bin",
            [b.color for b in self.bins],
        )
        objs = [o.name for o in self.objects]
        _check(sorted(objs) == sorted(CATALOG), "objects", f"one entry per catalog object {sorted(CATALOG)}", objs)

    @classmethod
    def nominal(cls) -> WorldParams:
        """The spec sheet: ideal cameras, drawing poses, nominal kinematics and gains."""
        return cls()

    def camera(self, name: str) -> CameraParams:
        for c in self.cameras:
            if c.name == name:
                return c
        raise UnknownNameError("camera", name, [c.name for c in self.cameras])

    def object(self, name: str) -> ObjectParams:
        for o in self.objects:
            if o.name == name:
                return o
        raise UnknownNameError("object", name, [o.name for o in self.objects])

    def bin(self, color: str) -> BinParams:
        for b in self.bins:
            if b.color == color:
                return b
        raise UnknownNameError("bin colour", color, [b.color for b in self.bins])

    def replace(self, **changes) -> WorldParams:
        return dataclasses.replace(self, **changes)

    # --- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict:
        return to_jsonable(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict, where: str = "WorldParams") -> WorldParams:
        """The params of a JSON tree holding every section and field (as ``to_dict`` writes it): a
        missing section or field raises ConfigError instead of quietly taking the spec sheet's value."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a JSON object of WorldParams sections, got {type(data).__name__}")
        sections = [f.name for f in dataclasses.fields(cls)]
        missing = [s for s in sections if s not in data]
        if missing and not set(data) - set(sections):
            raise ConfigError(
                f"{where}: missing section(s) {missing}; a WorldParams file holds every section "
                f"{sections} (write one with WorldParams.save or `r2s2r calibrate`)"
            )
        return from_jsonable(cls, data, where, complete=True)

    def content_hash(self) -> str:
        """Stable 16-hex-digit hash of the parameter values (independent of key order)."""
        canon = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()[:16]

    def save(self, path: str | Path) -> Path:
        return atomic.write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path, option: str | None = None, shadows: bool = False) -> WorldParams:
        """Read a WorldParams JSON file; a missing, unreadable, invalid or incomplete file raises an
        R2S2RError (ConfigError for the contents) naming the file (and ``option``, e.g. ``--world``).
        ``shadows``: the world rendered with ``SHADOWED_RENDER`` instead of the file's own settings."""
        data = read_json(path, "a WorldParams JSON file", option)
        params = cls.from_dict(data, where=f"{option + ' ' if option else ''}{path}: WorldParams")
        return params.replace(render=SHADOWED_RENDER) if shadows else params
