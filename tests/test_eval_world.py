"""``eval --world``: a policy on the lab's trial list in a simulated world, as the lab runs it."""

import dataclasses
import json

import numpy as np
import pytest

from r2s2r.cli import main
from r2s2r.errors import R2S2RError
from r2s2r.evaluate.agreement import check_paired, paired_agreement
from r2s2r.evaluate.cells import LabCell, WorldCell
from r2s2r.evaluate.policies import RandomPolicy, ScriptedOperator
from r2s2r.evaluate.results import EvalResults
from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.trials import TrialPlan, make_trials
from r2s2r.lab.real_cell import RealCell, TrialCell
from r2s2r.lab.simulated_cell import SimulatedCell
from r2s2r.world.camera import ImageEffects
from r2s2r.world.cell import CellConfig
from r2s2r.world.engine import home_command
from r2s2r.world.params import SHADOWED_RENDER, RenderParams, VisualRandomization, WorldParams

LAB = 2
PLAN = TrialPlan(nominal=2, lighting=0, belt_speed=0, novel_object=0, combined=0)
TINY = dict(cameras=("head_left",), image_size=16)
SHORT = 0.6  # s: a few control steps, enough to exercise the cell, the filter and the judge


def _replayed(res: EvalResults) -> list[tuple]:
    return [(o.index, o.success, o.failure, o.lifted, o.touched, o.steps, o.safety, o.trace) for o in res.outcomes]


@pytest.fixture(scope="module")
def world_file(tmp_path_factory):
    return WorldParams.nominal().save(tmp_path_factory.mktemp("world") / "world.json")


