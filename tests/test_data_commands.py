"""The ``data check`` and ``data show`` commands print what they found and write the frame grid."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.image import imread
from rich.console import Console

from r2s2r.data import DatasetWriter, standard_features, synthetic_episode
from r2s2r.data.commands import data_check, data_show
from r2s2r.errors import R2S2RError

FEATS = standard_features(state_dim=4, image_size=(24, 24))


@pytest.fixture
def ds_path(tmp_path):
    with DatasetWriter(tmp_path / "ds", FEATS, 10.0, shard_episodes=4) as w:
        for k in range(6):
            w.add(
                synthetic_episode(
                    FEATS, 10 + k, np.random.default_rng(k), key=k, kind=["nominal", "lighting"][k % 2], success=k != 5
                )
            )
    return tmp_path / "ds"


def test_data_check_reports_ok_then_corruption(ds_path):
    console = Console(record=True, width=200)
    data_check(ds_path, console=console)
    text = console.export_text()
    assert "dataset OK" in text and "shard_000004.h5" in text and "6 episodes, 75 frames" in text
    (ds_path / "shard_000004.h5").write_bytes(b"garbage")
    console = Console(record=True, width=200)
    with pytest.raises(R2S2RError, match=r"shard_000004\.h5: sha256 differs"):
        data_check(ds_path, console=console)
    assert "sha256 differs" in console.export_text()


def test_data_show_summarises_and_writes_a_frame_grid(ds_path, tmp_path):
    console = Console(record=True, width=200)
    out = tmp_path / "grid.png"
    data_show(ds_path, out, console=console)
    text = console.export_text()
    assert "6 episodes, 75 frames" in text
    assert "nominal" in text and "lighting" in text and "sim/mimicgen" in text
    assert "success" in text and "failure:" in text
    img = imread(out)
    assert img.ndim == 3 and img.shape[1] > img.shape[0]  # 9 columns (3 cameras x 3 frames), 4 rows
    assert not list(tmp_path.glob(".grid.png.*"))  # written atomically, no temp left
    data_show(ds_path, console=Console(record=True))
    assert (ds_path / "samples.png").stat().st_size > 0
