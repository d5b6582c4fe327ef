"""Scene registration by touch probing: the conveyor and the two bins in the right arm's base frame.

The right hand points its index finger (the other fingers curled, the thumb folded in front of
the palm) and touches the drawing's surfaces with guarded moves: the belt top, the near rail's
outer face and the bed's downstream end face of the conveyor; the floor and the four inner wall
faces of each bin. A contact's fingertip centre (site ``right_index_tip``: the centre of the distal
capsule's end cap) comes from the encoders (arm and finger joints, read while touching) through the
FACTORY kinematics and the hand geometry; the touched plane lies ``radius - compression`` from it
along the surface normal (the cap is a sphere, so this holds whatever the finger's tilt). Each
part's planar pose (x, y, z, yaw of T_base_part) is the least-squares fit of the drawing's planes to
the probed points, regularised by the drawing tolerances (a prior that only decides directions no
probe observes). Every probe is planned from the current estimate, so later probes start close.

Frames: ``base`` is the right arm's base frame (the frame of the factory kinematics); part frames
are those of ``ConveyorParams`` / ``BinParams``. Lengths in m (residuals reported in mm), angles rad.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from dataclasses import dataclass

import numpy as np

from r2s2r.calibrate.probing import (
    HAND_CENTRE,
    PARTS,
    TIP_RADIUS,
    Probe,
    ProbeArm,
    ProbeConfig,
    default_probes,
    pointing_hand_pose,
    tool_rotation,
)
from r2s2r.errors import R2S2RError
from r2s2r.geometry import axis_angle_quat, inv_T, make_T, mat_to_quat
from r2s2r.lab.real_cell import RealCell
from r2s2r.world import rizon
from r2s2r.world.hand import hand_open_pose
from r2s2r.world.params import Pose, WorldParams

_log = logging.getLogger(__name__)
_Z = np.array([0.0, 0.0, 1.0])

# --- planar pose model ---------------------------------------------------------------------------


def _yaw(R: np.ndarray) -> float:
    return math.atan2(R[1, 0], R[0, 0])


def _T_planar(x: np.ndarray) -> np.ndarray:
    """T from (x, y, z, yaw)."""
    return make_T(x[:3], axis_angle_quat(_Z, x[3]))


def nominal_base_poses(spec: WorldParams) -> dict[str, np.ndarray]:
    """T_base_part of the drawing: inv(T_world_base) @ T_world_part (every part is level)."""
    T_base_world = inv_T(make_T(spec.right_arm.base.pos, spec.right_arm.base.quat))
    poses = {"conveyor": spec.conveyor.pose, "red_bin": spec.bin("red").pose, "blue_bin": spec.bin("blue").pose}
    return {k: T_base_world @ make_T(p.pos, p.quat) for k, p in poses.items()}


def _plane_residual(x: np.ndarray, probe: Probe, tip: np.ndarray, r_eff: float) -> float:
    """Signed distance (m) of the fingertip centre from where it should be: r_eff outside the plane."""
    return _plane_residual_T(_T_planar(x), probe, tip, r_eff)


def _plane_residual_T(T: np.ndarray, probe: Probe, tip: np.ndarray, r_eff: float) -> float:
    """``_plane_residual`` for a part at T_base_part."""
    local = T[:3, :3].T @ (tip - T[:3, 3])
    n = np.asarray(probe.normal, float)
    return float(n @ (local - np.asarray(probe.point, float)) - r_eff)


@dataclass
class _PartFit:
    """Running least-squares fit of one part's planar pose (base frame) with a prior."""

    x0: np.ndarray  # prior mean (x, y, z, yaw)
    sigma0: np.ndarray  # prior std
    noise: float
    r_eff: float
    probes: list = dataclasses.field(default_factory=list)  # (Probe, tip (3,))
    x: np.ndarray | None = None
    cov: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.x, self.cov = self.x0.copy(), np.diag(self.sigma0**2)

    def gradient(self, x: np.ndarray, probe: Probe, tip: np.ndarray) -> np.ndarray:
        eps = 1e-6
        r0 = _plane_residual(x, probe, tip, self.r_eff)
        return np.array([(_plane_residual(x + eps * e, probe, tip, self.r_eff) - r0) / eps for e in np.eye(4)])

    def add(self, probe: Probe, tip: np.ndarray) -> None:
        self.probes.append((probe, np.asarray(tip, float)))
        x = self.x.copy()
        for _ in range(5):  # Gauss-Newton on [probe residuals / noise; (x - x0) / sigma0]
            J = np.vstack([self.gradient(x, p, t) / self.noise for p, t in self.probes] + [np.diag(1 / self.sigma0)])
            r = np.r_[
                [_plane_residual(x, p, t, self.r_eff) / self.noise for p, t in self.probes], (x - self.x0) / self.sigma0
            ]
            dx = np.linalg.lstsq(J, -r, rcond=None)[0]
            x = x + dx
            if np.abs(dx).max() < 1e-9:
                break
        self.x, self.cov = x, np.linalg.inv(J.T @ J)

    def residuals(self) -> np.ndarray:
        return np.array([_plane_residual(self.x, p, t, self.r_eff) for p, t in self.probes])

    def expected(self, probe: Probe) -> tuple[np.ndarray, np.ndarray, float]:
        """Expected plane point and outward normal (base frame) of ``probe``, and the 1-sigma
        uncertainty (m) of the plane's position along the normal."""
        T = _T_planar(self.x)
        point = T[:3, :3] @ np.asarray(probe.point, float) + T[:3, 3]
        normal = T[:3, :3] @ np.asarray(probe.normal, float)
        g = self.gradient(self.x, probe, point + self.r_eff * normal)
        return point, normal, float(math.sqrt(max(g @ self.cov @ g, 0.0)))


