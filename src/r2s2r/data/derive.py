"""``derive_dataset``: a dataset made episode by episode from another one, resumable.

Labelling demonstrations (``r2s2r.behavior.object_labels``) and the privileged-state diagnostic
(``r2s2r.evaluate.privileged``) both copy a dataset through a per-episode function; this is that copy:
episodes already in the output (by provenance key) are skipped, so a killed run resumes without loss
or duplicates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from r2s2r.data.dataset import Dataset
from r2s2r.data.episode import Episode
from r2s2r.data.features import Feature, canonical_features
from r2s2r.data.writer import DatasetWriter


def derive_dataset(
    src_path: Path,
    out: Path,
    features: Callable[[Dataset], Iterable[Feature]],
    make: Callable[[int, Episode], Episode],
    info: dict[str, Any],
    on_episode: Callable[[int, int], None] | None = None,
) -> Path:
    """Write ``make(i, episode i of src_path)`` for every episode into ``out`` (features: ``features``
    of the source dataset; ``info`` in the manifest); ``on_episode(done, total)`` after each one."""
    with Dataset(src_path) as src:
        feats = canonical_features(features(src))
        with DatasetWriter(out, feats, control_rate_hz=src.control_rate_hz, info=info) as writer:
            done = writer.keys()
            for i in range(len(src)):
                ep = src.episode(i)
                if ep.provenance.key not in done:
                    writer.add(make(i, ep))
                if on_episode is not None:
                    on_episode(i + 1, len(src))
    return out
