"""``resize_images``: camera frames to the policy's resolution, the same way in training and evaluation."""

from __future__ import annotations

import cv2
import numpy as np


def resize_images(images: np.ndarray, size: int) -> np.ndarray:
    """uint8 frames (N, H, W, 3) -> (N, size, size, 3) with OpenCV area interpolation (bilinear when
    enlarging); frames already at ``size`` are returned unchanged (no copy)."""
    n, h, w = images.shape[:3]
    if (h, w) == (size, size):
        return images
    interp = cv2.INTER_AREA if size < min(h, w) else cv2.INTER_LINEAR
    out = np.empty((n, size, size, images.shape[3]), dtype=np.uint8)
    for i in range(n):
        out[i] = cv2.resize(images[i], (size, size), interpolation=interp).reshape(size, size, -1)
    return out
