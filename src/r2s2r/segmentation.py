"""Colour segmentation of the cell's catalog objects in camera images, inside the belt's image region.

Objects are saturated red or blue (``objects.COLOR_RGBA``); the belt, rails, floor and robots are
grey. A pixel belongs to a ``color`` object when that channel clearly dominates the other two.
Pixels (u, v) follow OpenCV (column, row; origin at the centre of the top-left pixel).
"""

from __future__ import annotations

import cv2
import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.geometry import inv_T, make_T
from r2s2r.world.params import CameraParams

COLORS = ("red", "blue")


def belt_mask(
    camera: CameraParams,
    T_ref_conveyor: np.ndarray,
    length: float,
    width: float,
    height: float = 0.0,
    x_range: tuple[float, float] | None = None,
) -> np.ndarray:
    """(H, W) uint8 mask (255 inside) of the belt top as ``camera`` sees it.

    ``camera.pose`` and ``T_ref_conveyor`` are both poses in one reference frame (the world, or
    the right arm's base); the conveyor frame has its origin at the centre of the belt top, +x the
    direction of travel. With ``height`` > 0 the region is the image of the box from the belt top
    up to ``height`` m above it (things standing on the belt); ``x_range`` limits it along the belt.
    """
    lens = camera.lens
    T_cam_conv = inv_T(make_T(camera.pose.pos, camera.pose.quat)) @ np.asarray(T_ref_conveyor, float)
    x0, x1 = x_range if x_range is not None else (-length / 2, length / 2)
    xs = np.linspace(x0, x1, 25)
    edge = [(x, -width / 2) for x in xs] + [(x, width / 2) for x in xs[::-1]]
    mask = np.zeros((lens.height, lens.width), np.uint8)
    for z in (0.0, height) if height > 0 else (0.0,):
        pts = (T_cam_conv @ np.array([[x, y, z, 1.0] for x, y in edge]).T)[:3].T
        px = lens.project(pts)
        px = px[np.all(np.isfinite(px), axis=1)]
        if len(px) >= 3:
            cv2.fillPoly(mask, [np.round(px).astype(np.int32)], 255)
    if height > 0:  # the box between the two rectangles: fill the hull of each pair of edge points
        ys, xs_ = np.nonzero(mask)
        if len(ys):
            hull = cv2.convexHull(np.column_stack([xs_, ys]).astype(np.int32))
            cv2.fillConvexPoly(mask, hull, 255)
    return mask


def color_score(image: np.ndarray, color: str) -> np.ndarray:
    """(H, W) float32: how much ``color``'s channel exceeds 1.8 x the larger other channel (> 10:
    the object's colour). Continuous, so a threshold between object and background levels finds
    edges to a fraction of a pixel."""
    if color not in COLORS:
        raise ConfigError(f"colour {color!r}: expected one of {COLORS}")
    rgb = image.astype(np.float32)
    main = rgb[..., 0] if color == "red" else rgb[..., 2]
    others = np.maximum(rgb[..., 1], rgb[..., 2] if color == "red" else rgb[..., 0])
    score = main - 1.8 * others
    score[main <= 40] = min(float(score.min()), 0.0)
    return score


def color_mask(image: np.ndarray, color: str, region: np.ndarray | None = None) -> np.ndarray:
    """(H, W) uint8 0/1 mask of pixels of ``color`` (inside ``region`` when given)."""
    sel = color_score(image, color) > 10
    if region is not None:
        sel &= region > 0
    return sel.astype(np.uint8)


def largest_blob(mask: np.ndarray, min_px: int) -> tuple[np.ndarray, tuple[float, float]] | None:
    """The largest connected component of ``mask`` as a 0/1 mask and its centroid (u, v) px, or
    None when it has fewer than ``min_px`` pixels."""
    n, labels, stats, cent = cv2.connectedComponentsWithStats(mask.astype(np.uint8))
    if n <= 1:
        return None
    k = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    if stats[k, cv2.CC_STAT_AREA] < min_px:
        return None
    return (labels == k).astype(np.uint8), (float(cent[k, 0]), float(cent[k, 1]))
