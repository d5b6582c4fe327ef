"""The object's pose, size class and colour from one full-resolution head stereo pair.

This stands in for SAM 2 + FoundationPose: the same job, from images only.

1. **Segmentation, colour**: the red and the blue pixels inside the image of the belt (and the
   space up to ``max_height`` above it), in both views; connected components.
2. **Segmentation, depth (stereo)**: each left-view component is paired with the right-view
   component of the same colour nearest to its epipolar line, and the two centroids' viewing rays
   are triangulated; a component whose point does not lie on the belt (between ``-0.01`` m and
   ``max_height`` above it) is something else (a bin wall, a reflection) and is dropped. The
   largest remaining one is the object, its colour the object's colour.
3. **Shape fit**: each catalog object of that colour is fitted by render-and-compare: its CAD
   shape, resting on the belt (stable contact fixes its height and tilt), is projected through both
   calibrated lenses and its silhouettes are compared with the masks. The pose (x, y along and
   across the belt, yaw about the belt normal) starts from the triangulated point, is solved
   first so the silhouettes' centroids match, then refined on the silhouettes' overlap (IoU, with
   4x supersampled coverage so it varies smoothly). The best-fitting catalog object is the size class.
4. ``settle_on_belt`` puts the fitted object on the simulated belt and lets physics settle it.

Frames: camera poses (``WorldParams.cameras``) and the conveyor pose are in the world frame of the
``WorldParams`` given (for a grounded world: the robot frame, through the drawing's right-arm
base). The belt frame has its origin at the centre of the belt top, +x the direction of travel.
Yaw is about the belt normal relative to the belt frame, as in ``Condition.yaw``; m, rad.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np
from scipy.optimize import minimize

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.geometry import axis_angle_quat, inv_T, make_T, quat_mul, quat_to_mat
from r2s2r.segmentation import COLORS, belt_mask, color_mask
from r2s2r.world.objects import CATALOG, KNOWN_OBJECTS, CatalogObject
from r2s2r.world.params import CameraParams, ConveyorParams, WorldParams

STEREO = ("head_left", "head_right")
SUPERSAMPLE = 4


@dataclass(frozen=True)
class PoseEstimateConfig:
    candidates: tuple[str, ...] = KNOWN_OBJECTS  # catalog objects the fit may choose from
    min_blob_px: int = 30
    max_height: float = 0.12  # m above the belt: where an object on it can be
    max_epipolar_px: float = 30.0  # pairing of left/right components (lenient: stereo poses may be tape-measured)
    max_plane_gap: float = 0.10  # m between the two views' belt-plane points of one object
    yaw_steps: int = 24  # coarse yaw grid over a box's quarter turn
    margin_px: int = 12  # ROI margin around the blobs

    def __post_init__(self) -> None:
        for name in self.candidates:
            if name not in CATALOG:
                raise ConfigError(f"pose estimation candidate {name!r}: not a catalog object")
        if not self.candidates:
            raise ConfigError("pose estimation: expected at least one candidate object")


@dataclass(frozen=True, eq=False)
class ObjectEstimate:
    """What the images say. ``T_world_object``: the object's centre resting on the belt, yawed
    (frame as ``CellEngine.object_pose``); ``x``, ``y``, ``yaw``: its belt-frame placement;
    ``stereo_point``: the triangulated blob point (world, m); ``iou``: mean silhouette IoU of the
    best fit over both views; ``scores``: IoU of every candidate of that colour."""

    object_name: str
    color: str
    x: float
    y: float
    yaw: float
    T_world_object: np.ndarray
    stereo_point: np.ndarray
    iou: float
    scores: dict[str, float] = field(default_factory=dict)


def _surface_points(obj: CatalogObject) -> np.ndarray:
    """(N, 3) points on the object's outline hull in its body frame (centre origin), m."""
    s = obj.size
    if obj.shape == "box":
        t = np.linspace(-1, 1, 5)
        edges = [np.stack(np.meshgrid(t, [-1, 1], [-1, 1], indexing="ij"), -1).reshape(-1, 3)]
        edges.append(edges[0][:, [1, 0, 2]])
        edges.append(edges[0][:, [1, 2, 0]])
        return np.concatenate(edges) * np.asarray(s)
    a = np.linspace(0, 2 * math.pi, 48, endpoint=False)
    if obj.shape == "cylinder":
        ring = np.stack([s[0] * np.cos(a), s[0] * np.sin(a)], -1)
        return np.concatenate([np.c_[ring, np.full(48, z)] for z in (-s[1], s[1])])
    # sphere, ellipsoid, capsule: a dense point set on the (convex) surface
    n = 400
    k = np.arange(n) + 0.5
    phi, th = np.arccos(1 - 2 * k / n), math.pi * (1 + 5**0.5) * k
    u = np.stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)], -1)
    if obj.shape == "sphere":
        return u * s[0]
    if obj.shape == "ellipsoid":
        return u * np.asarray(s)
    # capsule lying along x: radius s[0], half-length s[1]
    p = u * s[0]
    return np.concatenate([p + [s[1], 0, 0], p - [s[1], 0, 0]])


