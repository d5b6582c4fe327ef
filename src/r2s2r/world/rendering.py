"""Rendering every camera of the cell through its lens and image model.

MuJoCo renders an ideal pinhole view (quality from ``RenderParams``); ``CameraPipeline`` turns
it into the sensor image at full resolution or at a policy's resolution. Set
``MUJOCO_GL=egl`` before MuJoCo is imported (``import r2s2r`` does, if unset).

Quality follows the render's size (``render_quality``). A small render (a policy's view: 48 px
images need 50-113 px renders) gains nothing from a 1024 px shadow map, and on a software GL
(Mesa llvmpipe) the shadow pass and the multisample buffer are fixed costs that dominate it:
rendered 2x2 supersampled instead of multisampled, with a 256 px shadow map, a lab-twin policy
frame costs 10-13 ms instead of 22-25 ms (a probe on lab 0, 2026-12-06; in benchmarks/cell_speed.py an
observed 48 px lab step went from 79.9 to 45.9 ms), and is anti-aliased
at least as well (4 samples a pixel, not 2; 1.3-1.9 grey levels from the multisampled image). Larger
renders (full sensor images, videos, calibration) keep the params' settings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r.world.camera import CameraPipeline, LensModel
from r2s2r.world.params import CameraParams


def lens_of(cam: CameraParams, size: tuple[int, int] | None = None) -> LensModel:
    """The lens of ``cam`` read out at ``size`` = (width, height), or at full resolution."""
    return cam.lens if size is None else cam.lens.scaled(*size)


def pipeline_of(cam: CameraParams, size: tuple[int, int] | None = None) -> CameraPipeline:
    lens = lens_of(cam, size)
    blur = cam.effects.blur_sigma * lens.fx / cam.lens.fx  # stated in full-resolution pixels
    return CameraPipeline(lens, dataclasses.replace(cam.effects, blur_sigma=blur))


SMALL_RENDER = 128  # px: renders whose longer side is at most this are supersampled (``render_quality``)
SMALL_SHADOW = 256  # px: the shadow map side of a small render


@dataclass(frozen=True)
class RenderQuality:
    """How one render size is drawn: MuJoCo's shadow map side and MSAA samples, and a supersampling
    factor (the render is drawn ``supersample`` times larger per side and block-averaged)."""

    shadowsize: int
    offsamples: int
    supersample: int = 1


def render_quality(shadowsize: int, offsamples: int, size: tuple[int, int], small: int = SMALL_RENDER) -> RenderQuality:
    """The quality of a render of ``size`` = (height, width) under a world's ``RenderParams``
    (``shadowsize``, ``offsamples``): a small one (longer side <= ``small``) of a world that asks
    for anti-aliasing is 2x2 supersampled without MSAA, with at most a ``SMALL_SHADOW`` shadow map;
    anything else is drawn as the params say. A world without anti-aliasing (the simulator's default)
    is never changed."""
    if offsamples == 0 or max(size) > small:
        return RenderQuality(shadowsize, offsamples)
    return RenderQuality(min(shadowsize, SMALL_SHADOW), 0, 2)


def block_mean(image: np.ndarray, k: int) -> np.ndarray:
    """(k*H, k*W, C) uint8 -> (H, W, C) uint8: the mean of every k x k block, rounded half up."""
    h, w, c = image.shape[0] // k, image.shape[1] // k, image.shape[2]
    s = image.reshape(h, k, w, k, c).sum(axis=(1, 3), dtype=np.uint32)
    return ((s + (k * k) // 2) // (k * k)).astype(np.uint8)


class CellRenderer:
    """Renders named cameras of one compiled model; reuses GL contexts per render size."""

    def __init__(self, model: mujoco.MjModel, cameras: tuple[CameraParams, ...], small: int = SMALL_RENDER) -> None:
        """``small``: the longest side of a render drawn at the small renders' quality (0: none; what
        every render did before 2026-12-06, kept for benchmarks/cell_speed.py's reference row)."""
        self._model = model
        self._small = small
        self._cameras = {c.name: c for c in cameras}
        self._cam_ids = {c.name: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c.name) for c in cameras}
        self._pipelines: dict[tuple, CameraPipeline] = {}
        self._renderers: dict[tuple[int, int], tuple[mujoco.Renderer, int]] = {}  # size -> (renderer, supersample)

    def pipeline(self, camera: str, size: tuple[int, int] | None) -> CameraPipeline:
        key = (camera, size)
        if key not in self._pipelines:
            self._pipelines[key] = pipeline_of(self._cameras[camera], size)
        return self._pipelines[key]

    def render(
        self, data: mujoco.MjData, camera: str, size: tuple[int, int] | None, rng: np.random.Generator | None
    ) -> np.ndarray:
        """Sensor image (H, W, 3) uint8 of ``camera`` for the current state of ``data``."""
        pipe = self.pipeline(camera, size)
        rsize = (pipe.render_height, pipe.render_width)
        renderer, k = self._renderers.get(rsize) or self._new_renderer(rsize)
        self._model.cam_fovy[self._cam_ids[camera]] = pipe.render_fovy_deg
        renderer.update_scene(data, camera=self._cam_ids[camera])
        image = renderer.render()
        return pipe.apply(block_mean(image, k) if k > 1 else image, rng)

    def _new_renderer(self, rsize: tuple[int, int]) -> tuple[mujoco.Renderer, int]:
        """A renderer (GL context) for renders of ``rsize`` at its ``render_quality``. MuJoCo reads the
        offscreen size, shadow map size and MSAA samples from the model when it makes a context: they
        are set for this one and restored after."""
        vis, quality = self._model.vis.global_, self._model.vis.quality
        q = render_quality(int(quality.shadowsize), int(quality.offsamples), rsize, self._small)
        h, w = rsize[0] * q.supersample, rsize[1] * q.supersample
        kept = (quality.shadowsize, quality.offsamples)
        # The offscreen buffer is allocated at the model's offwidth x offheight and cleared (with its
        # MSAA samples) every frame: size it to this renderer, not to the largest.
        vis.offheight, vis.offwidth = h, w
        quality.shadowsize, quality.offsamples = q.shadowsize, q.offsamples
        try:
            renderer = mujoco.Renderer(self._model, h, w)
        finally:
            quality.shadowsize, quality.offsamples = kept
        self._renderers[rsize] = (renderer, q.supersample)
        return renderer, q.supersample

    def skip(self, camera: str, size: tuple[int, int] | None, rng: np.random.Generator | None) -> None:
        """Draw from ``rng`` what ``render`` would draw, and render nothing."""
        self.pipeline(camera, size).skip(rng)

    def close(self) -> None:
        for r, _ in self._renderers.values():
            r.close()
        self._renderers.clear()
