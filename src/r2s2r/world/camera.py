"""Camera models: an ideal MuJoCo pinhole render -> what a real camera would see.

Frames and conventions used throughout this module:

* Camera frame: OpenCV's, x right, y down, z forward (optical axis).  MuJoCo's camera frame
  (looking along -z, +y up) is this frame rotated 180 deg about x.
* Pixels (u, v): u is the column, v the row, origin at the *centre* of the top-left pixel
  (OpenCV convention), units px.  An image of width W spans u in [-0.5, W - 0.5].
* Lens models are OpenCV's: ``cv2.projectPoints`` (pinhole, dist = k1, k2, p1, p2, k3) and
  ``cv2.fisheye`` (equidistant, dist = k1, k2, k3, k4).  Both are restricted here to rays in
  front of the camera (z > 0, i.e. theta < 90 deg); anything else projects/unprojects to NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from r2s2r.errors import ConfigError

__all__ = ["CameraPipeline", "ImageEffects", "LensModel"]

_KINDS = {"pinhole": 5, "fisheye": 4}
# Pinhole undistortion is a fixed-point iteration; EPS is a reprojection error in px.
_PINHOLE_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 200, 1e-9)
# Fisheye undistortion is Newton on theta; EPS is in radians.
_FISHEYE_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-14)
_UNPROJECT_TOL_PX = 1e-2  # pixels whose undistortion does not reproject this well -> NaN
_OUTSIDE = -16.0  # remap coordinate far enough outside the render to read pure black


def _finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ConfigError(f"{name} must be a real number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ConfigError(f"{name} must be finite, got {value!r}")
    return float(value)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _as_points(name: str, arr: np.ndarray, dim: int) -> np.ndarray:
    a = np.asarray(arr, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != dim:
        raise ConfigError(f"{name} must have shape (N, {dim}), got {a.shape}")
    return np.ascontiguousarray(a)


@dataclass(frozen=True)
class LensModel:
    """Intrinsics + OpenCV distortion of one camera; pixels as in the module docstring."""

    kind: str
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    dist: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ConfigError(f"lens kind must be one of {sorted(_KINDS)}, got {self.kind!r}")
        set_ = object.__setattr__
        set_(self, "width", _positive_int("lens width", self.width))
        set_(self, "height", _positive_int("lens height", self.height))
        for name in ("fx", "fy", "cx", "cy"):
            set_(self, name, _finite(f"lens {name}", getattr(self, name)))
        if self.fx <= 0 or self.fy <= 0:
            raise ConfigError(f"lens fx, fy must be > 0, got fx={self.fx}, fy={self.fy}")
        try:
            dist = tuple(self.dist)
        except TypeError:
            raise ConfigError(f"lens dist must be a sequence, got {self.dist!r}") from None
        n = _KINDS[self.kind]
        if len(dist) != n:
            what = "(k1, k2, p1, p2, k3)" if self.kind == "pinhole" else "(k1, k2, k3, k4)"
            raise ConfigError(f"{self.kind} lens dist must have {n} coefficients {what}, got {len(dist)}")
        set_(self, "dist", tuple(_finite(f"lens dist[{i}]", d) for i, d in enumerate(dist)))

    @property
    def K(self) -> np.ndarray:
        """The 3x3 camera matrix (float64)."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def scaled(self, width: int, height: int) -> LensModel:
        """The same sensor read out at ``width`` x ``height``.

        The sensor is first cropped centrally to the requested aspect ratio, then scaled
        uniformly; pixel centres map as ``u' = s * (u + 0.5 - crop_u0) - 0.5``.  ``dist`` is
        unchanged (it acts on normalised coordinates).
        """
        width = _positive_int("scaled width", width)
        height = _positive_int("scaled height", height)
        if width * self.height >= height * self.width:  # target wider: crop rows
            crop_w, crop_h = float(self.width), self.width * height / width
        else:  # target taller: crop columns
            crop_w, crop_h = self.height * width / height, float(self.height)
        s = width / crop_w
        u0, v0 = (self.width - crop_w) / 2.0, (self.height - crop_h) / 2.0
        return LensModel(
            kind=self.kind,
            width=width,
            height=height,
            fx=self.fx * s,
            fy=self.fy * s,
            cx=s * (self.cx + 0.5 - u0) - 0.5,
            cy=s * (self.cy + 0.5 - v0) - 0.5,
            dist=self.dist,
        )

    def project(self, points_cam: np.ndarray) -> np.ndarray:
        """(N, 3) points in the OpenCV camera frame -> (N, 2) distorted px; NaN where z <= 0."""
        pts = _as_points("points_cam", points_cam, 3)
        front = pts[:, 2] > 0
        if len(pts) and front.all():  # the common case: every point projects
            return self._project_front(pts)
        out = np.full((len(pts), 2), np.nan)
        if front.any():
            out[front] = self._project_front(pts[front])
        return out

    def _project_front(self, pts: np.ndarray) -> np.ndarray:
        """(N, 2) float64 px of (N, 3) points in front of the camera."""
        obj = pts.reshape(-1, 1, 3)
        zero = np.zeros(3)
        d = np.asarray(self.dist, dtype=np.float64)
        if self.kind == "pinhole":
            img, _ = cv2.projectPoints(obj, zero, zero, self.K, d)
        else:
            img, _ = cv2.fisheye.projectPoints(obj, zero, zero, self.K, d)
        return np.asarray(img.reshape(-1, 2), dtype=np.float64)

    def unproject(self, pixels: np.ndarray) -> np.ndarray:
        """(N, 2) distorted px -> (N, 3) unit rays in the OpenCV camera frame (z > 0).

        Pixels the model cannot map to a ray in front of the camera (fisheye theta >= 90 deg,
        or beyond the range where the distortion polynomial is invertible) give NaN.
        """
        pix = _as_points("pixels", pixels, 2)
        if len(pix) == 0:
            return np.zeros((0, 3))
        src = pix.reshape(-1, 1, 2)
        d = np.asarray(self.dist, dtype=np.float64)
        if self.kind == "pinhole":
            xy = cv2.undistortPoints(src, self.K, d, criteria=_PINHOLE_CRITERIA).reshape(-1, 2)
        else:
            xy = cv2.fisheye.undistortPoints(src, self.K, d, criteria=_FISHEYE_CRITERIA)
            xy = xy.reshape(-1, 2)
            # theta > 90 deg gives tan(theta) < 0, i.e. a mirrored point: reject it.
            xd = (pix - [self.cx, self.cy]) / [self.fx, self.fy]
            xy[(xy * xd).sum(axis=1) < 0] = np.nan
        err = np.linalg.norm(self._distort(xy) * [self.fx, self.fy] + [self.cx, self.cy] - pix, axis=1)
        rays = np.concatenate([xy, np.ones((len(xy), 1))], axis=1)
        rays[~(err <= _UNPROJECT_TOL_PX)] = np.nan
        return rays / np.linalg.norm(rays, axis=1, keepdims=True)

    def _distort(self, xy: np.ndarray) -> np.ndarray:
        """Normalised (x/z, y/z) -> distorted normalised coords; numpy twin of OpenCV's model
        (only used to verify undistortion: ``cv2.projectPoints`` is slow on whole images)."""
        x, y = xy[:, 0], xy[:, 1]
        r2 = x * x + y * y
        if self.kind == "pinhole":
            k1, k2, p1, p2, k3 = self.dist
            radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
            xd = x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x)
            yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y
            return np.stack([xd, yd], axis=1)
        r = np.sqrt(r2)
        theta = np.arctan(r)
        t2 = theta * theta
        k1, k2, k3, k4 = self.dist
        theta_d = theta * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4))))
        scale = np.divide(theta_d, r, out=np.ones_like(r), where=r > 1e-12)
        return xy * scale[:, None]


