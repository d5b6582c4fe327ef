"""Tests of r2s2r.world.camera: lens models, the render -> sensor pipeline, image effects."""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import cv2
import mujoco
import numpy as np
import pytest

from r2s2r.errors import ConfigError
from r2s2r.world.camera import CameraPipeline, ImageEffects, LensModel

PINHOLE = LensModel("pinhole", 640, 480, 520.0, 520.0, 319.5, 239.5, (-0.1, 0.05, 0.001, -0.001, 0))
FISHEYE = LensModel("fisheye", 480, 480, 200.0, 200.0, 239.5, 239.5, (0.05, -0.01, 0.003, -0.0005))
SMALL = LensModel("pinhole", 64, 48, 60.0, 60.0, 31.5, 23.5, (-0.1, 0.05, 0.001, -0.001, 0.0))


def _grid(lens: LensModel, step: float) -> np.ndarray:
    us, vs = np.meshgrid(np.arange(0, lens.width, step), np.arange(0, lens.height, step))
    return np.stack([us.ravel(), vs.ravel()], axis=1)


@pytest.mark.parametrize("lens", [PINHOLE, FISHEYE, FISHEYE.scaled(96, 96)], ids=["pinhole", "fisheye", "fisheye96"])
def test_project_unproject_round_trip(lens: LensModel) -> None:
    pix = _grid(lens, max(lens.width / 37.3, 1.0))
    rays = lens.unproject(pix)
    ok = np.isfinite(rays).all(axis=1)
    # Every pixel inverts, except fisheye corners whose rays would be >= 90 deg off axis.
    if lens.kind == "pinhole":
        assert ok.all()
    else:
        assert ok.mean() > 0.9
        theta_d = np.hypot(*((pix[~ok] - [lens.cx, lens.cy]) / lens.fx).T)
        assert theta_d.min() > 1.5  # theta_d(90 deg) = 1.63 for these coefficients
    assert np.allclose(np.linalg.norm(rays[ok], axis=1), 1.0)
    assert (rays[ok, 2] > 0).all()
    err = np.linalg.norm(lens.project(rays[ok]) - pix[ok], axis=1)
    assert err.max() < 1e-3


def test_project_behind_camera_is_nan() -> None:
    out = PINHOLE.project(np.array([[0.1, 0.2, -1.0], [0.0, 0.0, 1.0]]))
    assert np.isnan(out[0]).all()
    assert np.allclose(out[1], [PINHOLE.cx, PINHOLE.cy])


@pytest.mark.parametrize("size", [(320, 320), (1280, 480), (200, 300), (96, 72)])
@pytest.mark.parametrize("lens", [PINHOLE, FISHEYE], ids=["pinhole", "fisheye"])
def test_scaled_equals_crop_then_scale(lens: LensModel, size: tuple[int, int]) -> None:
    w, h = size
    small = lens.scaled(w, h)
    assert (small.width, small.height, small.dist) == (w, h, lens.dist)
    rng = np.random.default_rng(0)
    pts = np.concatenate([rng.uniform(-0.6, 0.6, (200, 2)), np.ones((200, 1))], axis=1)
    full = lens.project(pts)
    # Central crop to the target aspect ratio, then uniform scale (pixel-centre convention).
    crop_w, crop_h = min(lens.width, lens.height * w / h), min(lens.height, lens.width * h / w)
    s = w / crop_w
    expect = s * (full + 0.5 - [(lens.width - crop_w) / 2, (lens.height - crop_h) / 2]) - 0.5
    assert np.allclose(small.project(pts), expect, atol=1e-6)
    assert np.isclose(h / crop_h, s)


# ---------------------------------------------------------------- rendering with MuJoCo

_CV_TO_MJ = np.diag([1.0, -1.0, -1.0])  # OpenCV camera frame -> MuJoCo camera frame


def _render(pipe: CameraPipeline, centres_cv: np.ndarray, radius: float) -> np.ndarray:
    """Ideal render of bright spheres at ``centres_cv`` (OpenCV camera frame) on black."""
    cam_pos = np.array([0.3, -0.2, 1.1])
    cam_quat = np.array([np.cos(0.4), np.sin(0.4) * 0.6, np.sin(0.4) * 0.0, np.sin(0.4) * 0.8])
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, cam_quat)
    world = centres_cv @ _CV_TO_MJ.T @ rot.reshape(3, 3).T + cam_pos
    spec = mujoco.MjSpec()
    spec.visual.quality.shadowsize = 0
    spec.visual.quality.offsamples = 0
    spec.visual.headlight.ambient = [1.0, 1.0, 1.0]
    spec.visual.headlight.diffuse = [0.0, 0.0, 0.0]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    spec.visual.global_.offwidth = pipe.render_width
    spec.visual.global_.offheight = pipe.render_height
    spec.worldbody.add_camera(name="cam", pos=cam_pos, quat=cam_quat, fovy=pipe.render_fovy_deg)
    for p in world:
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[radius, 0, 0], pos=p, rgba=[1, 1, 1, 1])
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, pipe.render_height, pipe.render_width) as renderer:
        renderer.update_scene(data, camera="cam")
        return renderer.render().copy()


