"""``r2s2r train heldout``: a run's open-loop error on demonstrations it did not train on. On the run's own
training data it measures the held-out split as the training log did, to the bit; on fresh demonstrations
every episode, with an interval over them; demonstrations it trained on are refused."""

from __future__ import annotations

import json

import pytest

from r2s2r.cli import main
from r2s2r.data import standard_features
from r2s2r.errors import ConfigError
from r2s2r.train import train
from r2s2r.train.heldout import heldout_errors

from .test_train import preset, write

FEATS = standard_features(state_dim=4, image_size=(16, 16))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("heldout")
    real = write(root / "real", FEATS, (12, 10, 14, 11, 13, 9, 12, 10, 11, 13), "real", 7)
    sim = write(root / "sim", FEATS, (15, 11), "sim", 70)
    p = preset(steps=20, checkpoint_every=10, log_every=10, holdout=0.2, seed=3, keep_checkpoints=4)
    res = train(real, [sim], root / "run", p)
    return root, res


def test_the_runs_own_split_is_measured_as_its_training_log_did(run):
    root, res = run
    logged = {r["step"]: r for r in res.history if "val_arm" in r}
    rows = heldout_errors(root / "run", root / "real", steps=(10, 20))
    assert [r.checkpoint for r in rows] == ["step_00000010", "step_00000020"]
    for r, step in zip(rows, (10, 20), strict=True):
        assert r.own_split and r.episodes == 2  # 20 % of 10
        record = r.error.record()
        assert "val_arm_ratio_lo" in record and record == {k: logged[step][k] for k in record}


def test_fresh_demonstrations_are_measured_whole_and_written(run, tmp_path):
    root, _ = run
    fresh = write(tmp_path / "fresh", FEATS, (10, 12, 11, 9), "real", 700)
    [row] = heldout_errors(root / "run", fresh)  # the run's best checkpoint
    assert not row.own_split and row.episodes == 4 and row.frames == sum((10, 12, 11, 9))  # fewer than 1024
    lo, hi = row.error.arm_ratio_ci
    assert lo <= row.error.arm_ratio <= hi and row.error.hold_arm > 0
    assert heldout_errors(root / "run", fresh, frames=8)[0].frames == 8
    out = tmp_path / "heldout.json"
    assert main(["train", "heldout", "--policy", str(root / "run"), "--demos", str(fresh), "--out", str(out)]) == 0
    written = json.loads(out.read_text())["rows"]
    assert len(written) == 1 and written[0]["val_arm"] == row.error.arm and written[0]["episodes"] == 4


def test_demonstrations_it_trained_on_and_missing_checkpoints_are_refused(run):
    root, _ = run
    for bad in (0, -3):
        with pytest.raises(ConfigError, match="--frames: expected a positive number"):
            heldout_errors(root / "run", root / "real", frames=bad)
    with pytest.raises(ConfigError, match="trained on every episode.*sim0"):
        heldout_errors(root / "run", root / "sim")
    kept = r"\['step_00000010', 'step_00000020'\]"
    with pytest.raises(ConfigError, match=r"no checkpoints of steps \[15\]; it keeps " + kept):
        heldout_errors(root / "run", root / "real", steps=(15,))