# --- results -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartRegistration:
    """One part's measured pose T_base_part (right-arm base frame) and how well the drawing fits.

    ``residuals_mm`` are the probed points' distances from the fitted drawing planes (in the order of
    ``labels``); ``std`` the fit's 1-sigma (x, y, z in m, yaw in rad); ``observed`` tells, per
    coordinate, whether the probes determined it (posterior std under half the drawing tolerance; else
    the drawing's value mostly stands)."""

    name: str
    T_base_part: Pose
    labels: tuple[str, ...]
    residuals_mm: tuple[float, ...]
    std: tuple[float, float, float, float]
    observed: tuple[bool, bool, bool, bool]
    tips: tuple[tuple[float, float, float], ...] = ()  # fingertip centre at each contact, base frame, m

    @property
    def rms_mm(self) -> float:
        return float(np.sqrt(np.mean(np.square(self.residuals_mm))))


@dataclass(frozen=True)
class SceneRegistration:
    """Measured poses of the conveyor and the bins in the right arm's base frame."""

    conveyor: PartRegistration
    red_bin: PartRegistration
    blue_bin: PartRegistration

    def parts(self) -> tuple[PartRegistration, ...]:
        return (self.conveyor, self.red_bin, self.blue_bin)

    def T_base(self, part: str) -> np.ndarray:
        pose = getattr(self, part).T_base_part
        return make_T(pose.pos, pose.quat)

    def apply_to(self, params: WorldParams) -> WorldParams:
        """``params`` with the conveyor and bins placed at T_world_base @ T_base_part, where T_world_base
        is ``params.right_arm.base`` (the drawing's base pose in a grounded WorldParams)."""
        T_world_base = make_T(params.right_arm.base.pos, params.right_arm.base.quat)

        def world(part: str) -> Pose:
            T = T_world_base @ self.T_base(part)
            return Pose(tuple(float(v) for v in T[:3, 3]), tuple(float(v) for v in mat_to_quat(T[:3, :3])))

        bins = tuple(dataclasses.replace(b, pose=world(f"{b.color}_bin")) for b in params.bins)
        return params.replace(conveyor=dataclasses.replace(params.conveyor, pose=world("conveyor")), bins=bins)

    def report(self) -> dict[str, float]:
        """Mismatch-report numbers: probe residual RMS and max per part (mm)."""
        out = {}
        for p in self.parts():
            out[f"{p.name}_probe_rms_mm"] = p.rms_mm
            out[f"{p.name}_probe_max_mm"] = float(np.max(np.abs(p.residuals_mm)))
        return out


