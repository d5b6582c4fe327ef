"""Photometric calibration: edge-spread blur and temporal noise on synthetic images (exact cases),
then blur, noise, vignetting, gains and lighting recovered from lab twins (truth via the test hook)."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from r2s2r.calibrate.photometric import PhotometricConfig, edge_spread_sigma, temporal_noise_std
from r2s2r.errors import R2S2RError
from r2s2r.lab.twin import _hidden_params
from r2s2r.world.target import Checkerboard


def _board_image(sigma: float, angle: float = 0.13, square: float = 24.0, size: int = 320, ss: int = 8):
    """A rendered checkerboard (supersampled, rotated by ``angle``) blurred by ``sigma`` px, and its
    inner corners in object-point order."""
    board = Checkerboard(cols=7, rows=5, square=0.02)
    c, s = math.cos(angle), math.sin(angle)
    origin = np.array([70.0, 80.0])
    big = size * ss
    v, u = np.mgrid[0:big, 0:big]
    x, y = (u + 0.5) / ss - 0.5 - origin[0], (v + 0.5) / ss - 0.5 - origin[1]
    bx, by = (c * x + s * y) / square, (-s * x + c * y) / square
    inside = (bx > -1) & (bx < board.cols) & (by > -1) & (by < board.rows)
    dark = ((np.floor(bx) + np.floor(by)) % 2 == 0) & inside
    img = np.where(dark, 30.0, 220.0).astype(np.float32)
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA)
    if sigma > 0:
        img = cv2.GaussianBlur(img, (0, 0), sigma)
    rgb = np.repeat(np.clip(img + 0.5, 0, 255).astype(np.uint8)[..., None], 3, axis=2)
    cc, rr = np.meshgrid(np.arange(board.cols), np.arange(board.rows))
    pts = np.stack([cc.ravel(), rr.ravel()], axis=1) * square
    corners = origin + pts @ np.array([[c, s], [-s, c]])
    return rgb, corners, board


@pytest.mark.parametrize("sigma", [0.6, 1.0, 1.6])
def test_edge_spread_recovers_a_known_gaussian_blur(sigma):
    config = PhotometricConfig()
    # the box filter of pixel integration adds 1/12 px^2 (and a little for the supersampling)
    base = edge_spread_sigma(*_board_image(0.0), config)
    est = edge_spread_sigma(*_board_image(sigma), config)
    assert abs(math.sqrt(max(est**2 - base**2, 0)) - sigma) < 0.05, (est, base)


def test_edge_spread_needs_edges():
    img, corners, board = _board_image(1.0)
    with pytest.raises(R2S2RError, match="usable board edges"):
        edge_spread_sigma(np.full_like(img, 128), corners, board, PhotometricConfig())


@pytest.mark.parametrize("std", [0.8, 2.0, 4.0])
def test_temporal_noise_of_two_captures(std):
    rng = np.random.default_rng(0)
    scene = rng.uniform(20, 230, (240, 320, 3))
    a, b = (np.clip(np.round(scene + rng.normal(0, std, scene.shape)), 0, 255).astype(np.uint8) for _ in range(2))
    assert abs(temporal_noise_std(a, b) / std - 1) < 0.03


@pytest.mark.slow
def test_photometry_recovers_the_lab_image_model(lab_calibration):
    lab, cal = lab_calibration
    truth = _hidden_params(lab)
    photo = cal.photometry
    factors = []
    for c in photo.cameras:
        est, true = c.effects, truth.camera(c.name).effects
        assert abs(est.blur_sigma - true.blur_sigma) < 0.12, (c.name, est.blur_sigma, true.blur_sigma)
        assert abs(est.noise_std / true.noise_std - 1) < 0.05, (c.name, est.noise_std, true.noise_std)
        assert abs(est.vignetting - true.vignetting) < 0.03, (c.name, est.vignetting, true.vignetting)
        factors.append((np.asarray(est.wb_gains) * est.gain) / (np.asarray(true.wb_gains) * true.gain))
    # light and camera gain are observable only as a product: what remains of the gains after the
    # true camera gains is the (gauge) light factor, the same for every camera
    factors = np.asarray(factors)
    assert np.abs(factors / factors.mean(axis=0) - 1).max() < 0.02, factors
    lt, tl = photo.lighting, truth.lighting
    # the key light's direction within 3 degrees (the fit renders lean, the lab with shadows and MSAA)
    d_est, d_true = (np.asarray(d, float) / np.linalg.norm(d) for d in (lt.key_dir, tl.key_dir))
    assert np.degrees(np.arccos(np.clip(d_est @ d_true, -1, 1))) < 3.0, (lt.key_dir, tl.key_dir)
    assert abs((lt.key_diffuse / lt.ambient) / (tl.key_diffuse / tl.ambient) - 1) < 0.1
    # residual of the lean fit renders against the lab's (shadows, MSAA and texture the sim omits): 4-9 levels
    assert photo.fit_rms < 10.0
