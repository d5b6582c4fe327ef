"""Rendering every camera of the cell through its lens and image model.

MuJoCo renders an ideal pinhole view (quality from ``RenderParams``); ``CameraPipeline`` turns
it into the sensor image at full resolution or at a policy's resolution. Set
``MUJOCO_GL=egl`` before MuJoCo is imported (``import r2s2r`` does, if unset).
"""

from __future__ import annotations

import dataclasses

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


class CellRenderer:
    """Renders named cameras of one compiled model; reuses GL contexts per render size."""

    def __init__(self, model: mujoco.MjModel, cameras: tuple[CameraParams, ...]) -> None:
        self._model = model
        self._cameras = {c.name: c for c in cameras}
        self._cam_ids = {c.name: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c.name) for c in cameras}
        self._pipelines: dict[tuple, CameraPipeline] = {}
        self._renderers: dict[tuple[int, int], mujoco.Renderer] = {}

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
        renderer = self._renderers.get(rsize)
        if renderer is None:
            # The offscreen buffer is allocated at the model's offwidth x offheight and cleared
            # (with its MSAA samples) every frame: size it to this renderer, not to the largest.
            vis = self._model.vis.global_
            vis.offheight, vis.offwidth = rsize
            renderer = self._renderers[rsize] = mujoco.Renderer(self._model, *rsize)
        self._model.cam_fovy[self._cam_ids[camera]] = pipe.render_fovy_deg
        renderer.update_scene(data, camera=self._cam_ids[camera])
        return pipe.apply(renderer.render(), rng)

    def skip(self, camera: str, size: tuple[int, int] | None, rng: np.random.Generator | None) -> None:
        """Draw from ``rng`` what ``render`` would draw, and render nothing."""
        self.pipeline(camera, size).skip(rng)

    def close(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()