@dataclass(frozen=True)
class ImageEffects:
    """Sensor/optics degradations applied after lens distortion (values in output px)."""

    blur_sigma: float = 0.0
    noise_std: float = 0.0
    wb_gains: tuple[float, float, float] = (1.0, 1.0, 1.0)
    gain: float = 1.0
    vignetting: float = 0.0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("blur_sigma", "noise_std"):
            v = _finite(name, getattr(self, name))
            if v < 0:
                raise ConfigError(f"{name} must be >= 0, got {v}")
            set_(self, name, v)
        try:
            wb = tuple(self.wb_gains)
        except TypeError:
            msg = f"wb_gains must be 3 numbers (R, G, B), got {self.wb_gains!r}"
            raise ConfigError(msg) from None
        if len(wb) != 3:
            raise ConfigError(f"wb_gains must be 3 numbers (R, G, B), got {len(wb)}")
        wb = tuple(_finite(f"wb_gains[{i}]", g) for i, g in enumerate(wb))
        gain = _finite("gain", self.gain)
        if min(wb) <= 0 or gain <= 0:
            raise ConfigError(f"wb_gains and gain must be > 0, got {wb} and {gain}")
        vig = _finite("vignetting", self.vignetting)
        if not 0.0 <= vig < 1.0:
            raise ConfigError(f"vignetting must be in [0, 1), got {vig}")
        set_(self, "wb_gains", wb)
        set_(self, "gain", gain)
        set_(self, "vignetting", vig)


