"""Dataset store: lossless round trip, the robomimic/MimicGen layout, determinism, resume and bad input."""

from __future__ import annotations

import dataclasses
import json

import h5py
import numpy as np
import pytest

from r2s2r.data import (
    Dataset,
    DatasetWriter,
    Episode,
    Feature,
    Provenance,
    check_dataset,
    standard_features,
    synthetic_episode,
)
from r2s2r.errors import ConfigError, R2S2RError

FEATS = standard_features(state_dim=11, image_size=(32, 32))


def make(k: int, features=FEATS, **kw) -> Episode:
    return synthetic_episode(features, 10 + (7 * k) % 31, np.random.default_rng(k), key=k, **kw)


def write(path, episodes, shard_episodes=3, info=None) -> None:
    with DatasetWriter(
        path, FEATS, 10.0, info=info or {"mix": {"nominal": 0.5, "lighting": 0.5}}, shard_episodes=shard_episodes
    ) as w:
        for ep in episodes:
            w.add(ep)


def assert_same_tree(a, b) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        if isinstance(a[k], dict):
            assert_same_tree(a[k], b[k])
        else:
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


def assert_same_episode(got: Episode, want: Episode) -> None:
    assert got.provenance == want.provenance
    g, w = got.arrays(), want.arrays()
    assert sorted(g) == sorted(w)
    for name in w:
        assert g[name].dtype == w[name].dtype, name
        assert np.array_equal(g[name], w[name]), name
    assert_same_tree(dict(got.datagen_info), dict(want.datagen_info))
    assert_same_tree(dict(got.extras), dict(want.extras))


def test_round_trip_is_lossless_across_shards(tmp_path):
    real = make(8, source="real", datagen=False)
    stereo = np.random.default_rng(8).integers(0, 256, (2, 48, 64, 3), dtype=np.uint8)  # per-episode arrays
    real = dataclasses.replace(real, extras={"head_left_full": stereo[0], "head_right_full": stereo[1]})
    episodes = [make(k) for k in range(8)] + [real]
    write(tmp_path / "ds", episodes, shard_episodes=3)
    with Dataset(tmp_path / "ds") as ds:
        assert len(ds) == 9
        assert ds.num_frames == sum(e.num_samples for e in episodes)
        assert len(ds.manifest.shards) == 3  # 0-2, 3-5, 6-8
        assert {e.shard for e in ds.manifest.episodes} == set(ds.manifest.shards)
        assert ds.info == {"mix": {"nominal": 0.5, "lighting": 0.5}}
        assert ds.control_rate_hz == 10.0
        for i, got in enumerate(ds.episodes()):
            assert_same_episode(got, episodes[i])
            assert ds.provenance(i) == episodes[i].provenance
        assert ds.episode(8).datagen_info == {} and ds.episode(0).extras == {}
        assert ds.episode(8).extras["head_right_full"].shape == (48, 64, 3)
        assert ds.features["obs/proprio"] == Feature("obs/proprio", (27,), "float32", "rad")
    check_dataset(tmp_path / "ds")


def test_staged_episodes_are_readable_before_close(tmp_path):
    w = DatasetWriter(tmp_path / "ds", FEATS, 10.0, shard_episodes=4)
    episodes = [make(k) for k in range(6)]
    for ep in episodes:
        w.add(ep)
    with Dataset(tmp_path / "ds") as ds:  # 0-3 sealed, 4-5 still staged
        assert len(ds) == 6
        assert sorted(ds.manifest.shards) == ["shard_000000.h5", "stage_000004.h5", "stage_000005.h5"]
        assert_same_episode(ds.episode(5), episodes[5])
    check_dataset(tmp_path / "ds")
    w.close()
    assert sorted(Dataset(tmp_path / "ds").manifest.shards) == ["shard_000000.h5", "shard_000004.h5"]
    assert not list((tmp_path / "ds").glob("stage_*"))