def probe_residuals_mm(
    params: WorldParams,
    registration: SceneRegistration,
    probes: tuple[Probe, ...] | None = None,
    config: ProbeConfig = ProbeConfig(),
) -> dict[str, np.ndarray]:
    """Per part, the probed fingertip centres' distances (mm) from where ``params``' conveyor and bins
    put the touched planes (base frame: ``params``' right-arm base). Measures any world on the same
    lab data: the grounded world's residuals are the registration's own."""
    probes = default_probes() if probes is None else tuple(probes)
    poses = nominal_base_poses(params)
    r_eff = TIP_RADIUS - config.compression
    out = {}
    for part in registration.parts():
        T = poses[part.name]
        mine = [p for p in probes if p.part == part.name]
        by_label = {p.label: p for p in mine}
        res = [
            _plane_residual_T(T, by_label[label], np.asarray(tip), r_eff)
            for label, tip in zip(part.labels, part.tips, strict=True)
        ]
        out[part.name] = 1000 * np.asarray(res)
    return out


# --- the procedure -------------------------------------------------------------------------------


def _probe(arm: ProbeArm, fit: _PartFit, probe: Probe, config: ProbeConfig, transit: bool) -> np.ndarray:
    """Touch one probe's plane; returns the fingertip centre at contact (base frame)."""
    point, normal, sigma = fit.expected(probe)
    reach = min(config.margin + 3 * sigma, config.max_span)
    R = tool_rotation(normal, probe.tilt, probe.palm, point)
    shift = -R @ HAND_CENTRE  # the hand lies to one side of the index: centre the hand on the probe point
    shift -= (shift @ normal) * normal
    shift -= (shift @ _Z) * _Z
    point = point + shift
    T_start, T_end = np.eye(4), np.eye(4)
    T_start[:3, :3] = T_end[:3, :3] = R
    T_start[:3, 3] = point + normal * (fit.r_eff + reach)
    T_end[:3, 3] = point + normal * (fit.r_eff - reach - config.overshoot)
    what = f"{probe.part} probe {probe.label!r}"
    if transit:  # over the cell at the safe height, then straight down to the start
        above = T_start.copy()
        above[2, 3] = max(config.safe_z, T_start[2, 3])
        arm.transit(above, T_start, what)
    else:
        arm.path(T_start, what)
    T_deep = T_end.copy()
    T_deep[:3, 3] = point + normal * (fit.r_eff - reach)
    contact, tip = arm.touch(T_deep, T_end, what)
    arm.path(T_start, what)  # back off along the approach
    if not contact:
        mm = np.round(1000 * point).astype(int).tolist()
        raise R2S2RError(
            f"registration: {what} found no surface: the fingertip was sent "
            f"{1000 * (2 * reach + config.overshoot):.0f} mm along {np.round(-normal, 2).tolist()} through the "
            f"expected {probe.part} surface at {mm} mm (right-arm base "
            f"frame; the tip ended at {np.round(1000 * tip).astype(int).tolist()} mm) without contact; expected the "
            "part within its drawing tolerance"
        )
    return tip


def _lift(arm: ProbeArm, config: ProbeConfig, what: str) -> None:
    T = arm.pose()
    if T[2, 3] < config.safe_z:
        T[2, 3] = config.safe_z
        arm.path(T, what)