def _centroids(img: np.ndarray) -> np.ndarray:
    g = img.astype(np.float64).mean(axis=2)
    n, labels = cv2.connectedComponents((g > 0.2 * g.max()).astype(np.uint8))
    out = []
    for i in range(1, n):
        vs, us = np.nonzero(labels == i)
        w = g[vs, us]
        out.append([(us * w).sum() / w.sum(), (vs * w).sum() / w.sum()])
    return np.array(out)


def _match(found: np.ndarray, expected: np.ndarray) -> np.ndarray:
    assert found.shape == expected.shape, f"found {len(found)} blobs, expected {len(expected)}"
    return np.linalg.norm(found[:, None] - expected[None], axis=2).min(axis=0)


def _ellipse_centres(centres: np.ndarray, radius: float) -> np.ndarray:
    """Rays (z = 1) to the centres of the ellipses that spheres project to in a pinhole image.

    Off axis, a sphere's image is elongated outwards: its angular extent [a - b, a + b] maps to
    [tan(a - b), tan(a + b)], whose midpoint lies beyond tan(a) (1.8 px at 64 deg, f = 200).
    """
    dist = np.linalg.norm(centres, axis=1)
    a, b = np.arccos(centres[:, 2] / dist), np.arcsin(radius / dist)
    c = (np.tan(a + b) + np.tan(a - b)) / 2
    rho = np.linalg.norm(centres[:, :2], axis=1)
    e = centres[:, :2] / np.where(rho > 0, rho, 1.0)[:, None]
    return np.concatenate([c[:, None] * e, np.ones((len(c), 1))], axis=1)


def _directions(thetas_deg: list[float], phis_deg: list[float], dist: float) -> np.ndarray:
    t, p = np.radians(thetas_deg), np.radians(phis_deg)
    return dist * np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=1)


CASES = {
    "pinhole640": (PINHOLE, [0, 20, 21, 30, 34, 15], [0, 0, 90, 150, 217, 300], 2.0, 0.012),
    "fisheye96": (FISHEYE.scaled(96, 96), [0, 30, 45, 60, 62], [0, 200, 90, 45, 225], 1.0, 0.06),
    "fisheye480": (FISHEYE, [0, 30, 45, 60, 64], [0, 200, 90, 45, 225], 1.0, 0.03),
}


@pytest.mark.parametrize("case", list(CASES))
def test_mujoco_render_through_pipeline(case: str) -> None:
    lens, thetas, phis, dist, radius = CASES[case]
    pipe = CameraPipeline(lens, ImageEffects())
    centres = _directions(thetas, phis, dist)
    ideal = _render(pipe, centres, radius)
    assert ideal.shape == (pipe.render_height, pipe.render_width, 3)
    # The ideal render follows u = (W-1)/2 + f x/z (pixel-centre convention), to 0.25 px.
    expect = pipe.render_pixel(_ellipse_centres(centres, radius))
    assert _match(_centroids(ideal), expect).max() < 0.25
    out = pipe.apply(ideal, None)
    assert out.shape == (lens.height, lens.width, 3) and out.dtype == np.uint8
    assert _match(_centroids(out), lens.project(centres)).max() < 1.0


def test_pixels_outside_render_are_black() -> None:
    pipe = CameraPipeline(FISHEYE, ImageEffects())
    assert pipe.render_fovy_deg <= 140.0
    out = pipe.apply(np.full((pipe.render_height, pipe.render_width, 3), 255, np.uint8), None)
    assert (out[0, 0] == 0).all() and (out[-1, -1] == 0).all()  # theta > 90 deg
    assert (out[240, 240] == 255).all() and (out[240, 20] == 255).all()
    assert (out[~pipe.valid_mask] == 0).all() and (out[pipe.valid_mask] == 255).all()


