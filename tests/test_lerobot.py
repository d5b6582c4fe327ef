"""The LeRobot v3.0 export, read back the way LeRobot reads it, with pyarrow and PyAV only (lerobot
itself needs Python >= 3.12): every frame, action, state and episode boundary against the source."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import av
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from r2s2r.cli import main
from r2s2r.data import Dataset, DatasetWriter, Provenance, standard_features, synthetic_episode
from r2s2r.data.features import canonical_features
from r2s2r.data.lerobot import TASK, LeRobotExport, export_lerobot
from r2s2r.data.object_state import OBJECT_STATE_FEATURE
from r2s2r.errors import R2S2RError
from r2s2r.video import VideoEncoding

FEATS = canonical_features(
    standard_features(state_dim=5, cameras=("head_left", "right_wrist"), image_size=(16, 24)) + (OBJECT_STATE_FEATURE,)
)
LENGTHS = (7, 12, 9)
# LeRobot v3.0's info.json, key for key (lerobot/datasets/feature_utils.py, create_empty_dataset_info)
INFO_KEYS = {
    "codebase_version",
    "robot_type",
    "total_episodes",
    "total_frames",
    "total_tasks",
    "chunks_size",
    "data_files_size_in_mb",
    "video_files_size_in_mb",
    "fps",
    "splits",
    "data_path",
    "video_path",
    "features",
}
# the per-frame columns LeRobot adds to every dataset (lerobot DEFAULT_FEATURES)
DEFAULT_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
VIDEO_INFO_KEYS = {"video.height", "video.width", "video.codec", "video.pix_fmt", "video.is_depth_map"}
VIDEO_INFO_KEYS |= {"video.fps", "video.channels", "has_audio"}
TOLERANCE_S = 1e-4  # LeRobotDataset's default tolerance_s between a queried and a decoded frame time
SOURCE = {
    "observation.state": "obs/proprio",
    "action": "actions",
    "states": "states",
    "object_state": "obs/object_state",
}


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("src") / "ds"
    info = {"configuration": {"world": "grounded", "behavior": "ungrounded"}}
    with DatasetWriter(path, FEATS, 10.0, info=info, shard_episodes=2) as w:
        for k, n in enumerate(LENGTHS):
            ep = synthetic_episode(FEATS, n, np.random.default_rng(k), key=k, kind=("nominal", "lighting")[k % 2])
            labels = ep.obs["object_state"].copy()
            labels[n // 2 :, :3] = np.nan  # unknown once held: exported as NaN, left out of the statistics
            w.add(dataclasses.replace(ep, obs={**ep.obs, "object_state": labels}))
    return path


def _data(root: Path, info: dict) -> pa.Table:
    """Every data file in path order, as LeRobot concatenates them."""
    return pa.concat_tables([pq.read_table(p) for p in sorted((root / "data").glob("*/*.parquet"))])


def _decoded(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with av.open(str(path)) as c:
        frames = list(c.decode(video=0))
    return np.array([f.time for f in frames]), np.stack([f.to_ndarray(format="rgb24") for f in frames])


def _read_back(root: Path, src: Path, pixel_mae: float) -> None:
    """Check the export at ``root`` against the dataset at ``src`` as LeRobot would read it: a frame's
    row is ``index``; its camera image is the video frame at ``from_timestamp + timestamp``."""
    info = json.loads((root / "meta/info.json").read_text())
    fps = info["fps"]
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    data = _data(root, info)
    np.testing.assert_array_equal(data["index"].to_numpy(), np.arange(sum(LENGTHS)))
    videos: dict[Path, tuple[np.ndarray, np.ndarray]] = {}
    errors = []
    with Dataset(src) as ds:
        assert len(episodes) == len(ds) == info["total_episodes"]
        start = 0
        for i, ep in enumerate(ds.episodes()):
            row, n = episodes[i], ep.num_samples
            assert (row["episode_index"], row["length"], row["tasks"]) == (i, n, [TASK])
            assert (row["dataset_from_index"], row["dataset_to_index"]) == (start, start + n)
            rows = data.slice(start, n)
            file = root / info["data_path"].format(
                chunk_index=row["data/chunk_index"], file_index=row["data/file_index"]
            )
            assert set(pq.read_table(file)["episode_index"].to_pylist()) >= {i}
            np.testing.assert_array_equal(rows["episode_index"].to_numpy(), i)
            np.testing.assert_array_equal(rows["frame_index"].to_numpy(), np.arange(n))
            np.testing.assert_array_equal(rows["task_index"].to_numpy(), 0)
            ts = rows["timestamp"].to_numpy()
            assert ts.dtype == np.float32
            np.testing.assert_array_equal(ts, (np.arange(n) / fps).astype(np.float32))
            for key, name in SOURCE.items():
                got = np.stack(rows[key].to_numpy(zero_copy_only=False))
                assert got.dtype == ep.arrays()[name].dtype, key
                np.testing.assert_array_equal(got, ep.arrays()[name], err_msg=key)  # NaN equals NaN here
            for cam in ("head_left", "right_wrist"):
                key = f"observation.images.{cam}"
                p = f"videos/{key}/"
                path = root / info["video_path"].format(
                    video_key=key, chunk_index=row[p + "chunk_index"], file_index=row[p + "file_index"]
                )
                times, frames = videos.setdefault(path, _decoded(path))
                t0, t1 = row[p + "from_timestamp"], row[p + "to_timestamp"]
                assert t1 - t0 == pytest.approx(n / fps)
                assert ((times >= t0 - TOLERANCE_S) & (times < t1 - TOLERANCE_S)).sum() == n
                for t in range(n):
                    k = int(np.argmin(np.abs(times - (t0 + float(ts[t])))))
                    assert abs(times[k] - (t0 + float(ts[t]))) < TOLERANCE_S
                    errors.append(np.abs(frames[k].astype(int) - ep.obs[cam][t]).mean())
                    if pixel_mae == 0:
                        np.testing.assert_array_equal(frames[k], ep.obs[cam][t], err_msg=f"episode {i} {cam} frame {t}")
            start += n
    assert np.mean(errors) <= pixel_mae


@pytest.mark.parametrize(
    "config",
    [LeRobotExport(), LeRobotExport(chunks_size=2, data_files_size_in_mb=1e-6, video_files_size_in_mb=1e-6)],
    ids=["one file each", "a file per episode, two per chunk"],
)
def test_every_frame_reads_back_exactly(src, tmp_path, config):
    report = export_lerobot(src, tmp_path / "out", config)
    assert (report.episodes, report.frames) == (3, sum(LENGTHS))
    _read_back(tmp_path / "out", src, pixel_mae=0)  # lossless video: every pixel equals the source
    files = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*.*"))
    head_left = [f for f in files if f.startswith("videos/observation.images.head_left/")]
    if config.chunks_size == 2:  # each episode started a new file; the third one a new chunk
        assert head_left == [f"videos/observation.images.head_left/{c}.mp4" for c in ("chunk-000/file-000",
                             "chunk-000/file-001", "chunk-001/file-000")]  # fmt: skip
        assert [f for f in files if f.startswith("data/")][-1] == "data/chunk-001/file-000.parquet"
    else:
        assert head_left == ["videos/observation.images.head_left/chunk-000/file-000.mp4"]
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_lossy_video_stays_within_its_stated_error(src, tmp_path):
    # H.264 yuv420p at CRF 23: measured mean errors of 4.0-4.2 levels on these tiny synthetic frames
    # (2.8-4.5 on 9745 lab-twin renders at 48 px); the image one frame off gives 6.3-6.9 and swapped
    # channels 37-39, so a mean error within 5.5 means the right frame, faithfully kept.
    export_lerobot(src, tmp_path / "out", LeRobotExport(video=VideoEncoding(crf=23, gop=2)))
    info = json.loads((tmp_path / "out/meta/info.json").read_text())
    assert info["features"]["observation.images.head_left"]["info"]["video.pix_fmt"] == "yuv420p"
    _read_back(tmp_path / "out", src, pixel_mae=5.5)


def test_info_json_has_every_v3_field(src, tmp_path):
    export_lerobot(src, tmp_path / "out")
    info = json.loads((tmp_path / "out/meta/info.json").read_text())
    assert set(info) == INFO_KEYS
    assert info["codebase_version"] == "v3.0" and isinstance(info["fps"], int) and info["fps"] == 10
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"]) == (3, sum(LENGTHS), 1)
    assert (info["chunks_size"], info["data_files_size_in_mb"], info["video_files_size_in_mb"]) == (1000, 100, 500)
    assert info["splits"] == {"train": "0:3"}
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    feats = info["features"]
    assert {k: feats[k] for k in DEFAULT_FEATURES} == DEFAULT_FEATURES
    assert all(set(f) >= {"dtype", "shape", "names"} for f in feats.values())
    for cam in ("head_left", "right_wrist"):
        f = feats[f"observation.images.{cam}"]
        assert (f["dtype"], f["shape"], f["names"]) == ("video", [16, 24, 3], ["height", "width", "channels"])
        assert set(f["info"]) == VIDEO_INFO_KEYS
        v = f["info"]
        assert (v["video.height"], v["video.width"], v["video.codec"], v["video.fps"]) == (16, 24, "h264", 10)
    assert feats["action"]["shape"] == [27] and len(feats["action"]["names"]) == 27
    assert feats["action"]["names"][0] == "right_joint1" and feats["observation.state"]["dtype"] == "float32"
    assert feats["states"]["dtype"] == "float64" and feats["object_state"]["shape"] == [14]
    # the data files hold exactly the non-video features
    columns = set(pq.read_schema(tmp_path / "out/data/chunk-000/file-000.parquet").names)
    assert columns == {k for k, f in feats.items() if f["dtype"] != "video"}
    tasks = pd.read_parquet(tmp_path / "out/meta/tasks.parquet")  # how LeRobot reads it
    assert tasks.index.name == "task" and tasks.loc[TASK, "task_index"] == 0


def test_stats_and_provenance_of_the_export(src, tmp_path):
    export_lerobot(src, tmp_path / "out")
    stats = json.loads((tmp_path / "out/meta/stats.json").read_text())
    info = json.loads((tmp_path / "out/meta/info.json").read_text())
    assert set(stats) == set(info["features"])
    with Dataset(src) as ds:
        eps = list(ds.episodes())
        provs = [ds.provenance(i) for i in range(len(ds))]
    actions = np.concatenate([e.actions for e in eps]).astype(np.float64)
    labels = np.concatenate([e.obs["object_state"] for e in eps]).astype(np.float64)
    a = stats["action"]
    np.testing.assert_allclose(a["mean"], actions.mean(0), rtol=1e-9)
    np.testing.assert_allclose(a["std"], actions.std(0), rtol=1e-9)
    np.testing.assert_array_equal(a["min"], actions.min(0))
    assert a["count"] == [sum(LENGTHS)] and set(a) >= {"q01", "q10", "q50", "q90", "q99"}
    np.testing.assert_allclose(stats["object_state"]["mean"], np.nanmean(labels, 0), rtol=1e-9)  # NaN left out
    pixels = np.concatenate([e.obs["head_left"] for e in eps]).reshape(-1, 3) / 255.0
    img = stats["observation.images.head_left"]
    assert np.asarray(img["mean"]).shape == (3, 1, 1)
    np.testing.assert_allclose(np.ravel(img["mean"]), pixels.mean(0), rtol=1e-9)
    np.testing.assert_allclose(np.ravel(img["q50"]), np.quantile(pixels, 0.5, axis=0), rtol=1e-9)
    assert stats["timestamp"]["max"] == [pytest.approx(1.1)] and stats["index"]["max"] == [sum(LENGTHS) - 1]
    rows = pq.read_table(tmp_path / "out/meta/episodes/chunk-000/file-000.parquet").to_pylist()
    for row, prov in zip(rows, provs, strict=True):
        assert (row["source"], row["world_grounding"], row["behavior_grounding"]) == ("sim", "grounded", "ungrounded")
        assert (row["seed"], row["behavior"], row["success"]) == (prov.seed, prov.behavior, prov.success)
        assert row["condition/kind"] == prov.condition["kind"]
        assert row["condition/belt_speed"] == prov.condition["belt_speed"]
        assert Provenance.from_json(json.loads(row["provenance"])) == prov
        assert len(row["stats/action/mean"]) == 27 and row["stats/action/count"] == [row["length"]]


def test_a_failed_export_leaves_nothing(src, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in src.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    last = sorted(broken.glob("*.h5"))[-1]  # holds the third episode: the export fails after two
    last.write_bytes(last.read_bytes()[:-10] + b"corrupted!")
    with pytest.raises(R2S2RError, match="sha256 differs"):
        export_lerobot(broken, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken"]  # no out, no temporary folder


def test_cli_export_and_its_bad_input(src, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["data", "export", str(src), "--format", "parquet", "--out", str(out)]) == 2
    assert "unknown export format 'parquet'; expected one of ['lerobot']" in capsys.readouterr().err
    assert main(["data", "export", str(tmp_path / "nope"), "--format", "lerobot", "--out", str(out)]) == 2
    assert "does not exist; expected an r2s2r dataset folder" in capsys.readouterr().err
    assert main(["data", "export", str(tmp_path), "--format", "lerobot", "--out", str(out)]) == 2
    assert "no manifest" in capsys.readouterr().err
    assert not out.exists()
    out.mkdir()  # an empty folder is fine
    assert main(["data", "export", str(src), "--format", "lerobot", "--out", str(out)]) == 0
    assert "3 episodes, 28 frames" in capsys.readouterr().err and (out / "meta/info.json").is_file()
    assert main(["data", "export", str(src), "--format", "lerobot", "--out", str(out)]) == 2
    assert "is not empty" in capsys.readouterr().err
    with pytest.raises(R2S2RError, match="odd size"):
        odd = canonical_features(standard_features(state_dim=2, cameras=("head_left",), image_size=(15, 16)))
        with DatasetWriter(tmp_path / "odd", odd, 10.0) as w:
            w.add(synthetic_episode(odd, 3, np.random.default_rng(0)))
        export_lerobot(tmp_path / "odd", tmp_path / "odd_out", LeRobotExport(video=VideoEncoding(crf=23)))
    assert not (tmp_path / "odd_out").exists()