def _T_world_object(world: WorldParams, obj: CatalogObject, x: float, y: float, yaw: float) -> np.ndarray:
    c = world.conveyor
    pos = make_T(c.pose.pos, c.pose.quat) @ np.array([x, y, obj.rest_height, 1.0])
    return make_T(pos[:3], quat_mul(c.pose.quat, axis_angle_quat((0, 0, 1), yaw)))


class _Placement:
    """The surface points of one object placed as ``_T_world_object`` places it (world frame), with
    the belt's pose and the rotation of each yaw tried kept: a fit places the object tens of
    thousands of times, at few yaws."""

    def __init__(self, world: WorldParams, obj: CatalogObject) -> None:
        c = world.conveyor
        self._quat = c.pose.quat
        self._T_world_belt = make_T(c.pose.pos, c.pose.quat)
        self._height = obj.rest_height
        self._pts = _surface_points(obj)
        self._rot: dict[float, np.ndarray] = {}

    def points(self, x: float, y: float, yaw: float) -> np.ndarray:
        R = self._rot.get(yaw)
        if R is None:
            R = self._rot[yaw] = quat_to_mat(quat_mul(self._quat, axis_angle_quat((0, 0, 1), yaw)))
        return self._pts @ R.T + (self._T_world_belt @ np.array([x, y, self._height, 1.0]))[:3]


