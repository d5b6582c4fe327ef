"""check_dataset and the reader name the broken file: corrupt or missing shards, bad manifests."""

from __future__ import annotations

import json

import numpy as np
import pytest

from r2s2r.data import Dataset, DatasetWriter, check_dataset, standard_features, synthetic_episode
from r2s2r.errors import R2S2RError

FEATS = standard_features(state_dim=5, image_size=(24, 24))


@pytest.fixture
def ds_path(tmp_path):
    path = tmp_path / "ds"
    with DatasetWriter(path, FEATS, 10.0, shard_episodes=3) as w:
        for k in range(7):
            w.add(synthetic_episode(FEATS, 12 + k, np.random.default_rng(k), key=k))
    return path


def test_a_clean_dataset_checks_ok(ds_path):
    report = check_dataset(ds_path)
    assert report.ok and report.problems == () and report.orphans == ()
    assert report.num_episodes == 7 and report.num_frames == sum(12 + k for k in range(7))
    assert [s.name for s in report.shards] == ["shard_000000.h5", "shard_000003.h5", "shard_000006.h5"]
    assert [s.episodes for s in report.shards] == [(0, 1, 2), (3, 4, 5), (6,)]
    assert all(s.num_bytes > 0 for s in report.shards)


def test_flipped_bytes_in_a_shard_are_caught_and_named(ds_path):
    shard = ds_path / "shard_000003.h5"
    data = bytearray(shard.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 8] = bytes(b ^ 0xFF for b in data[mid : mid + 8])
    shard.write_bytes(bytes(data))
    with pytest.raises(R2S2RError, match=r"shard_000003\.h5: sha256 differs.*\[episodes 3-5\]"):
        check_dataset(ds_path)
    report = check_dataset(ds_path, raise_on_error=False)
    assert [s.name for s in report.shards if s.problem] == ["shard_000003.h5"]


def test_a_missing_shard_is_caught_by_check_reader_and_writer(ds_path):
    (ds_path / "shard_000000.h5").unlink()
    with pytest.raises(R2S2RError, match=r"shard_000000\.h5: missing \[episodes 0-2\]"):
        check_dataset(ds_path)
    with Dataset(ds_path) as ds:
        assert ds.episode(4).num_samples == 16  # other shards still read
        with pytest.raises(R2S2RError, match=r"shard_000000\.h5: cannot open shard holding episodes 0-2"):
            ds.episode(1)
    with pytest.raises(R2S2RError, match=r"shard_000000\.h5: missing; it holds episodes 0-2"):
        DatasetWriter(ds_path, FEATS, 10.0)


def test_a_shard_inconsistent_with_the_manifest_is_caught(ds_path):
    manifest = json.loads((ds_path / "manifest.json").read_text())
    manifest["episodes"][6]["num_samples"] += 1
    (ds_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(R2S2RError, match=r"shard_000006\.h5: data attr total 18; expected 19 \[episodes 6\]"):
        check_dataset(ds_path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m | {"schema_version": 99}, r"manifest\.json: schema_version 99; expected 1"),
        (lambda m: {k: v for k, v in m.items() if k != "shards"}, r"manifest\.json: keys .*; expected"),
        (lambda m: m | {"episodes": m["episodes"][1:]}, r"episodes\[0\]: expected index 0"),
        (lambda m: m | {"control_rate_hz": -1}, "control_rate_hz: expected a positive number"),
        (lambda m: m | {"features": m["features"][:-1]}, r"missing required feature\(s\) \['states'\]"),
    ],
)
def test_bad_manifests_name_the_file_and_the_expectation(ds_path, edit, message):
    path = ds_path / "manifest.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    with pytest.raises(R2S2RError, match=message) as info:
        Dataset(ds_path)
    assert str(path) in str(info.value)


def test_missing_or_unparsable_manifest(tmp_path, ds_path):
    with pytest.raises(R2S2RError, match=r"no manifest; expected a dataset folder"):
        Dataset(tmp_path / "nothing")
    (ds_path / "manifest.json").write_text("{not json")
    with pytest.raises(R2S2RError, match=r"manifest\.json: is not valid JSON"):
        check_dataset(ds_path)


def test_a_writer_refuses_a_folder_with_shards_but_no_manifest(ds_path):
    (ds_path / "manifest.json").unlink()
    with pytest.raises(R2S2RError, match="holds shard files .* but no manifest.json"):
        DatasetWriter(ds_path, FEATS, 10.0)
    assert (ds_path / "shard_000000.h5").exists()  # nothing deleted
