"""``BatchLoader``: training batches read ahead on a thread, every random draw made in order from one generator.

Each batch is *planned* on the calling thread (sample indices per source, flow noise and times,
image shifts: all drawn from the run's ``numpy.random.Generator``) and *loaded* on a worker thread
(HDF5 frames, resize to the policy's resolution, shift). A batch carries the generator state right
after its plan, so a checkpoint saved after training on batch k resumes with batch k+1 exactly.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from r2s2r.policy import flow
from r2s2r.policy.config import PolicyConfig
from r2s2r.policy.images import resize_images
from r2s2r.train.mixture import Mixture


@dataclass(frozen=True, eq=False)
class Plan:
    indices: dict[str, np.ndarray]  # source -> positions in its WindowSampler
    noise: np.ndarray  # (B, H, A) float32, N(0, I)
    t: np.ndarray  # (B,) float32 flow times (t=0 data, t=1 noise)
    shifts: np.ndarray  # (B, cameras, 2) int: crop offsets (y, x) into the edge-padded frame
    rng_state: dict[str, Any]  # generator state after this plan


@dataclass(frozen=True, eq=False)
class Batch:
    images: dict[str, np.ndarray]  # camera -> uint8 (B, S, S, 3)
    proprio: np.ndarray  # (B, P) float32, rad (not normalised)
    actions: np.ndarray  # (B, H, A) float32, rad (not normalised)
    noise: np.ndarray
    t: np.ndarray
    counts: dict[str, int]  # samples per source in this batch
    rng_state: dict[str, Any]


def shift_images(images: np.ndarray, offsets: np.ndarray, pad: int) -> np.ndarray:
    """Random-shift augmentation: each frame (N, S, S, C) edge-padded by ``pad`` and cropped back to
    S x S at ``offsets`` (N, 2) (y, x) in [0, 2 pad]; offsets (pad, pad) leave a frame unchanged."""
    if pad == 0:
        return images
    n, s = images.shape[:2]
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    out = np.empty_like(images)
    for i, (dy, dx) in enumerate(offsets.tolist()):
        out[i] = padded[i, dy : dy + s, dx : dx + s]
    return out


class BatchLoader:
    """Batches of ``mixture`` for ``config`` with ``prefetch`` batches loading ahead on one thread."""

    def __init__(
        self, mixture: Mixture, config: PolicyConfig, shift_px: int, rng: np.random.Generator, prefetch: int = 2
    ) -> None:
        self.mixture, self.config, self.shift_px, self.rng = mixture, config, shift_px, rng
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="r2s2r-batches") if prefetch else None
        self._queue: deque[Future[Batch]] = deque()
        self._prefetch = prefetch

    def _plan(self) -> Plan:
        c, rng, b = self.config, self.rng, self.mixture.batch_size
        indices = self.mixture.plan(rng)
        noise = rng.standard_normal((b, c.action_horizon, c.action_dim), dtype=np.float32)
        t = flow.sample_time(rng, b, c.time_alpha, c.time_beta, c.time_min)
        shifts = rng.integers(0, 2 * self.shift_px + 1, size=(b, len(c.cameras), 2))
        return Plan(indices, noise, t, shifts, rng.bit_generator.state)

    def load(self, plan: Plan) -> Batch:
        """The batch of ``plan`` (any thread; the samplers' HDF5 files are only read from one)."""
        parts = [self.mixture.samplers[name].sample(idx) for name, idx in plan.indices.items() if len(idx)]
        images = {}
        for j, cam in enumerate(self.config.cameras):
            frames = np.concatenate([resize_images(p[f"obs/{cam}"], self.config.image_size) for p in parts])
            images[cam] = shift_images(frames, plan.shifts[:, j], self.shift_px)
        return Batch(
            images=images,
            proprio=np.concatenate([p["obs/proprio"] for p in parts]).astype(np.float32, copy=False),
            actions=np.concatenate([p["actions"] for p in parts]).astype(np.float32, copy=False),
            noise=plan.noise,
            t=plan.t,
            counts={name: len(idx) for name, idx in plan.indices.items()},
            rng_state=plan.rng_state,
        )

    def next(self) -> Batch:
        if self._pool is None:
            return self.load(self._plan())
        while len(self._queue) < self._prefetch + 1:
            self._queue.append(self._pool.submit(self.load, self._plan()))
        return self._queue.popleft().result()

    def close(self) -> None:
        if self._pool is not None:
            for f in self._queue:
                f.cancel()
            self._pool.shutdown(wait=True)
            self._queue.clear()

    def __enter__(self) -> BatchLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
