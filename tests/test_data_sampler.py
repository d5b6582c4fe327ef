"""WindowSampler batches and normalisation statistics, against the episodes they were built from."""

from __future__ import annotations

import json

import numpy as np
import pytest

from r2s2r.data import (
    Dataset,
    DatasetWriter,
    FeatureStats,
    Stats,
    WindowSampler,
    compute_stats,
    standard_features,
    synthetic_episode,
)
from r2s2r.errors import R2S2RError

FEATS = standard_features(state_dim=6, image_size=(16, 20))
LENGTHS = (5, 12, 20, 9)


@pytest.fixture
def ds(tmp_path):
    with DatasetWriter(tmp_path / "ds", FEATS, 10.0, shard_episodes=2) as w:
        for k, n in enumerate(LENGTHS):
            w.add(synthetic_episode(FEATS, n, np.random.default_rng(k), key=k))
    with Dataset(tmp_path / "ds") as d:
        yield d


def test_index_covers_every_frame_once(ds):
    s = WindowSampler(ds, horizon=8)
    assert len(s) == sum(LENGTHS)
    pairs = {(int(e), int(t)) for e, t in s.index}
    assert pairs == {(e, t) for e, n in enumerate(LENGTHS) for t in range(n)}


def test_batches_hold_frame_t_and_a_padded_action_chunk(ds):
    h = 8
    s = WindowSampler(ds, horizon=h)
    episodes = [ds.episode(i) for i in range(len(ds))]
    b = s.sample(np.arange(len(s)))
    assert b["obs/head_left"].shape == (len(s), 16, 20, 3) and b["obs/head_left"].dtype == np.uint8
    assert b["obs/proprio"].dtype == np.float32 and b["actions"].shape == (len(s), h, 27)
    assert b["actions"].dtype == np.float32 and b["action_pad_mask"].dtype == bool
    for j, (e, t) in enumerate(s.index):
        ep, n = episodes[e], LENGTHS[e]
        assert b["episode"][j] == e and b["t"][j] == t
        for cam in ("head_left", "right_wrist", "left_wrist", "proprio"):
            assert np.array_equal(b[f"obs/{cam}"][j], ep.obs[cam][t])
        for k in range(h):
            padded = t + k >= n
            assert b["action_pad_mask"][j, k] == padded
            assert np.array_equal(b["actions"][j, k], ep.actions[min(t + k, n - 1)])
    # the first episode (5 frames) is shorter than the horizon: every window from it is padded
    assert b["action_pad_mask"][s.index[:, 0] == 0][:, -1].all()
    assert not b["action_pad_mask"][:, 0].any()


def test_random_batches_are_determined_by_the_generator(ds):
    s = WindowSampler(ds, horizon=4, obs_keys=("right_wrist", "proprio"), episodes=[1, 3])
    a = s.sample_random(32, np.random.default_rng(5))
    b = s.sample_random(32, np.random.default_rng(5))
    assert sorted(a) == sorted(b) == ["action_pad_mask", "actions", "episode", "obs/proprio", "obs/right_wrist", "t"]
    for k in a:
        assert np.array_equal(a[k], b[k])
    assert set(a["episode"].tolist()) <= {1, 3}
    assert len(s) == LENGTHS[1] + LENGTHS[3]


def test_unknown_obs_key_has_a_hint(ds):
    with pytest.raises(R2S2RError, match="Did you mean 'head_left'"):
        WindowSampler(ds, obs_keys=("head_lft",))


def test_stats_match_numpy_on_all_frames(ds):
    stats = compute_stats(ds, cache=False)
    assert sorted(stats.features) == ["actions", "obs/proprio", "states"]  # no images
    for name in stats.features:
        x = np.concatenate([ds.episode(i).arrays()[name] for i in range(len(ds))]).astype(np.float64)
        s = stats.features[name]
        np.testing.assert_allclose(s.mean, x.mean(0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s.std, x.std(0), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(s.min, x.min(0))
        np.testing.assert_array_equal(s.max, x.max(0))
        np.testing.assert_allclose(s.q01, np.quantile(x, 0.01, axis=0), rtol=1e-12)
        np.testing.assert_allclose(s.q99, np.quantile(x, 0.99, axis=0), rtol=1e-12)


def test_normalize_round_trips_and_standardises(ds):
    stats = compute_stats(ds, cache=False)
    x = np.concatenate([ds.episode(i).actions for i in range(len(ds))])
    z = stats.normalize("actions", x, "zscore")
    assert z.dtype == np.float32
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-4)
    np.testing.assert_allclose(z.std(0), 1.0, atol=1e-4)
    q = stats.normalize("actions", x, mode="quantile")
    np.testing.assert_allclose(stats.normalize("actions", stats.features["actions"].q99, "quantile"), 1.0)
    np.testing.assert_allclose(stats.normalize("actions", stats.features["actions"].q01, "quantile"), -1.0)
    a = stats.features["actions"]
    inside = (x >= a.q01.astype(np.float32)) & (x <= a.q99.astype(np.float32))
    assert inside.mean() > 0.9
    assert (np.abs(q[inside]) <= 1 + 1e-5).all() and (np.abs(q[~inside]) >= 1 - 1e-5).all()
    for mode, y in (("zscore", z), ("quantile", q)):
        np.testing.assert_allclose(stats.unnormalize("actions", y, mode), x, atol=1e-5)
    const = np.full((4, 27), 0.3)  # a joint that never moves: spread 0 normalises with scale 1, not inf
    flat = Stats({"flat": FeatureStats(*(const[0] for _ in range(6)))}, "none")
    for mode in ("zscore", "quantile"):
        assert np.array_equal(flat.normalize("flat", const, mode), np.zeros_like(const))
        assert np.array_equal(flat.unnormalize("flat", np.zeros_like(const), mode), const)
    with pytest.raises(R2S2RError, match="unknown normalisation mode 'minmax'"):
        stats.normalize("actions", x, "minmax")


def test_stats_are_cached_beside_the_data_until_the_episodes_change(ds, tmp_path):
    path = ds.path / "stats.json"
    first = compute_stats(ds)
    saved = json.loads(path.read_text())
    assert saved["content_hash"] == ds.manifest.content_hash()
    saved["features"]["actions"]["mean"][0] = 123.0  # a marker: a cache hit returns it
    path.write_text(json.dumps(saved))
    assert compute_stats(ds).features["actions"].mean[0] == 123.0
    with DatasetWriter(ds.path, FEATS, 10.0, shard_episodes=2) as w:
        w.add(synthetic_episode(FEATS, 7, np.random.default_rng(99), key=99))
    with Dataset(ds.path) as grown:
        fresh = compute_stats(grown)
        assert fresh.content_hash != first.content_hash
        assert fresh.features["actions"].mean[0] != 123.0
        assert json.loads(path.read_text())["content_hash"] == grown.manifest.content_hash()
