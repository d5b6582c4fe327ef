"""The dataset store every stage reads and writes: episodes in HDF5 shards (robomimic/MimicGen layout)
plus ``manifest.json``; crash-safe resumable writing, reading, checking, statistics, window sampling and
export to LeRobot's format."""

from r2s2r.data.check import CheckReport, ShardReport, check_dataset
from r2s2r.data.dataset import Dataset
from r2s2r.data.episode import Episode, check_episode
from r2s2r.data.features import DEFAULT_CAMERAS, Feature, standard_features
from r2s2r.data.lerobot import ExportReport, LeRobotExport, export_lerobot
from r2s2r.data.manifest import MANIFEST, SCHEMA_VERSION, EpisodeEntry, Manifest
from r2s2r.data.provenance import SOURCES, Provenance
from r2s2r.data.sampler import DEFAULT_OBS_KEYS, WindowSampler
from r2s2r.data.stats import STATS, FeatureStats, Stats, compute_stats, feature_stats, pooled_stats
from r2s2r.data.synthetic import synthetic_episode
from r2s2r.data.writer import DatasetWriter

__all__ = [
    "DEFAULT_CAMERAS",
    "DEFAULT_OBS_KEYS",
    "MANIFEST",
    "SCHEMA_VERSION",
    "SOURCES",
    "STATS",
    "CheckReport",
    "Dataset",
    "DatasetWriter",
    "Episode",
    "EpisodeEntry",
    "ExportReport",
    "Feature",
    "FeatureStats",
    "LeRobotExport",
    "Manifest",
    "Provenance",
    "ShardReport",
    "Stats",
    "WindowSampler",
    "check_dataset",
    "check_episode",
    "compute_stats",
    "export_lerobot",
    "feature_stats",
    "pooled_stats",
    "standard_features",
    "synthetic_episode",
]
