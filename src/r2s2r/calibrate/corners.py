"""Checkerboard corner detection: sub-pixel inner corners in the board's object-point order.

Pixels are full-resolution (u, v), OpenCV convention (origin at the centre of the top-left pixel).
"""

from __future__ import annotations

import cv2
import numpy as np

from r2s2r.world.target import Checkerboard


def detect_corners(
    image: np.ndarray,
    board: Checkerboard,
    expected: np.ndarray | None = None,
    max_fit_px: float | None = None,
    max_offset_px: float = 60.0,
) -> np.ndarray | None:
    """Sub-pixel inner corners (K, 2) in ``board.object_points()`` order, or None if not found, or
    if a smooth (cubic) map of the grid misses a corner by more than ``max_fit_px``: a corner pulled
    off the grid by a partly hidden square or clutter in its refinement window.

    ``expected`` (K, 2) predicted corners resolve which outer corner OpenCV's grid starts from, and
    reject a grid whose median corner lies over ``max_offset_px`` from them or whose size is off.
    """
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    size = (board.cols, board.rows)
    flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE  # (FAST_CHECK misses dim boards)
    found, corners = cv2.findChessboardCorners(gray, size, flags=flags)
    if not found:  # an arm's shadow across the board: equalise locally, then the sector-based detector
        found, corners = cv2.findChessboardCorners(cv2.createCLAHE(2.0, (8, 8)).apply(gray), size, flags=flags)
    if not found:
        sb = cv2.CALIB_CB_NORMALIZE_IMAGE | cv2.CALIB_CB_EXHAUSTIVE | cv2.CALIB_CB_ACCURACY
        found, corners = cv2.findChessboardCornersSB(gray, size, flags=sb)
    if not found:
        return None
    pts = corners.reshape(-1, 2)
    grid = pts.reshape(board.rows, board.cols, 2)
    spacing = min(
        np.linalg.norm(np.diff(grid, axis=0), axis=2).min(), np.linalg.norm(np.diff(grid, axis=1), axis=2).min()
    )
    win = int(np.clip(0.3 * spacing, 2, 5))
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 50, 1e-3)
    pts = cv2.cornerSubPix(gray, pts.reshape(-1, 1, 2).astype(np.float32), (win, win), (-1, -1), criteria)
    pts = pts.reshape(-1, 2).astype(np.float64)
    if max_fit_px is not None and _grid_fit_residual(pts, board) > max_fit_px:
        return None
    if expected is not None:  # OpenCV may start the grid at any outer corner, mirrored or not
        grid = pts.reshape(board.rows, board.cols, 2)
        orders = [grid, grid[::-1, ::-1], grid[::-1], grid[:, ::-1]]
        pts = min(orders, key=lambda g: float(np.nanmean(np.linalg.norm(g.reshape(-1, 2) - expected, axis=1))))
        pts = pts.reshape(-1, 2).copy()
        # a grid far from where the board should be, or of another size, is some other pattern
        # (the belt's texture is a checkerboard too)
        span = np.linalg.norm(np.ptp(pts, axis=0)) / np.linalg.norm(np.ptp(expected, axis=0))
        if np.median(np.linalg.norm(pts - expected, axis=1)) > max_offset_px or not 0.7 < span < 1.4:
            return None
    return pts


def _grid_fit_residual(pts: np.ndarray, board: Checkerboard) -> float:
    """Largest distance (px) of a corner from a cubic polynomial map (col, row) -> pixel fitted to all."""
    c, r = np.meshgrid(np.arange(board.cols) / board.cols, np.arange(board.rows) / board.rows)
    c, r = c.ravel(), r.ravel()
    A = np.stack([c**i * r**j for i in range(4) for j in range(4 - i)], axis=1)
    coef, *_ = np.linalg.lstsq(A, pts, rcond=None)
    return float(np.linalg.norm(A @ coef - pts, axis=1).max())
