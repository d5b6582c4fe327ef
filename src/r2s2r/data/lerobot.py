"""``export_lerobot``: an r2s2r dataset folder as a LeRobot dataset (format v3.0), with pyarrow and PyAV.

Layout (LeRobot's ``info.json`` path templates; a file holds whole episodes, and a new file starts
when the next episode would take it past ``data_files_size_in_mb``/``video_files_size_in_mb``, a
new ``chunk-NNN`` folder every ``chunks_size`` files)::

    meta/info.json                  codebase_version "v3.0", fps, totals, path templates, features
    meta/stats.json                 per feature: min max mean std count q01 q10 q50 q90 q99
    meta/tasks.parquet              the task (index "task", column task_index), as pandas writes it
    meta/episodes/chunk-000/file-000.parquet   one row per episode: length, tasks, where its frames
                                    and videos are, its stats, and its r2s2r provenance
    data/chunk-NNN/file-NNN.parquet one row per frame: the numeric features, timestamp,
                                    frame_index, episode_index, index, task_index
    videos/observation.images.<camera>/chunk-NNN/file-NNN.mp4   the episodes' frames, one after
                                    another; episode e spans [from_timestamp, to_timestamp)

Features: ``obs/proprio`` -> ``observation.state``, ``actions`` -> ``action`` (both named by joint),
``obs/<camera>`` -> ``observation.images.<camera>`` (dtype "video"); ``states`` and any other
``obs/<key>`` keep their names (``states``, ``<key>``) and no ``observation.`` prefix, because LeRobot
feeds every ``observation.*`` key to a policy, and these (a simulator's physics state, object-state
labels) are not policy inputs. MimicGen ``datagen_info`` and per-episode ``extras`` are not exported.

Videos are lossless by default (H.264 RGB at QP 0: every decoded pixel equals the source; a key
frame every 2 frames, like LeRobot's encoder, for random access); ``crf`` selects lossy yuv420p.

Provenance columns of ``meta/episodes``: ``source`` (real | sim), ``world_grounding`` and
``behavior_grounding`` (grounded | ungrounded, from a generated dataset's configuration; null for
real demonstrations), ``world_hash``, ``behavior``, ``source_demo``, ``seed``, ``success``,
``failure``, ``attempts``, ``condition/<field>`` per condition field, and ``provenance``: the
episode's whole r2s2r provenance as JSON. The export is built in a hidden folder beside ``out`` and
renamed into place at the end: a failed or killed export leaves no ``out`` that looks complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r import atomic
from r2s2r.data.dataset import Dataset
from r2s2r.data.features import Feature
from r2s2r.data.lerobot_stats import Summary, aggregate, image_summary, vector_summary
from r2s2r.data.provenance import Provenance
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.files import input_dir
from r2s2r.video import VideoEncoding, VideoWriter

CODEBASE_VERSION = "v3.0"
TASK = "pick the object off the belt and sort it into the bin of its colour"
ROBOT_TYPE = "flexiv_rizon4s_wuji_hand"
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = f"data/{CHUNK_FILE}.parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = f"meta/episodes/{CHUNK_FILE}.parquet"
# The per-frame columns every LeRobot dataset has, after its own features.
DEFAULT_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
JOINTS = 27  # observation.state and action: right arm (7) + right hand (20) joints


@dataclass(frozen=True)
class LeRobotExport:
    """How to export: the task string, the robot type, the video encoding (default lossless), and
    LeRobot's file limits (its defaults: 1000 files per chunk, 100 MB data and 500 MB video files)."""

    task: str = TASK
    robot_type: str = ROBOT_TYPE
    video: VideoEncoding = field(default_factory=lambda: VideoEncoding(crf=None, gop=2))
    chunks_size: int = 1000
    data_files_size_in_mb: float = 100
    video_files_size_in_mb: float = 500

    def __post_init__(self) -> None:
        if not isinstance(self.task, str) or not self.task.strip():
            raise ConfigError(f"task: expected a non-empty description, got {self.task!r}")
        if isinstance(self.chunks_size, bool) or not isinstance(self.chunks_size, int) or self.chunks_size < 1:
            raise ConfigError(f"chunks_size: expected a positive integer, got {self.chunks_size!r}")
        for name in ("data_files_size_in_mb", "video_files_size_in_mb"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
                raise ConfigError(f"{name}: expected a positive number, got {v!r}")


@dataclass(frozen=True)
class ExportReport:
    out: Path
    episodes: int
    frames: int
    size_bytes: int  # of every file written


def lerobot_key(feature: Feature) -> str:
    """The LeRobot name of an r2s2r feature (see the module docstring)."""
    if feature.name == "actions":
        return "action"
    if feature.name == "obs/proprio":
        return "observation.state"
    if feature.is_image:
        return f"observation.images.{feature.obs_key}"
    return feature.obs_key or feature.name


def _joint_names() -> list[str]:
    from r2s2r.world.scene import arm_joint_names, hand_joint_names

    return arm_joint_names("right") + hand_joint_names("right")


def _features(features: tuple[Feature, ...], video: VideoEncoding) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in features:
        key = lerobot_key(f)
        if key in DEFAULT_FEATURES or key in out:
            raise R2S2RError(f"feature {f.name}: its LeRobot name {key!r} is taken; rename the feature")
        if f.is_image:
            if f.shape[2] != 3:
                raise R2S2RError(f"feature {f.name}: shape {f.shape}; LeRobot videos are RGB (H, W, 3)")
            if not video.lossless and (f.shape[0] % 2 or f.shape[1] % 2):
                raise R2S2RError(f"feature {f.name}: odd size {f.shape[:2]} cannot be yuv420p; export it lossless")
            out[key] = {"dtype": "video", "shape": list(f.shape), "names": ["height", "width", "channels"]}
        elif len(f.shape) != 1:
            raise R2S2RError(f"feature {f.name}: shape {f.shape}; expected an image or a vector (d,)")
        else:
            names = _joint_names() if key in ("action", "observation.state") and f.shape == (JOINTS,) else None
            out[key] = {"dtype": f.dtype, "shape": list(f.shape), "names": names}
    return out


def _next_file(chunk: int, file: int, chunks_size: int) -> tuple[int, int]:
    return (chunk + 1, 0) if file == chunks_size - 1 else (chunk, file + 1)


def _full(size: int, frames_in_file: int, n: int, limit_mb: float) -> bool:
    """LeRobot's rule: a file that holds episodes takes no more once the next one (at its average
    size per frame) would reach the limit."""
    return frames_in_file > 0 and size + size / frames_in_file * n >= limit_mb * 2**20


class _DataFiles:
    """data/chunk-NNN/file-NNN.parquet, one row group per episode."""

    def __init__(self, root: Path, config: LeRobotExport) -> None:
        self.root, self.config = root, config
        self.chunk = self.file = 0
        self.writer = None
        self.size = self.frames = 0  # uncompressed bytes and frames in the current file

    def add(self, table) -> dict[str, int]:
        import pyarrow.parquet as pq

        if _full(self.size, self.frames, table.num_rows, self.config.data_files_size_in_mb):
            self.close()
            self.chunk, self.file = _next_file(self.chunk, self.file, self.config.chunks_size)
        if self.writer is None:
            path = self.root / DATA_PATH.format(chunk_index=self.chunk, file_index=self.file)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(path, table.schema, compression="snappy", use_dictionary=True)
            self.size = self.frames = 0
        self.writer.write_table(table)
        self.size += table.nbytes
        self.frames += table.num_rows
        return {"data/chunk_index": self.chunk, "data/file_index": self.file}

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class _VideoFiles:
    """videos/<key>/chunk-NNN/file-NNN.mp4 of one camera, episodes one after another."""

    def __init__(self, root: Path, key: str, fps: int, config: LeRobotExport) -> None:
        self.root, self.key, self.fps, self.config = root, key, fps, config
        self.chunk = self.file = 0
        self.writer: VideoWriter | None = None

    def add(self, frames: np.ndarray) -> dict[str, Any]:
        w = self.writer
        if w is not None and _full(w.encoded_bytes, w.frames, len(frames), self.config.video_files_size_in_mb):
            self.close()
            self.chunk, self.file = _next_file(self.chunk, self.file, self.config.chunks_size)
        if self.writer is None:
            path = self.root / VIDEO_PATH.format(video_key=self.key, chunk_index=self.chunk, file_index=self.file)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = VideoWriter(path, self.fps, self.config.video)
        start = self.writer.frames
        for frame in frames:
            self.writer.write(frame)
        p = f"videos/{self.key}/"
        return {
            p + "chunk_index": self.chunk,
            p + "file_index": self.file,
            p + "from_timestamp": start / self.fps,
            p + "to_timestamp": self.writer.frames / self.fps,
        }

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def _video_info(path: Path) -> dict[str, Any]:
    """The ``info`` of a video feature, read from its first file as LeRobot does."""
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return {
            "video.height": s.height,
            "video.width": s.width,
            "video.codec": s.codec_context.name,
            "video.pix_fmt": s.pix_fmt,
            "video.is_depth_map": False,
            "video.fps": int(s.base_rate),
            "video.channels": 3,
            "has_audio": False,
        }


def _provenance_row(prov: Provenance, configuration: dict[str, Any]) -> dict[str, Any]:
    row = {
        "source": prov.source,
        "world_grounding": configuration.get("world"),
        "behavior_grounding": configuration.get("behavior"),
        "world_hash": prov.world_hash,
        "behavior": prov.behavior,
        "source_demo": prov.source_demo,
        "seed": prov.seed,
        "success": prov.success,
        "failure": prov.failure,
        "attempts": prov.attempts,
        "provenance": prov.dumps(),
    }
    row.update({f"condition/{k}": v for k, v in sorted(prov.condition.items())})
    return row


def _table(rows: list[dict[str, Any]]):
    """Episode rows as a table: a column takes the type of its values (null where a row lacks it);
    a column whose values have no common type (rare: a condition field that changed type) is JSON."""
    import pyarrow as pa

    names = list(dict.fromkeys(k for row in rows for k in row))
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            columns[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            columns[name] = pa.array([None if v is None else json.dumps(v, sort_keys=True) for v in values])
    return pa.table(columns)


def _tasks_table(task: str):
    """``meta/tasks.parquet`` as pandas writes a frame indexed by ``task`` (LeRobot reads it with pandas)."""
    import pyarrow as pa

    columns = [
        {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64"},
        {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object"},
    ]
    pandas = {"index_columns": ["task"], "column_indexes": [], "columns": [c | {"metadata": None} for c in columns]}
    table = pa.table({"task_index": pa.array([0], pa.int64()), "task": pa.array([task], pa.string())})
    return table.replace_schema_metadata({"pandas": json.dumps(pandas)})


def _frame_columns(arrays: dict[str, np.ndarray], n: int, fps: int, episode: int, start: int) -> dict[str, np.ndarray]:
    frame = np.arange(n, dtype=np.int64)
    return arrays | {
        "timestamp": (frame / fps).astype(np.float32),
        "frame_index": frame,
        "episode_index": np.full(n, episode, dtype=np.int64),
        "index": start + frame,
        "task_index": np.zeros(n, dtype=np.int64),
    }


def _arrow_columns(columns: dict[str, np.ndarray]):
    import pyarrow as pa

    out = {}
    for key, x in columns.items():
        if x.ndim == 1:
            out[key] = pa.array(x)
        else:
            out[key] = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), x.shape[1])
    return pa.table(out)


def _fps(rate: float, path: Path) -> int:
    fps = round(rate)
    if fps < 1 or abs(rate - fps) > 1e-6:
        raise R2S2RError(f"{path}: control rate {rate:g} Hz; a LeRobot dataset needs a whole number of frames/s")
    return fps


def export_lerobot(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    config: LeRobotExport = LeRobotExport(),
    on_episode: Callable[[int, int], None] | None = None,
    src_option: str | None = None,
    out_option: str | None = None,
) -> ExportReport:
    """Write the r2s2r dataset at ``src`` as a LeRobot v3.0 dataset at ``out`` (new, or an empty
    folder); ``on_episode(done, total)`` is called after each episode."""
    import pyarrow.parquet as pq

    src = input_dir(src, "an r2s2r dataset folder", src_option)
    with Dataset(src) as ds, atomic.folder(out, "a LeRobot dataset folder", out_option) as root:
        if len(ds) == 0:
            raise R2S2RError(f"{src}: holds no episode; there is nothing to export")
        fps = _fps(ds.control_rate_hz, src)
        features = _features(ds.manifest.features, config.video)
        keys = {f.name: lerobot_key(f) for f in ds.manifest.features}
        images = [f.name for f in ds.manifest.features if f.is_image]
        configuration = ds.info.get("configuration") if isinstance(ds.info.get("configuration"), dict) else {}
        data = _DataFiles(root, config)
        videos = {name: _VideoFiles(root, keys[name], fps, config) for name in images}
        rows: list[dict[str, Any]] = []
        summaries: dict[str, list[Summary]] = {}
        total = 0
        try:
            for i, ep in enumerate(ds.episodes()):
                n = ep.num_samples
                arrays = ep.arrays()
                columns = _frame_columns({keys[k]: v for k, v in arrays.items() if k not in images}, n, fps, i, total)
                stats = {k: vector_summary(v) for k, v in columns.items()}
                row = {"episode_index": i, "tasks": [config.task], "length": n}
                row |= data.add(_arrow_columns(columns))
                row |= {"dataset_from_index": total, "dataset_to_index": total + n}
                for name in images:
                    row |= videos[name].add(arrays[name])
                    stats[keys[name]] = image_summary(arrays[name])
                row |= {"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0}
                for key, s in stats.items():
                    row |= {f"stats/{key}/{k}": v for k, v in s.to_json().items()}
                    summaries.setdefault(key, []).append(s)
                rows.append(row | _provenance_row(ep.provenance, configuration))
                total += n
                if on_episode is not None:
                    on_episode(i + 1, len(ds))
        finally:
            data.close()
            for v in videos.values():
                v.close()
        for name in images:
            first = root / VIDEO_PATH.format(video_key=keys[name], chunk_index=0, file_index=0)
            features[keys[name]]["info"] = _video_info(first)
        info = {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": config.robot_type,
            "total_episodes": len(ds),
            "total_frames": total,
            "total_tasks": 1,
            "chunks_size": config.chunks_size,
            "data_files_size_in_mb": config.data_files_size_in_mb,
            "video_files_size_in_mb": config.video_files_size_in_mb,
            "fps": fps,
            "splits": {"train": f"0:{len(ds)}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if images else None,
            "features": features | DEFAULT_FEATURES,
        }
        episodes = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
        episodes.parent.mkdir(parents=True)
        pq.write_table(_table(rows), episodes, compression="snappy")
        pq.write_table(_tasks_table(config.task), root / "meta" / "tasks.parquet")
        stats_json = {key: aggregate(parts).to_json() for key, parts in summaries.items()}
        atomic.write_text(root / "meta" / "stats.json", json.dumps(stats_json, indent=4) + "\n")
        atomic.write_text(root / "meta" / "info.json", json.dumps(info, indent=4) + "\n")
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return ExportReport(Path(out), len(rows), total, size)
