"""Photometric calibration: blur, sensor noise, colour gains, vignetting, and the cell's lighting.

Pixels are full-resolution; image values are 8-bit levels. The image model is the simulator's own
(``r2s2r.world.camera.CameraPipeline``): ideal render -> lens remap -> Gaussian blur -> per-channel
gain ``wb_gains * gain`` x vignetting ``1 - v r^2`` (r^2 normalised by a quarter of the squared
image diagonal, centred on the principal point) -> additive Gaussian noise.

- **Blur** (slanted edges; fitted on the even-numbered kept views, checked on the odd-numbered
  ones): on the checkerboard images the geometric calibration kept, every edge
  between two neighbouring inner corners is a black/white step; the pixels near its middle, by
  their signed distance from the line through the two (sub-pixel) corners, sample the edge spread
  function, fitted with a Gaussian step: the edge's total width ``s_lab``. The simulator's own
  rendering already spreads an edge (raster + remap): the same views rendered in the grounded
  simulator without blur give ``s_sim``, and the camera's blur is ``sqrt(s_lab^2 - s_sim^2)``.
- **Noise** (temporal): two captures of a still cell; per pixel their difference has variance
  ``2 s^2 + 2/12`` (the noise of each, plus 8-bit rounding), away from clipping.
- **Gains, vignetting and lighting** (analysis by synthesis): a still scene (arms at rest, an
  object on the stopped belt) captured by every camera is rendered in the grounded simulator (its
  geometry, the blur above, shadows on as in a real cell) under a candidate lighting (key light
  direction, key diffuse, ambient); per camera and channel a gain and a vignetting coefficient are
  fitted in closed form, and the lighting by robust least squares on the pixel residuals of all
  cameras at once. Light intensity and camera gain are only observable as a product: the gauge is
  fixed by keeping the lighting's key diffuse + ambient at the spec sheet's total and white light,
  so each camera's gains carry the rest (and the light's colour).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.optimize import least_squares
from scipy.special import erf

from r2s2r.calibrate.cameras import CameraCalibration, CameraViews
from r2s2r.calibrate.cell_model import rest_pose
from r2s2r.calibrate.corners import detect_corners
from r2s2r.calibrate.views import BoardViews
from r2s2r.errors import R2S2RError
from r2s2r.geometry import make_T, mat_to_quat
from r2s2r.lab.real_cell import RealCell
from r2s2r.world.camera import ImageEffects, LensModel
from r2s2r.world.engine import CellEngine
from r2s2r.world.hand import hand_open_pose
from r2s2r.world.params import LightingParams, RenderParams, WorldParams
from r2s2r.world.scene import TargetMount
from r2s2r.world.target import Checkerboard

SIDES = ("right", "left")


@dataclass(frozen=True)
class PhotometricConfig:
    """Settings of the photometric calibration (pixels full-resolution, levels 8-bit)."""

    edge_halfwidth: float = 5.0  # px each side of an edge sampled for its spread function
    edge_span: tuple[float, float] = (0.3, 0.7)  # part of each corner-to-corner edge used
    min_contrast: float = 40.0  # levels between an edge's two sides
    min_edges: int = 20  # edges an image needs for its blur fit
    scene_object: str = "red_cube"
    scene_placement: tuple[float, float, float] = (-0.15, 0.02, 0.3)  # belt-frame x, y (m), yaw (rad)
    fit_render: RenderParams = RenderParams(shadowsize=1024, offsamples=0)  # renders the fit compares
    fit_stride: int = 3  # every n-th pixel row and column enters the lighting fit
    max_evaluations: int = 40
    max_fit_rms: float = 12.0  # levels: a worse lighting fit means the scene or geometry is off


@dataclass(frozen=True, eq=False)
class SceneCapture:
    """A still scene captured twice by every camera: ``images[camera]`` (2, H, W, 3) uint8; both
    arms' encoders (27,) and the object placed on the stopped belt at ``placement`` (belt frame)."""

    object_name: str
    placement: tuple[float, float, float]
    q: dict[str, np.ndarray]
    images: dict[str, np.ndarray]


@dataclass(frozen=True)
class CameraPhotometry:
    """One camera's image effects and the measurements behind them."""

    name: str
    effects: ImageEffects
    edge_sigma_lab: float  # px, median over the fitted board views (even-numbered kept views)
    edge_sigma_sim: float  # px, the same views rendered without blur
    check_sigma_lab: float  # px, the same on the held-out (odd-numbered) kept views
    check_sigma_sim: float


