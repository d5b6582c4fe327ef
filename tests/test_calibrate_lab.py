"""The whole world grounding: the grounded world file, the mismatch report (grounded closer to the
lab than ungrounded on every group), the raw records, and the calibrate command's input checks."""

from __future__ import annotations

import json

import numpy as np
import pytest

from r2s2r.calibrate.records import write_calibration
from r2s2r.calibrate.run import GROUNDED_RANDOMIZATION, STAGES
from r2s2r.calibrate.ungrounded import ungrounded_world
from r2s2r.cli import main
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import sample_condition
from r2s2r.world.params import VisualRandomization, WorldParams

pytestmark = pytest.mark.slow


@pytest.fixture
def written(lab_calibration, tmp_path_factory):
    lab, cal = lab_calibration
    out = tmp_path_factory.mktemp(f"cal{lab.seed}")
    report = write_calibration(cal, ungrounded_world(0), out)
    return lab, cal, out, report


def test_grounded_world_is_closer_to_the_lab_on_every_group(written):
    _, cal, _, report = written
    groups = {r["group"] for r in report["rows"]}
    assert groups == {"cameras", "registration", "arm", "belt", "masses", "images", "image colour", "blur", "noise"}
    worse = [r for r in report["rows"] if not r["grounded"] < r["ungrounded"]]
    assert not worse, worse
    assert all(report["grounded_closer"].values())
    assert set(cal.seconds) == set(STAGES) and sum(cal.seconds.values()) < 600


def test_written_files_hold_the_calibration(written):
    _, cal, out, report = written
    world = WorldParams.load(out / "world.json")
    assert world == cal.world and world.randomization == GROUNDED_RANDOMIZATION
    assert WorldParams.load(out / "ungrounded.json") == ungrounded_world(0)
    assert json.loads((out / "report.json").read_text())["rows"] == json.loads(json.dumps(report["rows"]))
    md = (out / "report.md").read_text()
    assert md.count("\n| ") == len(report["rows"]) + 2 and "**no**" not in md
    views = np.load(out / "records" / "views.npz")
    for v in cal.views.views:
        np.testing.assert_array_equal(views[f"{v.camera}/corners"], v.corners)
        assert views[f"{v.camera}/images"].shape[0] == len(v.images)
    runs = np.load(out / "records" / "excitation.npz")
    assert len({k.split("/")[0] for k in runs.files}) == len(cal.arm.runs)
    meas = json.loads((out / "records" / "measurements.json").read_text())
    assert set(meas["probes"]) == {"conveyor", "red_bin", "blue_bin"}
    assert (out / "scene.png").stat().st_size > 10_000
    assert not list(out.rglob(".*tmp"))
    # the grounded world's parts are the procedures' results
    assert world.conveyor.speed_scale == cal.belt.speed_scale
    assert world.right_arm.kp == cal.arm.dynamics.kp
    assert world.lighting == cal.photometry.lighting
    assert world.right_arm.link_pos == cal.factory["right"].link_pos


def test_grounded_world_runs_a_randomised_simulated_cell(written):
    _, cal, _, _ = written
    cell = SimCell(cal.world, CellConfig(image_size=32))
    cond = sample_condition("nominal", np.random.default_rng(0))
    a = cell.reset(cond, np.random.default_rng(1))["head_left"]
    b = cell.reset(cond, np.random.default_rng(1))["head_left"]
    c = cell.reset(cond, np.random.default_rng(2))["head_left"]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    cell.close()


def test_calibrate_rejects_a_file_as_out(tmp_path, capsys):
    f = tmp_path / "world.json"
    f.write_text("{}")
    assert main(["calibrate", "--out", str(f)]) == 2
    assert "expected a calibration folder" in capsys.readouterr().err


def test_visual_randomisation_varies_light_and_colour_within_its_ranges():
    r = VisualRandomization(light=0.2, azimuth=0.3, ambient=0.2, object_color=0.1)
    world = WorldParams.nominal().replace(randomization=r)
    cell = SimCell(world, CellConfig(image_size=32))
    cond = sample_condition("nominal", np.random.default_rng(0))
    diffuse, ambient, rgba = [], [], []
    for seed in range(12):
        cell.reset(cond, np.random.default_rng(seed))
        m = cell.engine.model
        diffuse.append(m.light_diffuse[m.light("key").id].copy())
        ambient.append(float(m.vis.headlight.ambient[0]))
        rgba.append(m.geom_rgba[m.geom("object").id, :3].copy())
    base = world.lighting.key_diffuse * cond.light_scale
    ratio = np.asarray(diffuse)[:, 0] / base
    assert ratio.min() >= 0.8 - 1e-9 and ratio.max() <= 1.2 + 1e-9 and np.ptp(ratio) > 0.1
    amb = np.asarray(ambient) / world.lighting.ambient
    assert amb.min() >= 0.8 - 1e-9 and amb.max() <= 1.2 + 1e-9 and np.ptp(amb) > 0.1
    assert np.ptp(np.asarray(rgba), axis=0).max() > 0.01
    cell.close()
    # no randomisation: the model keeps the condition's lighting exactly
    plain = SimCell(WorldParams.nominal(), CellConfig(image_size=32))
    plain.reset(cond, np.random.default_rng(5))
    pm = plain.engine.model
    key = WorldParams.nominal().lighting.key_diffuse * cond.light_scale
    assert np.allclose(pm.light_diffuse[pm.light("key").id], key)
    plain.close()