def _go_home(arm: ProbeArm, config: ProbeConfig) -> None:
    """Lift to the safe height, then a checked joint move home with the hand opening."""
    home = np.asarray(rizon.HOME_Q, float)
    _lift(arm, config, "return home")
    arm.check(arm.q + np.linspace(0, 1, 25)[:, None] * (home - arm.q), "return home")
    duration = max(2.0, float(np.abs(home - arm.q).max()) / config.joint_speed)
    arm.lab.move_to("right", np.r_[home, hand_open_pose()], duration)
    arm.lab.hold(2 * config.settle)
    arm.q = home


def register_scene(
    lab: RealCell,
    spec: WorldParams | None = None,
    config: ProbeConfig = ProbeConfig(),
    probes: tuple[Probe, ...] | None = None,
) -> SceneRegistration:
    """Touch-probe the conveyor and bins of ``lab`` and fit their poses in the right arm's base frame.

    ``spec`` is the spec sheet (drawing layout; default ``WorldParams.nominal()``). The belt is stopped;
    the right arm starts and ends at home with its hand open. Raises ``R2S2RError`` when a probe finds
    no surface, a probe point is out of reach, or the drawing does not fit the probed points."""
    spec = spec or WorldParams.nominal()
    probes = default_probes() if probes is None else tuple(probes)
    nominal = nominal_base_poses(spec)
    sigma0 = np.r_[config.pos_tol, config.yaw_tol]
    r_eff = TIP_RADIUS - config.compression
    fits = {
        k: _PartFit(np.r_[T[:3, 3], _yaw(T[:3, :3])], sigma0, config.noise, r_eff)
        for k, T in nominal.items()
        if any(p.part == k for p in probes)
    }
    missing = [p for p in PARTS if p not in fits]
    unknown = sorted({p.part for p in probes} - set(PARTS))
    if missing or unknown:
        raise R2S2RError(f"registration: probes of parts {missing} missing, of {unknown} unknown; expected {PARTS}")
    lab.set_belt_speed(0.0)
    home = np.asarray(rizon.HOME_Q, float)
    lab.move_to("right", np.r_[home, pointing_hand_pose()], 1.5)
    arm = ProbeArm(lab, spec, config)
    arm.q = home
    last: Probe | None = None
    try:
        for probe in probes:
            same_face = last is not None and last.part == probe.part and last.normal == probe.normal
            if not same_face and last is not None:
                _lift(arm, config, f"{probe.part} probe {probe.label!r}")
            tip = _probe(arm, fits[probe.part], probe, config, transit=not same_face)
            fits[probe.part].add(probe, tip)
            _log.debug("%s %s: tip %s mm", probe.part, probe.label, np.round(1000 * tip, 1))
            last = probe
    except R2S2RError:
        with contextlib.suppress(R2S2RError):  # best effort: home again (a failed probe has backed off)
            _go_home(arm, config)
        raise
    _go_home(arm, config)

    parts = {}
    for name, fit in fits.items():
        res = fit.residuals()
        worst = int(np.argmax(np.abs(res)))
        if abs(res[worst]) > config.max_residual:
            raise R2S2RError(
                f"registration: {name} probe {fit.probes[worst][0].label!r} lies {1000 * res[worst]:.1f} mm off "
                f"the fitted drawing (at most {1000 * config.max_residual:.0f} mm expected): the finger touched "
                "something else or the part differs from its drawing"
            )
        std = np.sqrt(np.diag(fit.cov))
        T = _T_planar(fit.x)
        parts[name] = PartRegistration(
            name=name,
            T_base_part=Pose(tuple(float(v) for v in T[:3, 3]), tuple(float(v) for v in mat_to_quat(T[:3, :3]))),
            labels=tuple(p.label for p, _ in fit.probes),
            residuals_mm=tuple(float(1000 * r) for r in res),
            std=tuple(float(s) for s in std),
            observed=tuple(bool(s < 0.5 * s0) for s, s0 in zip(std, sigma0, strict=True)),
            tips=tuple(tuple(float(v) for v in t) for _, t in fit.probes),
        )
    return SceneRegistration(**parts)
