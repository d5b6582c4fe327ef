"""``BatchLoader``: training batches read ahead on a thread, every random draw made in order from one generator.

Each batch is *planned* on the calling thread (sample indices per source, flow noise and times,
image shifts: all drawn from the run's ``numpy.random.Generator``) and *loaded* on a worker thread
(action windows and proprio from the window samplers, camera frames from a ``FrameReader`` at the
policy's resolution, shifts). A batch carries the generator state right
after its plan, so a checkpoint saved after training on batch k resumes with batch k+1 exactly.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from r2s2r.data.object_state import OBJECT_STATE, OBJECT_STATE_DIM
from r2s2r.policy import flow
from r2s2r.policy.config import PolicyConfig
from r2s2r.policy.protocol import PAST
from r2s2r.train.frames import FrameReader
from r2s2r.train.mixture import Mixture


@dataclass(frozen=True, eq=False)
class Plan:
    indices: dict[str, np.ndarray]  # source -> positions in its WindowSampler
    noise: np.ndarray  # (B R, H, A) float32, N(0, I); R flow samples per observation, sample-major
    t: np.ndarray  # (B R,) float32 flow times (t=0 data, t=1 noise)
    shifts: np.ndarray  # (B, cameras, 2) int: crop offsets (y, x) into the edge-padded frame
    rng_state: dict[str, Any]  # generator state after this plan


@dataclass(frozen=True, eq=False)
class Batch:
    images: dict[str, np.ndarray]  # camera (and past/<camera> with past_frame) -> uint8 (B, S, S, 3)
    proprio: np.ndarray  # (B, P) float32, rad (not normalised)
    past_proprio: np.ndarray | None  # (B, P) the proprio past_frame steps earlier (clamped), or None
    actions: np.ndarray  # (B, H, A) float32, rad (not normalised)
    object_state: np.ndarray | None  # (B, D) float32 labels (NaN: unknown) with PolicyConfig.object_state
    noise: np.ndarray
    t: np.ndarray
    counts: dict[str, int]  # samples per source in this batch
    frame_index: np.ndarray  # (B, 2) int64: (episode, frame) of each sample in its source
    rng_state: dict[str, Any]


def object_labels(parts: list[dict[str, np.ndarray]]) -> np.ndarray:
    """(B, OBJECT_STATE_DIM) the samples' object-state labels; NaN for a dataset without them."""
    key = f"obs/{OBJECT_STATE}"
    return np.concatenate(
        [p[key] if key in p else np.full((len(p["t"]), OBJECT_STATE_DIM), np.nan, np.float32) for p in parts]
    ).astype(np.float32, copy=False)


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
        self,
        mixture: Mixture,
        config: PolicyConfig,
        shift_px: int,
        rng: np.random.Generator,
        prefetch: int = 2,
        cache_bytes: int = 0,
        flow_samples: int = 1,
    ) -> None:
        self.mixture, self.config, self.shift_px, self.rng = mixture, config, shift_px, rng
        self.flow_samples = flow_samples
        datasets = {name: s.dataset for name, s in mixture.samplers.items()}
        self.frames = FrameReader(datasets, config.cameras, config.image_size, cache_bytes)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="r2s2r-batches") if prefetch else None
        self._queue: deque[Future[Batch]] = deque()
        self._prefetch = prefetch

    def _plan(self) -> Plan:
        c, rng, b = self.config, self.rng, self.mixture.batch_size
        indices = self.mixture.plan(rng)
        n = b * self.flow_samples
        noise = rng.standard_normal((n, c.action_horizon, c.action_dim), dtype=np.float32)
        t = flow.sample_time(rng, n, c.time_alpha, c.time_beta, c.time_min)
        shifts = rng.integers(0, 2 * self.shift_px + 1, size=(b, len(c.cameras), 2))
        return Plan(indices, noise, t, shifts, rng.bit_generator.state)

    def load(self, plan: Plan) -> Batch:
        """The batch of ``plan`` (any thread; the samplers' HDF5 files are only read from one)."""
        names = [name for name, idx in plan.indices.items() if len(idx)]
        parts = [self.mixture.samplers[name].sample(plan.indices[name]) for name in names]
        frames = [self.frames.read(name, p["episode"], p["t"]) for name, p in zip(names, parts, strict=True)]
        images = {}
        for j, cam in enumerate(self.config.cameras):
            stacked = np.concatenate([f[cam] for f in frames])
            images[cam] = shift_images(stacked, plan.shifts[:, j], self.shift_px)
        past_proprio = None
        d = self.config.past_frame
        if d:  # the sample d steps earlier in the same episode (its first frame at the start)
            past = [
                self.mixture.samplers[name].sample(plan.indices[name] - np.minimum(p["t"], d))
                for name, p in zip(names, parts, strict=True)
            ]
            past_frames = [self.frames.read(name, p["episode"], p["t"]) for name, p in zip(names, past, strict=True)]
            for j, cam in enumerate(self.config.cameras):
                if cam not in self.config.past_images:
                    continue
                stacked = np.concatenate([f[cam] for f in past_frames])
                images[PAST + cam] = shift_images(stacked, plan.shifts[:, j], self.shift_px)  # same camera jitter
            past_proprio = np.concatenate([p["obs/proprio"] for p in past]).astype(np.float32, copy=False)
        return Batch(
            images=images,
            proprio=np.concatenate([p["obs/proprio"] for p in parts]).astype(np.float32, copy=False),
            past_proprio=past_proprio,
            actions=np.concatenate([p["actions"] for p in parts]).astype(np.float32, copy=False),
            object_state=object_labels(parts) if self.config.object_state else None,
            noise=plan.noise,
            t=plan.t,
            counts={name: len(idx) for name, idx in plan.indices.items()},
            frame_index=np.concatenate([np.stack([p["episode"], p["t"]], axis=1) for p in parts]),
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