def test_render_size_and_density() -> None:
    pipe = CameraPipeline(PINHOLE, ImageEffects())
    f = (pipe.render_height / 2) / np.tan(np.radians(pipe.render_fovy_deg) / 2)
    assert f >= PINHOLE.fx - 1e-9
    assert pipe.valid_mask.all()
    capped = CameraPipeline(FISHEYE, ImageEffects(), max_fovy_deg=100.0)
    assert capped.render_fovy_deg <= 100.0 and not capped.valid_mask.all()
    assert max(capped.render_width, capped.render_height) <= 3 * 480


# ---------------------------------------------------------------- effects


def _flat(pipe: CameraPipeline, level: int) -> np.ndarray:
    return np.full((pipe.render_height, pipe.render_width, 3), level, np.uint8)


def test_white_balance_and_gain() -> None:
    pipe = CameraPipeline(SMALL, ImageEffects(wb_gains=(1.2, 1.0, 0.7), gain=1.1))
    out = pipe.apply(_flat(pipe, 100), None).reshape(-1, 3).astype(float)
    assert np.allclose(out.mean(axis=0), [132.0, 110.0, 77.0], atol=0.5)
    assert out.std(axis=0).max() < 0.5


def test_vignetting_factor() -> None:
    pipe = CameraPipeline(SMALL, ImageEffects(vignetting=0.4))
    out = pipe.apply(_flat(pipe, 200), None).astype(float)
    r2 = ((0 - 31.5) ** 2 + (0 - 23.5) ** 2) / (0.25 * (64**2 + 48**2))  # corner pixel centre
    for corner in [out[0, 0], out[0, -1], out[-1, 0], out[-1, -1]]:
        assert np.allclose(corner, 200 * (1 - 0.4 * r2), atol=0.6)
    assert np.allclose(out[23, 31], 200, atol=0.6)


def test_noise_std_and_seeds() -> None:
    pipe = CameraPipeline(SMALL, ImageEffects(noise_std=5.0))
    img = _flat(pipe, 128)
    out = pipe.apply(img, np.random.default_rng(1)).astype(float) - 128
    assert abs(out.std() - 5.0) < 0.5 and abs(out.mean()) < 0.3
    a = pipe.apply(img, np.random.default_rng(7))
    assert a.tobytes() == pipe.apply(img, np.random.default_rng(7)).tobytes()
    assert a.tobytes() != pipe.apply(img, np.random.default_rng(8)).tobytes()
    assert (pipe.apply(img, None) == 128).all()  # no rng -> no noise


def test_blur_lowers_high_frequencies() -> None:
    sharp = CameraPipeline(SMALL, ImageEffects())
    blurred = CameraPipeline(SMALL, ImageEffects(blur_sigma=1.5))
    img = np.random.default_rng(0).integers(0, 256, (sharp.render_height, sharp.render_width, 3))
    img = img.astype(np.uint8)

    def hf(x: np.ndarray) -> float:
        return float(cv2.Laplacian(x.astype(np.float32), cv2.CV_32F).var())

    a, b = sharp.apply(img, None), blurred.apply(img, None)
    assert hf(b) < 0.2 * hf(a)
    assert abs(a.astype(float).mean() - b.astype(float).mean()) < 2.0


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "fishy"},
        {"dist": (0.1, 0.0, 0.0, 0.0)},
        {"fx": -520.0},
        {"fy": 0.0},
        {"width": 0},
        {"cx": float("nan")},
        {"dist": (0.1, 0.0, 0.0, 0.0, float("inf"))},
    ],
)
def test_bad_lens_raises(kwargs: dict) -> None:
    params = dict(PINHOLE.__dict__) | kwargs
    with pytest.raises(ConfigError):
        LensModel(**params)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"blur_sigma": -1.0},
        {"noise_std": -0.1},
        {"wb_gains": (1.0, 0.0, 1.0)},
        {"wb_gains": (1.0, 1.0)},
        {"gain": -2.0},
        {"vignetting": 1.0},
    ],
)
def test_bad_effects_raise(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        ImageEffects(**kwargs)


def test_bad_image_and_points_raise() -> None:
    pipe = CameraPipeline(SMALL, ImageEffects())
    shape = (pipe.render_height, pipe.render_width, 3)
    for bad in [np.zeros(shape[:2], np.uint8), np.zeros(shape, np.float32), np.zeros((4, 4, 3))]:
        with pytest.raises(ConfigError, match="render_rgb"):
            pipe.apply(bad, None)
    with pytest.raises(ConfigError, match="points_cam"):
        SMALL.project(np.zeros((3, 2)))
    with pytest.raises(ConfigError):
        SMALL.scaled(0, 10)
    with pytest.raises(ConfigError, match="max_fovy_deg"):
        CameraPipeline(SMALL, ImageEffects(), max_fovy_deg=180.0)