@dataclass(frozen=True)
class PhotometricCalibration:
    cameras: tuple[CameraPhotometry, ...]
    lighting: LightingParams
    fit_rms: float  # levels, scene residual of the lighting + gains fit
    evaluations: int

    def camera(self, name: str) -> CameraPhotometry:
        for c in self.cameras:
            if c.name == name:
                return c
        raise R2S2RError(f"photometry: no camera {name!r}; expected one of {[c.name for c in self.cameras]}")

    def apply_to(self, params: WorldParams) -> WorldParams:
        """``params`` with every camera's effects and the calibrated lighting."""
        cams = tuple(dataclasses.replace(c, effects=self.camera(c.name).effects) for c in params.cameras)
        return params.replace(cameras=cams, lighting=self.lighting)


# --- measurements on images ---------------------------------------------------------------------
def edge_spread_sigma(image: np.ndarray, corners: np.ndarray, board: Checkerboard, config: PhotometricConfig) -> float:
    """Gaussian width (px) of the black/white edges between neighbouring inner corners (K, 2)."""
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(float)
    h, w = gray.shape
    grid = corners.reshape(board.rows, board.cols, 2)
    segments = [(grid[r, c], grid[r, c + 1]) for r in range(board.rows) for c in range(board.cols - 1)]
    segments += [(grid[r, c], grid[r + 1, c]) for r in range(board.rows - 1) for c in range(board.cols)]
    dist, level = [], []
    for a, b in segments:
        length = float(np.linalg.norm(b - a))
        u = (b - a) / length
        n = np.array([-u[1], u[0]])
        half = min(config.edge_halfwidth, 0.3 * length)
        lo = np.floor(np.minimum(a, b) - half).astype(int)
        hi = np.ceil(np.maximum(a, b) + half).astype(int)
        xs, ys = np.meshgrid(
            np.arange(max(lo[0], 0), min(hi[0], w - 1) + 1), np.arange(max(lo[1], 0), min(hi[1], h - 1) + 1)
        )
        P = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(float)
        t, d = (P - a) @ u / length, (P - a) @ n
        sel = (t > config.edge_span[0]) & (t < config.edge_span[1]) & (np.abs(d) < half)
        values, d = gray[P[sel, 1].astype(int), P[sel, 0].astype(int)], d[sel]
        far = np.abs(d) > 0.6 * half
        bright, dark = values[far & (d > 0)], values[far & (d < 0)]
        if len(bright) < 3 or len(dark) < 3:
            continue
        top, bottom = float(np.median(bright)), float(np.median(dark))
        if abs(top - bottom) < config.min_contrast:
            continue
        dist.append(d)
        level.append((values - bottom) / (top - bottom))
    if len(dist) < config.min_edges:
        raise R2S2RError(
            f"blur: {len(dist)} usable board edges in an image; at least {config.min_edges} are needed "
            "(board out of focus, too small, or too dark)"
        )
    d, e = np.concatenate(dist), np.concatenate(level)

    def residual(x: np.ndarray) -> np.ndarray:
        return 0.5 * (1 + erf((d - x[1]) / (math.sqrt(2) * abs(x[0]) + 1e-9))) - e

    sol = least_squares(residual, [0.8, 0.0], loss="soft_l1", f_scale=0.1)
    return float(abs(sol.x[0]))


def temporal_noise_std(a: np.ndarray, b: np.ndarray, lo: int = 8, hi: int = 247) -> float:
    """Per-pixel noise std (levels) from two captures of a still scene, away from clipping."""
    a16, b16 = a.astype(np.int16), b.astype(np.int16)
    ok = (np.minimum(a16, b16) >= lo) & (np.maximum(a16, b16) <= hi)
    if ok.sum() < 1000:
        raise R2S2RError(f"noise: only {int(ok.sum())} unclipped pixel values; at least 1000 are needed")
    var = float(np.var((a16 - b16)[ok].astype(float)))
    return math.sqrt(max(var - 2 / 12, 0.0) / 2)


def _r2(lens: LensModel) -> np.ndarray:
    us, vs = np.meshgrid(np.arange(lens.width, dtype=float), np.arange(lens.height, dtype=float))
    return ((us - lens.cx) ** 2 + (vs - lens.cy) ** 2) / (0.25 * (lens.width**2 + lens.height**2))