class CameraPipeline:
    """Ideal MuJoCo pinhole render -> distorted, degraded sensor image.

    Request the ideal render from MuJoCo at ``render_width`` x ``render_height`` with the
    camera's ``fovy = render_fovy_deg`` (square pixels, principal point at the image centre).
    Its focal length ``f = (render_height / 2) / tan(fovy / 2)`` is at least the output's at
    the principal point (the longer render side is capped at 3x the output's); the field of
    view just covers every output pixel's ray, with both half-angles capped at
    ``max_fovy_deg / 2``.  Output pixels whose ray falls outside the render are black.
    """

    def __init__(self, lens: LensModel, effects: ImageEffects, max_fovy_deg: float = 140.0):
        if not isinstance(lens, LensModel):
            raise ConfigError(f"lens must be a LensModel, got {type(lens).__name__}")
        if not isinstance(effects, ImageEffects):
            raise ConfigError(f"effects must be an ImageEffects, got {type(effects).__name__}")
        max_fovy = _finite("max_fovy_deg", max_fovy_deg)
        if not 0.0 < max_fovy < 180.0:
            raise ConfigError(f"max_fovy_deg must be in (0, 180), got {max_fovy}")
        self.lens, self.effects, self.max_fovy_deg = lens, effects, max_fovy
        w, h = lens.width, lens.height

        us, vs = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        rays = lens.unproject(np.stack([us.ravel(), vs.ravel()], axis=1))
        ok = np.isfinite(rays).all(axis=1) & (rays[:, 2] > 1e-12)
        if not ok.any():
            raise ConfigError("lens maps no output pixel to a ray in front of the camera")
        t_cap = math.tan(math.radians(max_fovy) / 2.0)
        tx = min(float(np.max(np.abs(rays[ok, 0] / rays[ok, 2]))), t_cap)
        ty = min(float(np.max(np.abs(rays[ok, 1] / rays[ok, 2]))), t_cap)
        longest = 3 * max(w, h)
        f = min(max(lens.fx, lens.fy), (longest - 2) / (2.0 * max(tx, ty, 1e-9)))

        def side(t: float) -> int:  # pixel centres must reach t; the edges must stay <= t_cap
            return max(2, min(math.ceil(2.0 * f * t) + 1, math.floor(2.0 * f * t_cap)))

        self.render_width, self.render_height = side(tx), side(ty)
        self.render_fovy_deg = math.degrees(2.0 * math.atan(self.render_height / (2.0 * f)))
        self._f = f

        m = self.render_pixel(np.where(ok[:, None], rays, np.nan))
        inside = (
            np.isfinite(m).all(axis=1)
            & (m[:, 0] >= 0)
            & (m[:, 0] <= self.render_width - 1)
            & (m[:, 1] >= 0)
            & (m[:, 1] <= self.render_height - 1)
        )
        m[~inside] = _OUTSIDE
        mx = m[:, 0].reshape(h, w).astype(np.float32)
        my = m[:, 1].reshape(h, w).astype(np.float32)
        self._map1, self._map2 = cv2.convertMaps(mx, my, cv2.CV_16SC2)
        self.valid_mask: np.ndarray = inside.reshape(h, w)

        r2 = ((us - lens.cx) ** 2 + (vs - lens.cy) ** 2) / (0.25 * (w * w + h * h))
        vig = np.clip(1.0 - effects.vignetting * r2, 0.0, None)
        scale = np.asarray(effects.wb_gains) * effects.gain
        self._mask = np.ascontiguousarray(vig[..., None] * scale, dtype=np.float32)
        self._mask_is_one = effects.vignetting == 0.0 and bool(np.all(scale == 1.0))

    def render_pixel(self, ray_cam: np.ndarray) -> np.ndarray:
        """(N, 3) rays in the OpenCV camera frame -> (N, 2) px in the ideal render.

        ``u = (W - 1) / 2 + f x / z``, ``v = (H - 1) / 2 + f y / z`` (MuJoCo's projection,
        verified by rendering); NaN where z <= 0.
        """
        r = _as_points("ray_cam", ray_cam, 3)
        out = np.full((len(r), 2), np.nan)
        front = r[:, 2] > 0
        rf = r[front]
        out[front, 0] = (self.render_width - 1) / 2.0 + self._f * rf[:, 0] / rf[:, 2]
        out[front, 1] = (self.render_height - 1) / 2.0 + self._f * rf[:, 1] / rf[:, 2]
        return out

    def skip(self, rng: np.random.Generator | None = None) -> None:
        """Advance ``rng`` exactly as ``apply`` would, without an image: a frame nobody reads is
        not rendered, and the frames after it stay those of a run that rendered every one."""
        if self.effects.noise_std > 0 and rng is not None:
            rng.integers(2**31)

    def apply(self, render_rgb: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """(render_h, render_w, 3) uint8 ideal render -> (height, width, 3) uint8 sensor image.

        remap (bilinear, fixed-point maps) -> Gaussian blur -> wb_gains * gain * vignette ->
        additive Gaussian noise (skipped when ``rng`` is None; ``cv2.randn`` seeded from one
        ``rng`` draw, so it reseeds OpenCV's thread-local RNG) -> round, clip.
        """
        shape = (self.render_height, self.render_width, 3)
        if not isinstance(render_rgb, np.ndarray):
            raise ConfigError(f"render_rgb must be a numpy array, got {type(render_rgb).__name__}")
        if render_rgb.shape != shape or render_rgb.dtype != np.uint8:
            raise ConfigError(
                f"render_rgb must be uint8 of shape {shape}, got {render_rgb.dtype} of shape {render_rgb.shape}"
            )
        img = cv2.remap(
            np.ascontiguousarray(render_rgb),
            self._map1,
            self._map2,
            cv2.INTER_LINEAR,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=0,
        )
        fx = self.effects
        noisy = fx.noise_std > 0 and rng is not None
        if fx.blur_sigma == 0 and self._mask_is_one and not noisy:
            return img
        x = img.astype(np.float32)
        if fx.blur_sigma > 0:
            x = cv2.GaussianBlur(x, (0, 0), fx.blur_sigma, borderType=cv2.BORDER_REFLECT)
        if not self._mask_is_one:
            np.multiply(x, self._mask, out=x)
        if noisy:  # cv2.randn, seeded from one draw of rng: ~4x faster than numpy's normals
            noise = np.empty((x.shape[0], x.shape[1] * 3), np.float32)
            cv2.setRNGSeed(int(rng.integers(2**31)))
            x += cv2.randn(noise, 0.0, fx.noise_std).reshape(x.shape)
        x += 0.5
        np.clip(x, 0.0, 255.0, out=x)
        return x.astype(np.uint8)