def test_shard_layout_is_what_mimicgen_and_robomimic_read(tmp_path):
    episodes = [make(k) for k in range(5)]
    write(tmp_path / "ds", episodes, shard_episodes=3)
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["schema_version"] == 1 and manifest["control_rate_hz"] == 10.0
    assert {f["name"]: f["unit"] for f in manifest["features"]}["actions"] == "rad"
    entry = manifest["episodes"][4]
    assert entry["group"] == "data/demo_4" and entry["shard"] == "shard_000003.h5"
    assert entry["num_samples"] == episodes[4].num_samples and entry["provenance"]["key"] == 4
    with h5py.File(tmp_path / "ds" / "shard_000003.h5", "r") as f:
        assert sorted(f["data"]) == ["demo_3", "demo_4"]  # global indices: unique across shards
        assert f["data"].attrs["total"] == episodes[3].num_samples + episodes[4].num_samples
        g = f["data/demo_4"]
        t = episodes[4].num_samples
        assert g.attrs["num_samples"] == t
        assert json.loads(g.attrs["provenance"]) == episodes[4].provenance.to_json()
        assert g["actions"].shape == (t, 27) and g["actions"].dtype == np.float32
        assert g["states"].shape == (t, 11) and g["states"].dtype == np.float64
        assert g["obs/proprio"].shape == (t, 27)
        for cam in ("head_left", "right_wrist", "left_wrist"):
            ds = g[f"obs/{cam}"]
            assert ds.shape == (t, 32, 32, 3) and ds.dtype == np.uint8
            assert ds.chunks == (1, 32, 32, 3) and ds.compression == "gzip" and ds.compression_opts == 1
        assert g["datagen_info/eef_pose"].shape == (t, 4, 4)
        assert g["datagen_info/object_poses/object"].shape == (t, 4, 4)
        assert g["datagen_info/subtask_term_signals/grasp"].shape == (t,)


def _robomimic_env_metadata(dataset_path) -> dict:
    """As robomimic.utils.file_utils.get_env_metadata_from_dataset reads it."""
    with h5py.File(dataset_path, "r") as f:
        return json.loads(f["data"].attrs["env_args"])


def test_every_file_carries_robomimic_env_args(tmp_path):
    from r2s2r.data.robomimic import ENV_NAME, ENV_TYPE

    info = {"kind": "simulated episodes", "seed": 3}
    with DatasetWriter(tmp_path / "ds", FEATS, 10.0, info=info, shard_episodes=2) as w:
        for k in range(3):
            w.add(make(k))
        staged = tmp_path / "ds" / "stage_000002.h5"  # not yet sealed: a staging file carries it too
        assert _robomimic_env_metadata(staged)["type"] == ENV_TYPE
    files = sorted((tmp_path / "ds").glob("shard_*.h5"))
    assert [p.name for p in files] == ["shard_000000.h5", "shard_000002.h5"]
    for path in files:
        meta = _robomimic_env_metadata(path)
        assert set(meta) == {"env_name", "type", "env_kwargs"}  # the three keys robomimic reads
        assert meta["env_name"] == ENV_NAME and meta["type"] == ENV_TYPE and meta["type"] not in (1, 2, 3)
        kw = meta["env_kwargs"]
        assert kw["control_rate_hz"] == 10.0 and kw["dataset"] == info and kw["action_dim"] == 27
        assert sorted(kw["cameras"]) == ["head_left", "left_wrist", "right_wrist"] and kw["image_size"] == [32, 32]


def test_same_episodes_give_identical_bytes(tmp_path):
    episodes = [make(k) for k in range(7)]
    write(tmp_path / "a", episodes)
    write(tmp_path / "b", episodes)
    files = sorted(p.name for p in (tmp_path / "a").iterdir() if not p.name.startswith("."))
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir() if not p.name.startswith("."))
    assert "manifest.json" in files and len(files) == 4
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert "time" not in (tmp_path / "a" / "manifest.json").read_text()


def test_reopening_appends_and_keeps_keys(tmp_path):
    write(tmp_path / "ds", [make(k) for k in range(4)])
    with DatasetWriter(tmp_path / "ds", FEATS, 10.0, shard_episodes=3) as w:
        assert w.keys() == {0, 1, 2, 3} and len(w) == 4
        assert w.add(make(9)) == 4
        with pytest.raises(R2S2RError, match="provenance key 2 is already stored"):
            w.add(make(2))
    with Dataset(tmp_path / "ds") as ds:
        assert [ds.provenance(i).key for i in range(len(ds))] == [0, 1, 2, 3, 9]


def test_reopening_with_other_features_or_rate_names_the_mismatch(tmp_path):
    write(tmp_path / "ds", [make(0)])
    other = standard_features(state_dim=11, image_size=(48, 48))
    with pytest.raises(R2S2RError, match=r"features differ.*obs/head_left: stored \(32, 32, 3\).*given \(48, 48, 3\)"):
        DatasetWriter(tmp_path / "ds", other, 10.0)
    fewer = tuple(f for f in FEATS if f.name != "obs/left_wrist")
    with pytest.raises(R2S2RError, match=r"stored only: \['obs/left_wrist'\]"):
        DatasetWriter(tmp_path / "ds", fewer, 10.0)
    with pytest.raises(R2S2RError, match="control_rate_hz is 10.0, given 20"):
        DatasetWriter(tmp_path / "ds", FEATS, 20)
    with pytest.raises(R2S2RError, match="info differs"):
        DatasetWriter(tmp_path / "ds", FEATS, 10.0, info={"mix": "other"})