def _gains_vignetting(lab: np.ndarray, sim: np.ndarray, r2: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-channel gain G and one vignetting v with lab ~ G (1 - v r^2) sim (``lab``, ``sim`` (N, 3)
    levels, ``r2`` (N,)): least squares, refitted without the pixels it misses by more than five
    robust sigmas (edges a fraction of a pixel apart, shadows the simulator draws differently)."""
    keep = np.ones(len(r2), bool)
    for _ in range(2):
        gains, products = [], []
        for ch in range(3):
            s = sim[keep, ch]
            A = np.stack([s, -r2[keep] * s], axis=1)
            coef = np.linalg.lstsq(A, lab[keep, ch], rcond=None)[0]
            gains.append(coef[0])
            products.append(coef[1])
        gains, v = np.asarray(gains), float(np.sum(products) / np.sum(gains))
        err = np.abs(lab - gains * (1 - v * r2)[:, None] * sim).max(axis=1)
        keep = err < max(5 * 1.4826 * np.median(err), 3.0)
    return gains, v


# --- the lab procedure --------------------------------------------------------------------------
def capture_scene(lab: RealCell, config: PhotometricConfig = PhotometricConfig()) -> SceneCapture:
    """Stop the belt, put the scene object on it, lab lighting, and capture every camera twice."""
    lab.set_belt_speed(0.0)
    lab.set_lighting(1.0)
    lab.hold(0.3)
    lab.place_object(config.scene_object, *config.scene_placement)
    images = {c: np.stack([lab.capture(c), lab.capture(c)]) for c in lab.cameras}
    q = {s: np.asarray(lab.read_encoders(s), float) for s in SIDES}
    return SceneCapture(config.scene_object, tuple(config.scene_placement), q, images)


def scene_engine(world: WorldParams, scene: SceneCapture, render: RenderParams | None = None) -> CellEngine:
    """A simulated cell of ``world`` in the state of ``scene`` (optionally rendered with ``render``)."""
    eng = CellEngine(world if render is None else world.replace(render=render))
    eng.load(scene.object_name)
    eng.set_belt_speed(0.0)
    for side in SIDES:
        eng.set_robot(side, scene.q[side])
    eng.place_object_on_belt(*scene.placement)
    return eng


def _board_mount(v: BoardViews, world: WorldParams, calibration: CameraCalibration) -> TargetMount:
    if v.T_flange_board is not None:
        T = v.T_flange_board
        return TargetMount(v.board, f"{v.side}_flange", tuple(T[:3, 3]), tuple(mat_to_quat(T[:3, :3])))
    fixture = calibration.camera(v.camera).fixture
    if fixture is None:
        raise R2S2RError(f"blur: camera {v.camera!r} has no fitted fixture pose; expected a wrist calibration")
    base = getattr(world, f"{v.side}_arm").base
    T = make_T(base.pos, base.quat) @ make_T(fixture.pos, fixture.quat)
    return TargetMount(v.board, "world", tuple(T[:3, 3]), tuple(mat_to_quat(T[:3, :3])))


def _edge_sigmas(
    v: BoardViews, world: WorldParams, calibration: CameraCalibration, config: PhotometricConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Edge widths (px) of the lab's kept board images and of the same views in ``world`` (rendered
    without blur), per view (NaN where the simulated view shows no board)."""
    if v.images is None or len(v.images) < 2:
        raise R2S2RError(
            f"blur: {0 if v.images is None else len(v.images)} board images kept for camera {v.camera!r}; "
            "at least 2 are needed (one to fit, one to check): capture with ViewConfig.keep_images >= 2"
        )
    sharp = world.replace(cameras=tuple(dataclasses.replace(c, effects=ImageEffects()) for c in world.cameras))
    eng = CellEngine(sharp, target=_board_mount(v, world, calibration))
    eng.load(world.objects[0].name)
    eng.park_object()
    other = next(s for s in SIDES if s != v.side)
    eng.set_robot(other, np.r_[rest_pose(other), hand_open_pose()])
    lab_s, sim_s = [], []
    try:
        for k, image in enumerate(v.images):
            lab_s.append(edge_spread_sigma(image, v.corners[k], v.board, config))
            eng.set_robot(v.side, np.r_[v.q[k], hand_open_pose()])
            render = eng.render(v.camera, None, None)
            corners = detect_corners(render, v.board, v.corners[k])
            sim_s.append(np.nan if corners is None else edge_spread_sigma(render, corners, v.board, config))
    finally:
        eng.close()
    lab_s, sim_s = np.asarray(lab_s), np.asarray(sim_s)
    if np.isnan(sim_s[::2]).all() or np.isnan(sim_s[1::2]).all():
        raise R2S2RError(f"blur: the simulated {v.camera} views show no board; is the geometric calibration right?")
    return lab_s, sim_s


def calibrate_photometry(
    views: CameraViews,
    calibration: CameraCalibration,
    scene: SceneCapture,
    world: WorldParams,
    config: PhotometricConfig = PhotometricConfig(),
) -> PhotometricCalibration:
    """Blur, noise, gains, vignetting and lighting from recorded captures; ``world`` is the grounded
    geometry (calibrated cameras, registered conveyor and bins, factory kinematics)."""
    names = [c.name for c in world.cameras]
    blur, noise, sig = {}, {}, {}
    for n in names:
        lab_s, sim_s = _edge_sigmas(views[n], world, calibration, config)
        ok = np.isfinite(sim_s)
        fit, check = (np.median(lab_s[i][ok[i]]) for i in (slice(0, None, 2), slice(1, None, 2)))
        fit_sim, check_sim = (np.nanmedian(sim_s[i]) for i in (slice(0, None, 2), slice(1, None, 2)))
        sig[n] = tuple(float(x) for x in (fit, fit_sim, check, check_sim))
        blur[n] = math.sqrt(max(fit**2 - fit_sim**2, 0.0))
        noise[n] = temporal_noise_std(*scene.images[n])
    blurred = world.replace(
        cameras=tuple(dataclasses.replace(c, effects=ImageEffects(blur_sigma=blur[c.name])) for c in world.cameras)
    )
    eng = scene_engine(blurred, scene, config.fit_render)
    lenses = {n: world.camera(n).lens for n in names}
    stride = config.fit_stride
    labs, masks, r2s = {}, {}, {}
    first = {n: eng.render(n, None, None) for n in names}
    for n in names:
        lab_img = scene.images[n].astype(np.float32).mean(axis=0)
        ok = np.all((first[n] > 15) & (first[n] < 240) & (lab_img > 8) & (lab_img < 247), axis=2)
        grid = np.zeros_like(ok)
        grid[::stride, ::stride] = True
        masks[n] = ok & grid
        labs[n], r2s[n] = lab_img[masks[n]], _r2(lenses[n])[masks[n]]
    nominal = LightingParams()
    total = nominal.key_diffuse + nominal.ambient

    def lighting_of(x: np.ndarray) -> LightingParams:
        return LightingParams(key_dir=(float(x[0]), float(x[1]), -1.0), key_diffuse=float(x[2]), ambient=float(x[3]))

    def fit(x: np.ndarray) -> tuple[np.ndarray, dict]:
        eng.set_base_lighting(lighting_of(np.r_[x[:2], np.clip(x[2:], 0.01, 2.0)]))
        res, out = [], {}
        for n in names:
            sim = eng.render(n, None, None).astype(np.float32)[masks[n]]
            gains, v = _gains_vignetting(labs[n], sim, r2s[n])
            res.append((labs[n] - gains * (1 - v * r2s[n])[:, None] * sim).ravel())
            out[n] = (gains, v)
        return np.concatenate(res), out

    d0 = nominal.key_dir
    x0 = np.array([d0[0] / -d0[2], d0[1] / -d0[2], nominal.key_diffuse, nominal.ambient])
    try:
        sol = least_squares(
            lambda x: fit(x)[0], x0, diff_step=0.02, loss="soft_l1", f_scale=10.0, max_nfev=config.max_evaluations
        )
        res, per_camera = fit(sol.x)
    finally:
        eng.close()
    rms = float(np.sqrt(np.mean(res**2)))
    if not rms < config.max_fit_rms:
        raise R2S2RError(
            f"photometry: the scene renders miss the lab's captures by {rms:.1f} levels RMS after fitting; "
            f"expected under {config.max_fit_rms} (something moved, or the geometric calibration is off)"
        )
    scale = (sol.x[2] + sol.x[3]) / total  # gauge: key diffuse + ambient as on the spec sheet
    lighting = lighting_of(np.r_[sol.x[:2], sol.x[2:] / scale])
    cams = []
    for n in names:
        gains, v = per_camera[n]
        gains = gains * scale
        effects = ImageEffects(
            blur_sigma=blur[n],
            noise_std=noise[n],
            wb_gains=tuple(float(g / gains[1]) for g in gains),
            gain=float(gains[1]),
            vignetting=float(np.clip(v, 0.0, 0.95)),
        )
        cams.append(CameraPhotometry(n, effects, *sig[n]))
    return PhotometricCalibration(tuple(cams), lighting, rms, int(sol.nfev))


def image_mismatch(world: WorldParams, scene: SceneCapture) -> dict[str, dict[str, float]]:
    """How far ``world``'s renders (its own cameras, effects, lighting and renderer; noise-free) are
    from the lab's captures of the same still ``scene`` (the mean of its two captures), per camera:
    mean absolute error (levels) and the worst channel-mean error (%)."""
    eng = scene_engine(world, scene)
    out = {}
    try:
        for n, pair in scene.images.items():
            lab = pair.astype(np.float32).mean(axis=0)
            sim = eng.render(n, None, None).astype(np.float32)
            mean_err = np.abs(sim.reshape(-1, 3).mean(0) / np.maximum(lab.reshape(-1, 3).mean(0), 1e-6) - 1)
            out[n] = {
                "mae_levels": float(np.mean(np.abs(sim - lab))),
                "channel_mean_error_pct": float(100 * mean_err.max()),
            }
    finally:
        eng.close()
    return out