class _View:
    """One camera's observed mask in a region of interest, and model silhouettes rendered into it."""

    def __init__(self, cam: CameraParams, mask: np.ndarray, roi: tuple[int, int, int, int]) -> None:
        self.cam = cam
        self.T_cam_world = inv_T(make_T(cam.pose.pos, cam.pose.quat))
        u0, v0, u1, v1 = roi
        self.roi = roi
        self.mask = mask[v0:v1, u0:u1].astype(np.float32)
        self.area = float(self.mask.sum())
        ys, xs = np.nonzero(self.mask)
        self.centroid = np.array([xs.mean() + u0, ys.mean() + v0])

    def project(self, points_world: np.ndarray) -> np.ndarray:
        homogeneous = np.concatenate((points_world, np.ones((len(points_world), 1))), axis=1)
        p = (self.T_cam_world @ homogeneous.T)[:3].T
        return self.cam.lens.project(p)

    def _hull(self, points_world: np.ndarray) -> np.ndarray | None:
        """The projected points' convex hull (px, float32), None when a point does not project."""
        px = self.project(points_world)
        if not np.all(np.isfinite(px)):
            return None
        return cv2.convexHull(px.astype(np.float32)).reshape(-1, 2)

    @staticmethod
    def _centroid(hull: np.ndarray) -> np.ndarray:
        m = cv2.moments(hull)
        return np.array([m["m10"], m["m01"]]) / max(m["m00"], 1e-9)

    def model_centroid(self, points_world: np.ndarray) -> np.ndarray:
        """The centroid (u, v) px of the projected convex hull (``silhouette``'s, without its coverage)."""
        hull = self._hull(points_world)
        return np.array([np.nan, np.nan]) if hull is None else self._centroid(hull)

    def silhouette(self, points_world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(coverage in [0, 1] over the ROI, centroid (u, v) px) of the projected convex hull."""
        hull = self._hull(points_world)
        if hull is None:
            return np.zeros_like(self.mask), np.array([np.nan, np.nan])
        centroid = self._centroid(hull)
        u0, v0, u1, v1 = self.roi
        big = np.zeros(((v1 - v0) * SUPERSAMPLE, (u1 - u0) * SUPERSAMPLE), np.uint8)
        pts = np.round((hull - [u0 - 0.5, v0 - 0.5]) * SUPERSAMPLE * 16).astype(np.int32)
        cv2.fillConvexPoly(big, pts, 1, lineType=cv2.LINE_8, shift=4)
        cover = cv2.resize(big.astype(np.float32), (u1 - u0, v1 - v0), interpolation=cv2.INTER_AREA)
        return cover, centroid

    def iou(self, cover: np.ndarray) -> float:
        inter = float(np.minimum(cover, self.mask).sum())
        return inter / max(float(np.maximum(cover, self.mask).sum()), 1e-9)


def _components(image: np.ndarray, color: str, region: np.ndarray, min_px: int) -> list[tuple[np.ndarray, np.ndarray]]:
    n, labels, stats, cent = cv2.connectedComponentsWithStats(color_mask(image, color, region))
    order = sorted(range(1, n), key=lambda k: -stats[k, cv2.CC_STAT_AREA])
    return [((labels == k).astype(np.uint8), cent[k]) for k in order[:4] if stats[k, cv2.CC_STAT_AREA] >= min_px]


def triangulate(
    cams: tuple[CameraParams, CameraParams], pixels: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, float]:
    """Midpoint of the two viewing rays through ``pixels`` (world frame, m) and the rays' closest
    distance (m): stereo depth of one matched point."""
    origins, dirs = [], []
    for cam, px in zip(cams, pixels, strict=True):
        T = make_T(cam.pose.pos, cam.pose.quat)
        ray = cam.lens.unproject(np.asarray(px, float).reshape(1, 2))[0]
        origins.append(T[:3, 3])
        dirs.append(T[:3, :3] @ ray)
    (o1, o2), (d1, d2) = origins, dirs
    w = o1 - o2
    a, b, c, d, e = d1 @ d1, d1 @ d2, d2 @ d2, d1 @ w, d2 @ w
    den = a * c - b * b
    s, t = (b * e - c * d) / den, (a * e - b * d) / den
    p1, p2 = o1 + s * d1, o2 + t * d2
    return (p1 + p2) / 2, float(np.linalg.norm(p1 - p2))


def _epipolar_px(cams: tuple[CameraParams, CameraParams], left_px: np.ndarray, right_px: np.ndarray) -> float:
    """Distance (px) of ``right_px`` from the right-view epipolar curve of ``left_px`` (depths 0.5-3 m)."""
    T_l = make_T(cams[0].pose.pos, cams[0].pose.quat)
    ray = T_l[:3, :3] @ cams[0].lens.unproject(np.asarray(left_px, float).reshape(1, 2))[0]
    pts = T_l[:3, 3] + np.linspace(0.5, 3.0, 60)[:, None] * ray
    px = (inv_T(make_T(cams[1].pose.pos, cams[1].pose.quat)) @ np.c_[pts, np.ones(60)].T)[:3].T
    proj = cams[1].lens.project(px)
    return float(np.nanmin(np.linalg.norm(proj - right_px, axis=1)))


def _belt_plane_point(cam: CameraParams, px: np.ndarray, conveyor: ConveyorParams, height: float) -> np.ndarray | None:
    """World point where the ray through ``px`` meets the plane ``height`` m above the belt top, or
    None when that point is off the belt."""
    T_world_conveyor = make_T(conveyor.pose.pos, conveyor.pose.quat)
    T_conv_cam = inv_T(T_world_conveyor) @ make_T(cam.pose.pos, cam.pose.quat)
    d = T_conv_cam[:3, :3] @ cam.lens.unproject(np.asarray(px, float).reshape(1, 2))[0]
    o = T_conv_cam[:3, 3]
    if not np.isfinite(d).all() or abs(d[2]) < 1e-9:
        return None
    p = o + (height - o[2]) / d[2] * d
    if abs(p[0]) > conveyor.length / 2 or abs(p[1]) > conveyor.width / 2:
        return None
    return (T_world_conveyor @ np.r_[p, 1.0])[:3]


def _find_object(
    images: dict[str, np.ndarray], world: WorldParams, config: PoseEstimateConfig
) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    """(colour, per-view blob masks, triangulated point) of the object on the belt."""
    cams = tuple(world.camera(n) for n in STEREO)
    c = world.conveyor
    T_wc = make_T(c.pose.pos, c.pose.quat)
    regions = {cam.name: belt_mask(cam, T_wc, c.length, c.width, config.max_height) for cam in cams}
    best = None
    for color in COLORS:
        comps = {cam.name: _components(images[cam.name], color, regions[cam.name], config.min_blob_px) for cam in cams}
        for mask_l, cen_l in comps[STEREO[0]]:
            pairs = [(_epipolar_px(cams, cen_l, cen_r), mask_r, cen_r) for mask_r, cen_r in comps[STEREO[1]]]
            pairs = [p for p in pairs if p[0] <= config.max_epipolar_px]
            if not pairs:
                continue
            _, mask_r, cen_r = min(pairs, key=lambda p: p[0])
            point, _gap = triangulate(cams, (cen_l, cen_r))
            height = (inv_T(T_wc) @ np.r_[point, 1.0])[2]
            if not -0.01 <= height <= config.max_height:
                # Stereo depth is implausible (a thing off the belt, or a poorly known stereo pose):
                # keep the blob only if both views' rays meet the belt plane at one place on the belt.
                on_belt = [_belt_plane_point(cam, px, c, 0.03) for cam, px in zip(cams, (cen_l, cen_r), strict=True)]
                if any(p is None for p in on_belt) or np.linalg.norm(on_belt[0] - on_belt[1]) > config.max_plane_gap:
                    continue
                point = (on_belt[0] + on_belt[1]) / 2
            size = int(mask_l.sum() + mask_r.sum())
            if best is None or size > best[0]:
                best = (size, color, {STEREO[0]: mask_l, STEREO[1]: mask_r}, point)
    if best is None:
        raise R2S2RError(
            "pose estimation: no red or blue object on the belt in both head images "
            f"(blobs of >= {config.min_blob_px} px whose stereo point lies on the belt)"
        )
    return best[1], best[2], best[3]


def _roi(masks: dict[str, np.ndarray], margin: int) -> dict[str, tuple[int, int, int, int]]:
    out = {}
    for name, m in masks.items():
        ys, xs = np.nonzero(m)
        h, w = m.shape
        out[name] = (
            max(0, xs.min() - margin),
            max(0, ys.min() - margin),
            min(w, xs.max() + margin + 1),
            min(h, ys.max() + margin + 1),
        )
    return out


def _fit(
    views: list[_View], world: WorldParams, obj: CatalogObject, xy0: np.ndarray, config: PoseEstimateConfig
) -> tuple[float, np.ndarray]:
    """Best (IoU, (x, y, yaw)) of one catalog object."""
    world_points = _Placement(world, obj).points

    def centroid_fit(xy: np.ndarray, yaw: float) -> np.ndarray:
        for _ in range(4):  # Gauss-Newton on the silhouette centroids (4 equations, 2 unknowns)

            def resid(q):
                return np.concatenate([v.model_centroid(world_points(q[0], q[1], yaw)) - v.centroid for v in views])

            r0 = resid(xy)
            J = np.column_stack([(resid(xy + dq) - r0) / 1e-4 for dq in np.eye(2) * 1e-4])
            step = np.linalg.lstsq(J, -r0, rcond=None)[0]
            xy = xy + np.clip(step, -0.03, 0.03)
            if np.linalg.norm(step) < 1e-5:
                break
        return xy

    def cost(p: np.ndarray) -> float:
        return 1.0 - float(np.mean([v.iou(v.silhouette(world_points(*p))[0]) for v in views]))

    if obj.shape == "box":
        period = math.pi / 2 if abs(obj.size[0] - obj.size[1]) < 1e-9 else math.pi
        yaws = np.arange(config.yaw_steps) * period / config.yaw_steps - period / 2
    else:
        yaws = np.array([0.0])  # round about the belt normal: yaw is not observable
    starts = [np.r_[centroid_fit(np.asarray(xy0, float), yw), yw] for yw in yaws]
    p = min(starts, key=cost)
    if obj.shape == "box":
        res = minimize(
            cost,
            p,
            method="Nelder-Mead",
            options=dict(
                initial_simplex=p + np.array([[0, 0, 0], [0.002, 0, 0], [0, 0.002, 0], [0, 0, math.radians(3)]]),
                xatol=2e-4,
                fatol=1e-4,
                maxiter=120,
            ),
        )
    else:
        res = minimize(
            lambda q: cost(np.r_[q, 0.0]),
            p[:2],
            method="Nelder-Mead",
            options=dict(
                initial_simplex=p[:2] + np.array([[0, 0], [0.002, 0], [0, 0.002]]), xatol=2e-4, fatol=1e-4, maxiter=80
            ),
        )
        res.x = np.r_[res.x, 0.0]
    best = res.x if res.fun < cost(p) else p
    return 1.0 - cost(best), best


def estimate_object_pose(
    images: dict[str, np.ndarray], world: WorldParams, config: PoseEstimateConfig = PoseEstimateConfig()
) -> ObjectEstimate:
    """Estimate the object on the belt from full-resolution ``images`` of the head stereo pair
    (``head_left``, ``head_right``), seen by ``world``'s head cameras on ``world``'s conveyor."""
    for name in STEREO:
        cam = world.camera(name)
        img = images.get(name)
        if img is None or img.shape != (cam.lens.height, cam.lens.width, 3) or img.dtype != np.uint8:
            got = None if img is None else (img.shape, str(img.dtype))
            raise ConfigError(
                f"pose estimation: expected a full-resolution {name} image "
                f"({cam.lens.height}, {cam.lens.width}, 3) uint8, got {got}"
            )
    color, masks, point = _find_object(images, world, config)
    rois = _roi(masks, config.margin_px)
    views = [_View(world.camera(n), masks[n], rois[n]) for n in STEREO]
    c = world.conveyor
    T_cw = inv_T(make_T(c.pose.pos, c.pose.quat))
    xy0 = (T_cw @ np.r_[point, 1.0])[:2]
    names = [n for n in config.candidates if CATALOG[n].color == color]
    if not names:
        raise R2S2RError(
            f"pose estimation: a {color} object was seen but no candidate is {color} ({config.candidates})"
        )
    fits = {n: _fit(views, world, CATALOG[n], xy0, config) for n in names}
    name = max(fits, key=lambda n: fits[n][0])
    iou, (x, y, yaw) = fits[name]
    return ObjectEstimate(
        object_name=name,
        color=color,
        x=float(x),
        y=float(y),
        yaw=float(yaw),
        T_world_object=_T_world_object(world, CATALOG[name], x, y, yaw),
        stereo_point=point,
        iou=float(iou),
        scores={n: float(f[0]) for n, f in fits.items()},
    )


def settle_on_belt(world: WorldParams, estimate: ObjectEstimate, duration: float = 0.4) -> np.ndarray:
    """T_world_object after the estimated object, put on ``world``'s simulated belt at the estimated
    placement (belt stopped), has settled for ``duration`` s under contact physics: the stable-contact
    pose a transformation of the demonstration starts from."""
    from r2s2r.world.engine import CellEngine

    engine = CellEngine(world)
    try:
        engine.load(estimate.object_name)
        engine.set_belt_speed(0.0)
        engine.place_object_on_belt(estimate.x, estimate.y, estimate.yaw)
        engine.step_physics(int(round(duration / engine.model.opt.timestep)))
        return engine.object_pose()
    finally:
        engine.close()
