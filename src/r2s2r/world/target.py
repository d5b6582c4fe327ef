"""Calibration targets: a checkerboard that can be mounted on a flange or stood at a fixture.

Target frame: origin at the board's first inner corner, x along columns, y along rows, z out of
the printed face (OpenCV's object-point convention: ``object_points()[k] = (col*square,
row*square, 0)`` for inner corners in row-major order, as ``cv2.findChessboardCorners`` reports).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r.errors import ConfigError


@dataclass(frozen=True)
class Checkerboard:
    """A printed checkerboard: ``cols`` x ``rows`` inner corners, ``square`` side in m."""

    cols: int = 8
    rows: int = 6
    square: float = 0.025
    border: float = 0.02  # white margin around the squares, m
    thickness: float = 0.004

    def __post_init__(self) -> None:
        if self.cols < 3 or self.rows < 3 or self.cols == self.rows:
            raise ConfigError(f"checkerboard: expected >= 3 distinct inner-corner counts, got {self.cols}x{self.rows}")
        if not 0.005 <= self.square <= 0.2:
            raise ConfigError(f"checkerboard.square: expected 5 mm to 20 cm, got {self.square}")

    def object_points(self) -> np.ndarray:
        """(rows*cols, 3) inner-corner positions in the target frame, m."""
        c, r = np.meshgrid(np.arange(self.cols), np.arange(self.rows))
        return np.stack([c.ravel() * self.square, r.ravel() * self.square, np.zeros(c.size)], axis=1)

    def add_to(self, body: mujoco.MjsBody, prefix: str) -> None:
        """Add the board's visual geoms to ``body`` (the body frame is the target frame).

        Squares are thin boxes on a white plate; geoms do not collide.
        """
        s, b = self.square, self.border
        n_cols, n_rows = self.cols + 1, self.rows + 1  # squares
        lo = np.array([-s - b, -s - b])
        hi = np.array([self.cols * s + b, self.rows * s + b])
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        plate = body.add_geom(
            name=f"{prefix}plate",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[half[0], half[1], self.thickness / 2],
            pos=[centre[0], centre[1], -self.thickness / 2],
            rgba=[0.95, 0.95, 0.95, 1],
        )
        plate.contype = plate.conaffinity = 0
        for i in range(n_cols):
            for j in range(n_rows):
                if (i + j) % 2:
                    continue
                g = body.add_geom(
                    type=mujoco.mjtGeom.mjGEOM_BOX,
                    size=[s / 2, s / 2, 0.0005],
                    pos=[(i - 0.5) * s, (j - 0.5) * s, 0.0002],
                    rgba=[0.02, 0.02, 0.02, 1],
                )
                g.contype = g.conaffinity = 0
