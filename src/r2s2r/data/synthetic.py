"""``synthetic_episode``: small render-like episodes drawn from a generator, for tests, benchmarks and smoke runs."""

from __future__ import annotations

import numpy as np

from r2s2r.data.episode import Episode
from r2s2r.data.features import Feature
from r2s2r.data.provenance import Provenance

KINDS = ("nominal", "lighting", "belt_speed", "novel_object", "combined")


def _images(shape: tuple[int, ...], t: np.ndarray, phase: float, rng: np.random.Generator) -> np.ndarray:
    """(T, H, W, C) uint8: a smooth background, a coloured square moving across, mild sensor noise."""
    h, w, c = shape
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * 160 // w + 40), (yy * 120 // h + 60), np.full_like(xx, int(phase * 200) % 200 + 30)], -1)
    frames = np.repeat(base[None, ..., :c].astype(np.int16), len(t), axis=0)
    side = max(2, h // 5)
    cx = ((t * 0.7 + phase * w) % max(1, w - side)).astype(int)
    cy = (h // 2 + (np.sin(t / 7 + phase) * h / 4)).astype(int).clip(0, h - side)
    inside = (np.abs(xx[None] - (cx + side / 2)[:, None, None]) < side / 2) & (
        np.abs(yy[None] - (cy + side / 2)[:, None, None]) < side / 2
    )
    frames[inside] = np.array([200, 40, 30, 255][:c], dtype=np.int16)
    frames += rng.integers(-2, 3, size=frames.shape, dtype=np.int16)
    return frames.clip(0, 255).astype(np.uint8)


def synthetic_episode(
    features: tuple[Feature, ...],
    num_frames: int,
    rng: np.random.Generator,
    *,
    key: int | None = None,
    source: str = "sim",
    kind: str | None = None,
    success: bool | None = None,
    datagen: bool = True,
) -> Episode:
    """An episode fitting ``features``, every value drawn from ``rng``: smooth joint trajectories
    (actions lead proprio by one frame), render-like images, a float64 state random walk, and (with
    ``datagen``) MimicGen-style ``datagen_info``. Same generator state, same episode."""
    t = np.arange(num_frames, dtype=np.float64)
    seed = int(rng.integers(2**31))
    kind = kind if kind is not None else str(rng.choice(KINDS)) if source == "sim" else "nominal"
    success = bool(rng.random() < 0.8) if success is None else success
    prov = Provenance(
        source=source,
        world_hash="synthetic",
        behavior="mimicgen" if source == "sim" else "teleop",
        source_demo=int(rng.integers(5)) if source == "sim" else None,
        seed=seed,
        condition={"kind": kind, "belt_speed": round(float(rng.uniform(0.05, 0.18)), 4)},
        success=success,
        failure=None if success else str(rng.choice(["dropped", "wrong_bin", "missed_grasp"])),
        attempts=int(rng.integers(1, 4)),
        key=key,
    )
    arrays: dict[str, np.ndarray] = {}
    for f in features:
        if f.is_image:
            arrays[f.name] = _images(f.shape, t, float(rng.random()), rng)
        elif f.name != "actions":
            walk = np.cumsum(rng.normal(0.0, 0.02, size=(num_frames, *f.shape)), axis=0)
            arrays[f.name] = (walk + rng.uniform(-1, 1, size=f.shape)).astype(f.dtype)
    adim = next(f for f in features if f.name == "actions").shape
    ref = arrays.get("obs/proprio")
    if ref is not None and ref.shape[1:] == adim:
        actions = np.concatenate([ref[1:], ref[-1:]]) + rng.normal(0, 1e-3, size=ref.shape)
    else:
        actions = np.cumsum(rng.normal(0.0, 0.02, size=(num_frames, *adim)), axis=0)
    arrays["actions"] = actions.astype(next(f for f in features if f.name == "actions").dtype)
    datagen_info = {}
    if datagen:
        eef = np.tile(np.eye(4), (num_frames, 1, 1))
        eef[:, :3, 3] = rng.normal(0, 0.1, size=3) + np.outer(t, [0.01, 0.0, -0.005])
        obj = np.tile(np.eye(4), (num_frames, 1, 1))
        obj[:, 0, 3] = -0.2 + 0.08 * t / 10
        datagen_info = {
            "eef_pose": eef,
            "target_pose": eef.copy(),
            "object_poses": {"object": obj},
            "subtask_term_signals": {"grasp": (t >= num_frames // 2).astype(np.int64)},
        }
    obs = {f.obs_key: arrays[f.name] for f in features if f.obs_key is not None}
    return Episode(obs, arrays["actions"], arrays["states"], prov, datagen_info)