@pytest.fixture(scope="module")
def scripted_sim(world_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    config = EvalConfig(plan=PLAN, batch=2)
    res = evaluate(ScriptedOperator(), LAB, config, out=out, name="scripted", world=WorldCell.load(world_file))
    res.save(out)
    return out, res


def test_the_scripted_operator_succeeds_in_the_nominal_world_and_results_record_it(scripted_sim, world_file):
    out, res = scripted_sim
    assert [o.success for o in res.outcomes] == [True, True], [o.failure for o in res.outcomes]
    assert all(o.lifted and o.touched and o.failure is None for o in res.outcomes)
    world_hash = WorldParams.nominal().content_hash()
    assert res.cell == {"kind": "world", "world": str(world_file), "world_hash": world_hash, "shadows": False}
    assert res.where().startswith(f"world {world_file}")
    saved = json.loads((out / "results.json").read_text())
    assert saved["cell"] == res.cell and saved["lab"] == LAB
    assert EvalResults.load(out) == dataclasses.replace(res, timing=saved["timing"])
    assert f"on world {world_file}" in (out / "results.md").read_text()


def test_a_world_evaluation_resumes_and_is_not_mistaken_for_a_lab_one(scripted_sim, world_file):
    out, res = scripted_sim
    seen = []
    config, world = EvalConfig(plan=PLAN, batch=2), WorldCell.load(world_file)
    again = evaluate(ScriptedOperator(), LAB, config, out, "scripted", seen.append, world)
    assert _replayed(again) == _replayed(res) and [o.index for o in seen] == [0, 1]
    assert again.timing["lab_seconds"] == res.timing["lab_seconds"]  # reused waves, nothing rerun
    with pytest.raises(R2S2RError, match="other settings"):  # the same folder, the lab twin: other trials' runs
        evaluate(ScriptedOperator(), LAB, config, out, "scripted")


def test_a_world_rendered_with_shadows_draws_them_and_is_recorded_apart(world_file, tmp_path):
    lean, shadowed = WorldCell.load(world_file), WorldCell.load(world_file, shadows=True)
    assert lean.params.render == RenderParams() and shadowed.params.render == SHADOWED_RENDER
    assert shadowed.params.replace(render=RenderParams()) == lean.params  # nothing else changes
    assert shadowed.describe()["shadows"] and not lean.describe()["shadows"]
    assert shadowed.describe()["world_hash"] != lean.describe()["world_hash"]
    # the same state drawn both ways (the same sensor noise): the shadows darken part of the picture
    config = CellConfig(cameras=("head_left",), image_size=48)
    frames = []
    for world in (lean, shadowed):
        cell = world.build(config)
        trial = next(iter(make_trials(LAB, PLAN)))
        cell.reset(trial.condition, trial.seed)
        frames.append(cell.act(home_command())["head_left"].astype(int))
        cell.close()
    darker = (frames[0] - frames[1]).mean(axis=-1)
    assert (darker > 8).mean() > 0.02, "no shadow drawn"
    # results record it, a results file round-trips it, and an older record without it reads as lean
    res = evaluate(RandomPolicy(**TINY), LAB, EvalConfig(plan=PLAN, batch=2, max_duration=SHORT), world=shadowed)
    res.save(tmp_path)
    assert EvalResults.load(tmp_path).cell["shadows"] is True and "with shadows" in res.where()
    old = json.loads((tmp_path / "results.json").read_text())
    del old["cell"]["shadows"]
    assert EvalResults.from_json(old, "old").cell["shadows"] is False
    with pytest.raises(R2S2RError, match="shadows"):
        EvalResults.from_json({**old, "cell": {**old["cell"], "shadows": "yes"}}, "bad")


def test_one_and_two_workers_give_identical_results_in_a_world(world_file):
    world = WorldCell.load(world_file)
    policy = RandomPolicy(**TINY)
    results = [
        evaluate(policy, LAB, EvalConfig(plan=PLAN, batch=2, workers=w, max_duration=SHORT), world=world)
        for w in (1, 2)
    ]
    assert _replayed(results[0]) == _replayed(results[1])
    assert results[0].safety_totals()  # random targets trip the lab's safety filter in the sim too
    assert all(o.failure == "missed" for o in results[0].outcomes)


def test_sim_and_lab_run_the_same_trial_list(world_file):
    config = EvalConfig(plan=PLAN, batch=2, max_duration=SHORT)
    policy = RandomPolicy(**TINY)
    lab = evaluate(policy, LAB, config)
    sim = evaluate(policy, LAB, config, world=WorldCell.load(world_file))
    assert sim.trials == lab.trials == make_trials(LAB, PLAN)
    assert sim.trials.digest() == lab.trials.digest()
    assert lab.cell is None and sim.cell["kind"] == "world"
    check_paired(sim, lab)
    assert paired_agreement(sim, lab).trials == PLAN.total
    assert _replayed(sim) != _replayed(lab)  # the same commands met different cells


def test_cells_describe_themselves_and_pickle(world_file):
    import pickle

    world = WorldCell.load(world_file)
    assert pickle.loads(pickle.dumps(world)) == world
    assert LabCell(3).describe() == {"kind": "lab", "lab": 3}
    cell = world.build(CellConfig(**TINY))
    assert isinstance(cell, SimulatedCell) and isinstance(cell, TrialCell) and not isinstance(cell, RealCell)
    right = cell.factory_calibration("right")
    assert right.link_pos == tuple(WorldParams.nominal().right_arm.link_pos)


def test_skipped_frames_leave_later_frames_and_the_person_as_they_would_have_been():
    noisy = WorldParams.nominal()
    cams = tuple(
        dataclasses.replace(c, effects=ImageEffects(noise_std=4.0)) if c.name == "head_left" else c
        for c in noisy.cameras
    )
    noisy = noisy.replace(cameras=cams, randomization=VisualRandomization(light=0.2, object_color=0.1))
    trial = make_trials(LAB, PLAN).trials[0]
    runs = []
    for skip in (False, True):
        cell = SimulatedCell(noisy, CellConfig(**TINY))
        first = cell.reset(trial.condition, trial.seed)
        for _ in range(3):
            obs = cell.act(home_command(), observe=not skip)
        assert ("head_left" in obs) != skip
        runs.append((first, cell.act(home_command()), cell.human_view(), cell.verdict()))
    (f0, o0, v0, d0), (f1, o1, v1, d1) = runs
    assert np.array_equal(f0["head_left"], f1["head_left"]) and np.array_equal(o0["head_left"], o1["head_left"])
    assert np.array_equal(o0["proprio"], o1["proprio"]) and d0 == d1
    assert np.array_equal(v0.object_pos, v1.object_pos) and v0.belt_speed == v1.belt_speed
    # The person sees the trial at human accuracy, not exactly.
    exact = cell._cell.engine.object_pose()[:3, 3]
    assert 0 < np.linalg.norm(v1.object_pos - exact) < 0.05


def test_a_bad_world_file_is_named(tmp_path, capsys):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    incomplete = tmp_path / "incomplete.json"
    incomplete.write_text(json.dumps({"cameras": []}))
    for path, words in (
        (tmp_path / "missing.json", "--world"),
        (tmp_path, "--world"),
        (bad_json, "bad.json"),
        (incomplete, "incomplete.json"),
    ):
        with pytest.raises(R2S2RError, match="--world"):
            WorldCell.load(path)
        out = tmp_path / "out"
        assert main(["eval", "--policy", "scripted", "--world", str(path), "--out", str(out)]) == 2
        assert words in capsys.readouterr().err
        assert not out.exists()  # refused before any trial ran