def test_a_second_writer_on_the_same_folder_is_refused(tmp_path):
    with DatasetWriter(tmp_path / "ds", FEATS, 10.0):
        with pytest.raises(R2S2RError, match="another DatasetWriter"):
            DatasetWriter(tmp_path / "ds", FEATS, 10.0)
    DatasetWriter(tmp_path / "ds", FEATS, 10.0).close()  # released on close


def _with(ep: Episode, **changes) -> Episode:
    obs = dict(ep.obs) | changes.pop("obs", {})
    return Episode(
        obs, changes.get("actions", ep.actions), changes.get("states", ep.states), ep.provenance, ep.datagen_info
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda e: _with(e, obs={"head_left": e.obs["head_left"][:, :16]}),
            r"obs/head_left: expected shape \(T, 32, 32, 3\)",
        ),
        (lambda e: _with(e, actions=e.actions.astype(np.float64)), "actions: expected dtype float32, got float64"),
        (lambda e: _with(e, actions=e.actions[:-1]), r"obs/head_left: length \d+ differs from actions length \d+"),
        (lambda e: _with(e, obs={"proprio": e.obs["proprio"][:-2]}), "obs/proprio: length .* differs"),
        (lambda e: _with(e, states=e.states.astype(np.float32)), "states: expected dtype float64"),
        (
            lambda e: Episode({k: v for k, v in e.obs.items() if k != "left_wrist"}, e.actions, e.states, e.provenance),
            r"missing \['left_wrist'\]",
        ),
        (lambda e: _with(e, obs={"extra": e.obs["proprio"]}), r"unexpected \['extra'\]"),
        (
            lambda e: _with(
                e, actions=np.where(np.arange(len(e.actions))[:, None] == 3, np.nan, e.actions).astype(np.float32)
            ),
            "actions: non-finite value at frame 3",
        ),
        (
            lambda e: Episode(e.obs, e.actions, e.states, e.provenance, {"eef_pose": np.zeros((2, 4, 4))}),
            "datagen_info/eef_pose: expected a per-frame array",
        ),
        (
            lambda e: Episode(e.obs, e.actions, e.states, e.provenance, extras={"bad key": np.zeros(3)}),
            "extras: key 'bad key'",
        ),
        (
            lambda e: Episode(e.obs, e.actions, e.states, e.provenance, extras={"note": "text"}),
            "extras/note: expected a numeric/bool numpy array",
        ),
    ],
)
def test_bad_episodes_are_rejected_and_leave_the_dataset_intact(tmp_path, change, message):
    with DatasetWriter(tmp_path / "ds", FEATS, 10.0, shard_episodes=2) as w:
        w.add(make(0))
        with pytest.raises(ConfigError, match=message):
            w.add(change(make(1)))
        assert len(w) == 1 and w.keys() == {0}
    assert len(Dataset(tmp_path / "ds")) == 1
    check_dataset(tmp_path / "ds")


def test_bad_features_and_provenance_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="feature name 'image'"):
        Feature("image", (3,), "float32")
    with pytest.raises(ConfigError, match="dtype 'float16'"):
        Feature("actions", (3,), "float16")
    with pytest.raises(ConfigError, match=r"missing required feature\(s\) \['states'\]"):
        DatasetWriter(tmp_path / "ds", [Feature("actions", (3,), "float32")], 10.0)
    with pytest.raises(ConfigError, match="control_rate_hz: expected a positive number"):
        DatasetWriter(tmp_path / "ds", FEATS, 0.0)
    assert not (tmp_path / "ds").exists()  # bad input creates nothing
    with pytest.raises(R2S2RError, match="Did you mean 'sim'"):
        Provenance(source="simm", world_hash="w", behavior="b", seed=0)
    with pytest.raises(ConfigError, match="a successful episode has no failure"):
        Provenance(source="sim", world_hash="w", behavior="b", seed=0, failure="dropped")
    with pytest.raises(ConfigError, match="provenance.condition: expected JSON-serialisable"):
        Provenance(source="sim", world_hash="w", behavior="b", seed=0, condition={"x": object()})
    p = Provenance(source="sim", world_hash="w", behavior="b", seed=np.int64(3), condition={"v": (1, np.float32(0.5))})
    assert p.seed == 3 and type(p.seed) is int and p.condition == {"v": [1, 0.5]}
    assert Provenance.from_json(json.loads(p.dumps())) == p
