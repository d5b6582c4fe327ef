"""The study end to end at smoke size (the session's ``smoke`` study, tests/conftest.py), its report's
consistency with the results files, caching, and the registries of designs and profiles."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from rich.console import Console

from r2s2r import atomic
from r2s2r.cli import main
from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.evaluate.agreement_report import agreement_rows, agreement_table
from r2s2r.evaluate.results import EvalResults
from r2s2r.evaluate.stats import factorial_effects
from r2s2r.study import DESIGNS, PROFILES, get_design, get_profile, run_study, runner
from r2s2r.study.design import Design, PolicySpec, SimConfig
from r2s2r.study.profiles import FILM
from r2s2r.study.report import fmt_rate, reproduces, trend_sentences
from r2s2r.study.runner import plan_study, stage_table

from .conftest import SMOKE_WORKERS

QUIET = Console(stderr=True, quiet=True)


@pytest.mark.slow
def test_smoke_study_writes_every_artifact(smoke):
    out, results = smoke
    files = ("report.md", "report.html", "results.json", "success.png", "training.png", "agreement.png", "study.json")
    for name in files:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert (out / "success.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    study = json.loads((out / "study.json").read_text())
    stage_dirs = sorted((out / "stages").iterdir())
    # per policy: train, eval, an evaluation in each of the two simulated worlds; the baseline's videos
    # (the smoke profile films it alone); per anchor policy: its evaluation in the lab and in each world
    anchors, early = PROFILES["smoke"].anchors, PROFILES["smoke"].anchor_steps  # early: a training and 3 evaluations
    assert PROFILES["smoke"].film == "baseline" and set(results["videos"]["policies"]) == {"real-only"}
    assert "Not filmed (the profile's film setting, baseline): real+" in (out / "report.md").read_text()
    assert len(stage_dirs) == len(study["plan"]) == 1 + 1 + 4 + 5 * 4 + 1 + 3 * len(anchors) + 4 * len(early)
    assert anchors and early
    for d in stage_dirs:
        assert (d / "stage.json").is_file(), d
    cal = next(d for d in stage_dirs if d.name.startswith("calibrate-"))
    for name in ("world.json", "ungrounded.json", "report.json", "report.md", "records/measurements.json"):
        assert (cal / name).is_file(), name
    assert set(results["policies"]) == {p.name for p in get_design("grounding").policies}
    assert set(results["generation"]) == {"gw-gb", "gw-ub", "uw-gb", "uw-ub"}
    for g in results["generation"].values():
        assert g["admitted"] == PROFILES["smoke"].n_sim and g["attempts"] >= g["admitted"]


@pytest.mark.slow
def test_smoke_report_agrees_with_the_results_files(smoke):
    out, results = smoke
    report = (out / "report.md").read_text()
    assert json.loads((out / "results.json").read_text()) == json.loads(json.dumps(results))
    for name, pol in results["policies"].items():
        res = EvalResults.load(pol["eval_dir"])  # the evaluation stage's own results.json
        o = res.overall()
        assert (
            (pol["overall"]["successes"], pol["overall"]["trials"])
            == (o.successes, o.trials)
            == (
                sum(res.successes()),
                PROFILES["smoke"].trials.total,
            )
        )
        row = next(line for line in report.splitlines() if line.startswith(f"| {name} | "))
        assert fmt_rate(pol["overall"]) in row and fmt_rate(pol["nominal"]) in row and fmt_rate(pol["shifted"]) in row
        by_kind = {k: (r.successes, r.trials) for k, r in res.by_kind().items()}
        assert {k: (v["successes"], v["trials"]) for k, v in pol["by_kind"].items()} == by_kind
    # the 2x2 effects are those of the four cells' evaluation results
    design = get_design("grounding")
    counts = {}
    for (a, b), cell in zip(((0, 0), (0, 1), (1, 0), (1, 1)), design.cells, strict=True):
        o = EvalResults.load(results["policies"][cell]["eval_dir"]).overall()
        counts[(a, b)] = (o.successes, o.trials)
    want = factorial_effects(counts, design.factors)
    for k, e in want.items():
        got = results["effects"]["overall"][k]
        assert got == pytest.approx({"estimate": e.estimate, "low": e.low, "high": e.high})
    for cfg, g in results["generation"].items():
        row = next(line for line in report.splitlines() if line.startswith(f"| {cfg} | "))
        assert f"{g['admitted']}/{g['attempts']}" in row
    for heading in ("## Success on the lab", "## Per-condition successes", "## Grounding effects (2x2)",
                    "## What this run shows", "## Grounding mismatch", "## Simulated data per configuration",
                    "## Training", "## Stages: time and machine"):  # fmt: skip
        assert heading in report
    for r in results["stages"]:  # each stage's measured time next to the plan's estimate
        assert r["expected_s"] > 0 and r["seconds"] > 0
        cells = f"| {r['stage']} | {r['expected_s']:.0f} | {r['seconds']:.0f} | {r['seconds'] / r['expected_s']:.2f} |"
        assert any(line.startswith(cells) for line in report.splitlines())
    assert ("does NOT reproduce" in report) or ("shows the study's trends" in report)


@pytest.mark.slow
def test_smoke_study_evaluates_every_policy_in_both_worlds_on_the_lab_trials(smoke):
    out, results = smoke
    a = results["agreement"]
    policies = list(results["policies"])
    assert a["policies"] == policies and set(a["sims"]) == {"grounded sim", "ungrounded sim"}
    stages = out / "stages"
    cal = next(stages.glob("calibrate-*"))
    lab = [EvalResults.load(results["policies"][n]["eval_dir"]) for n in policies]
    worlds = {}
    for world, file in (("grounded", "world.json"), ("ungrounded", "ungrounded.json")):
        short = world[0] + "w"
        sims = [EvalResults.load(next(stages.glob(f"simeval-{n}-{short}-*"))) for n in policies]
        for s, lr in zip(sims, lab, strict=True):
            assert s.trials.digest() == lr.trials.digest() == results["trial_list"]  # the lab's very trials
            assert s.cell["kind"] == "world" and s.cell["world"] == str(cal / file)
            assert s.settings == lr.settings and s.policy == lr.policy
        assert [r["successes"] for r in a["sims"][f"{world} sim"]] == [sum(s.successes()) for s in sims]
        worlds[f"{world} sim"] = sims
    want = agreement_table(lab, worlds, seed=PROFILES["smoke"].seed).to_json()
    assert json.loads(json.dumps(want)) == json.loads(json.dumps(a))
    report = (out / "report.md").read_text()
    assert "## Can the simulator stand in for the lab?" in report and "![" in report and "agreement.png" in report
    for row in agreement_rows(a)[1]:
        assert "| " + " | ".join(row) + " |" in report


@pytest.mark.slow
def test_smoke_study_adds_the_anchor_policies_to_the_agreement_on_the_same_trials(smoke):
    out, results = smoke
    a, anchored = results["agreement"], results["agreement_anchored"]
    anchors = [*PROFILES["smoke"].anchors, *(f"real-only@{k}" for k in PROFILES["smoke"].anchor_steps)]
    assert anchored["policies"] == a["policies"] + anchors  # the study's policies first, in their order
    stages = out / "stages"
    lab = [EvalResults.load(results["policies"][n]["eval_dir"]) for n in a["policies"]]
    lab += [EvalResults.load(next(stages.glob(f"anchor-{n}-[0-9a-f]*"))) for n in anchors]
    worlds = {}
    for world in ("grounded", "ungrounded"):
        short = world[0] + "w"
        sims = [EvalResults.load(next(stages.glob(f"simeval-{n}-{short}-*"))) for n in a["policies"]]
        sims += [EvalResults.load(next(stages.glob(f"anchor-{n}-{short}-*"))) for n in anchors]
        for s, lr in zip(sims, lab, strict=True):
            assert s.trials.digest() == lr.trials.digest() == results["trial_list"]  # the lab's very trials
            # the lab's results hold no cell record (None: the lab twin), a world's its file
            assert s.cell["kind"] == "world" and lr.cell is None and s.policy == lr.policy
        worlds[f"{world} sim"] = sims
    want = agreement_table(lab, worlds, seed=PROFILES["smoke"].seed).to_json()
    assert json.loads(json.dumps(want)) == json.loads(json.dumps(anchored))
    report = (out / "report.md").read_text()
    for row in agreement_rows(anchored)[1]:
        assert "| " + " | ".join(row) + " |" in report
    assert all(f"| {n} | " in report for n in anchors)


@pytest.mark.slow
def test_rerun_is_cached_and_a_changed_setting_reruns_only_its_dependents(smoke):
    out, first = smoke
    fd, stale = atomic.temp_beside(out / "results.json")  # what a run killed while writing it leaves
    os.close(fd)
    again = run_study(out, "smoke", workers=SMOKE_WORKERS, console=QUIET)
    assert not os.path.exists(stale)
    assert all(s["cached"] for s in again["stages"])
    strip = lambda r: {k: v for k, v in r.items() if k != "stages"}  # noqa: E731
    assert strip(again) == strip(first)
    # more training steps: only training and evaluation are to run again
    changed = dataclasses.replace(PROFILES["smoke"], train_steps=PROFILES["smoke"].steps + 1)
    rows = stage_table(plan_study(changed, get_design("grounding"), out / "stages", 2, QUIET), out / "stages")
    to_run = {r["stage"].split("-")[0] for r in rows if not r["cached"]}
    assert to_run == {"train", "eval", "simeval", "videos", "anchor"}  # anchor: the baseline stopped early
    assert all(r["cached"] for r in rows if r["stage"].startswith(("sim-", "demos", "anchor-random", "anchor-scr")))
    # another lab: everything reruns
    other = dataclasses.replace(PROFILES["smoke"], lab=1)
    rows = stage_table(plan_study(other, get_design("grounding"), out / "stages", 2, QUIET), out / "stages")
    assert not any(r["cached"] for r in rows)


def test_registries_name_bad_choices():
    with pytest.raises(UnknownNameError, match="Did you mean 'quick'"):
        get_profile("quik")
    with pytest.raises(UnknownNameError, match="Did you mean 'grounding'"):
        get_design("grounding2")
    with pytest.raises(UnknownNameError, match="world grounding"):
        SimConfig("calibrated", "grounded")
    with pytest.raises(ConfigError, match="baseline"):
        Design("x", (PolicySpec("a"),), baseline="b")
    with pytest.raises(ConfigError, match="n_sim"):
        PROFILES["quick"].replace(n_sim=0)
    assert PROFILES["quick"].replace(n_sim=None, lab=3).lab == 3
    for name, design in DESIGNS.items():
        assert design.baseline in {p.name for p in design.policies}, name
    g = get_design("grounding")
    assert [c.name for c in g.sim_configs] == ["gw-gb", "gw-ub", "uw-gb", "uw-ub"]
    assert g.cells == ("real+uw-ub", "real+uw-gb", "real+gw-ub", "real+gw-gb")


def test_paper_and_quick_keep_the_fifty_trial_protocol():
    for name in ("quick", "paper"):
        t = PROFILES[name].trials
        assert (t.total, t.nominal, t.total - t.nominal) == (50, 24, 26)
    assert (PROFILES["paper"].n_real, PROFILES["paper"].n_sim) == (100, 1500)


def test_cli_study_errors_and_dry_run(tmp_path, capsys):
    assert main(["study", "run", "--profile", "quik", "--out", str(tmp_path / "s")]) == 2
    assert "Did you mean 'quick'" in capsys.readouterr().err
    assert main(["study", "run", "--design", "nope", "--out", str(tmp_path / "s"), "--dry-run"]) == 2
    assert main(["study", "run", "--profile", "smoke", "--out", str(tmp_path / "s"), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "calibrate" in err and "eval-real+gw-gb" in err and "total" in err
    assert not (tmp_path / "s" / "report.md").exists()


def _fake(diffs: list[float], effects: dict[str, float]) -> dict:
    def eff(x):
        return {"estimate": x, "low": x - 0.1, "high": x + 0.1}

    return {
        "design": {"baseline": "real-only"},
        "comparisons": {f"p{i}": {"difference": eff(d)} for i, d in enumerate(diffs)},
        "effects": {"overall": {k: eff(v) for k, v in effects.items()}},
    }


def test_trend_sentences_say_what_the_numbers_say():
    good = _fake([0.3, 0.2], {"world grounding": 0.2, "behaviour grounding": 0.15, "w x b": 0.0})
    assert "shows the study's trends" in reproduces(good)
    bad = _fake([0.3, -0.2], {"world grounding": -0.2, "behaviour grounding": 0.15, "w x b": 0.0})
    text = reproduces(bad)
    assert "does NOT reproduce" in text and "world grounding raises success" in text
    lines = trend_sentences(bad)
    assert any("BELOW" in t for t in lines) and any("interaction" in t for t in lines)
    assert any("overlap zero" in t for t in trend_sentences(_fake([0.05], {"world grounding": 0.05})))


def test_policies_that_learn_the_object_state_train_on_labelled_demos(tmp_path, monkeypatch):
    from r2s2r.train.presets import PRESETS

    tiny = PRESETS["tiny"]
    labelled = dataclasses.replace(tiny, policy=dataclasses.replace(tiny.policy, object_state=1.0))
    monkeypatch.setitem(PRESETS, "tiny-object", labelled)
    for preset, want in (("tiny", False), ("tiny-object", True)):
        profile = PROFILES["smoke"].replace(preset=preset)
        plan = plan_study(profile, get_design("grounding"), tmp_path / "stages", 2, QUIET)
        names = [s.name for s in plan.stages]
        assert ("labels-3" in names) == want
        train = plan.stage("train-real-only")
        real = plan.stage("labels-3" if want else "demos-3")
        assert train.key["real"] == real.hash
        if want:  # after the demos and the calibration it reads, before any training
            assert names.index("labels-3") > max(names.index("demos-3"), names.index("calibrate"))
            assert real.key["calibrate"] == plan.stage("calibrate").hash


def test_sim_worlds_choose_the_sim_evaluations(tmp_path):
    design = get_design("grounding")
    for worlds, per_policy in (((), 0), (("grounded",), 1), (("grounded", "ungrounded"), 2)):
        profile = dataclasses.replace(PROFILES["smoke"], sim_worlds=worlds)
        plan = plan_study(profile, design, tmp_path, 2, QUIET)
        names = [s.name for s in plan.stages if s.name.startswith("simeval-")]
        assert len(names) == per_policy * len(design.policies)
        assert all(set(plan.sim_evals[p.name]) == set(worlds) for p in design.policies)
        assert all(s.key["lab"] == profile.lab for s in plan.stages if s.name.startswith("simeval-"))
    with pytest.raises(UnknownNameError, match="grounded"):
        dataclasses.replace(PROFILES["smoke"], sim_worlds=("grounde",))
    with pytest.raises(ConfigError, match="distinct"):
        dataclasses.replace(PROFILES["smoke"], sim_worlds=("grounded", "grounded"))


def test_the_film_setting_chooses_whose_trials_are_filmed_and_changes_no_other_stage(tmp_path):
    design = get_design("grounding")
    plans = {f: plan_study(dataclasses.replace(PROFILES["smoke"], film=f), design, tmp_path, 2, QUIET) for f in FILM}
    filmed = {f: [s.name for s in plan.stages if s.name.startswith("videos-")] for f, plan in plans.items()}
    assert filmed == {
        "all": [f"videos-{p.name}" for p in design.policies],
        "baseline": [f"videos-{design.baseline}"],
        "none": [],
    }
    assert all(set(plan.videos) == {n.removeprefix("videos-") for n in filmed[f]} for f, plan in plans.items())
    others = [{s.name: s.hash for s in plan.stages if not s.name.startswith("videos-")} for plan in plans.values()]
    assert others[0] == others[1] == others[2]
    assert plans["all"].stage(f"videos-{design.baseline}").hash == plans["baseline"].stage(filmed["baseline"][0]).hash
    with pytest.raises(UnknownNameError, match="Did you mean 'none'"):
        dataclasses.replace(PROFILES["smoke"], film="nome")


def test_rendering_the_sim_evaluations_with_shadows_reruns_them_and_nothing_else(tmp_path):
    design = get_design("grounding")
    plans = [
        plan_study(dataclasses.replace(PROFILES["smoke"], sim_eval_shadows=v), design, tmp_path, 2, QUIET)
        for v in (True, False)
    ]
    keys = [{s.name: s.hash for s in plan.stages} for plan in plans]
    assert keys[0].keys() == keys[1].keys()
    changed = {n for n in keys[0] if keys[0][n] != keys[1][n]}
    in_sim = {n for n in keys[0] if n.startswith("simeval-") or (n.startswith("anchor-") and n[-3:] in ("-gw", "-uw"))}
    anchors = len(PROFILES["smoke"].anchors) + len(PROFILES["smoke"].anchor_steps)  # reference, early stops
    assert changed == in_sim and len(in_sim) == 5 * 2 + anchors * 2
    assert all(plans[0].stage(n).key["shadows"] is True for n in in_sim)
    # rendered like the lab's cameras, a sim evaluation is expected to cost what a lab one does per frame
    assert plans[0].stage("simeval-real-only-gw").estimate_s > plans[1].stage("simeval-real-only-gw").estimate_s
    with pytest.raises(ConfigError, match="sim_eval_shadows"):
        dataclasses.replace(PROFILES["smoke"], sim_eval_shadows="yes")


def test_shadowed_training_data_reruns_generation_and_what_trains_on_it(tmp_path):
    design = get_design("grounding")
    lean, shadowed = (
        plan_study(dataclasses.replace(PROFILES["smoke"], sim_data_shadows=v), design, tmp_path, 2, QUIET)
        for v in (False, True)
    )
    keys = [{s.name: s.hash for s in plan.stages} for plan in (lean, shadowed)]
    changed = {n for n in keys[0] if keys[0][n] != keys[1][n]}
    generated = {n for n in keys[0] if n.startswith("sim-")}
    assert len(generated) == 4 and generated <= changed
    assert all(shadowed.stage(n).key["shadows"] is True and "shadows" not in lean.stage(n).key for n in generated)
    assert all(shadowed.stage(n).estimate_s > lean.stage(n).estimate_s for n in generated)
    # every co-trained policy and what measures it changes; the calibration, the demos and real-only do not
    assert {n for n in changed if n.startswith("train-")} == {f"train-{p.name}" for p in design.policies if p.sims}
    assert not any(n.startswith(("calibrate", "demos", "train-real-only", "eval-real-only")) for n in changed)
    assert not PROFILES["quick"].sim_data_shadows and PROFILES["paper"].sim_data_shadows
    with pytest.raises(ConfigError, match="sim_data_shadows"):
        dataclasses.replace(PROFILES["smoke"], sim_data_shadows=1)


def test_anchor_policies_are_evaluated_in_the_lab_and_each_world_independently_of_training(tmp_path):
    design = get_design("grounding")
    for worlds, anchors in (((), ("random",)), (("grounded",), ("random", "scripted")), (("grounded",), ())):
        profile = dataclasses.replace(PROFILES["smoke"], sim_worlds=worlds, anchors=anchors, anchor_steps=())
        plan = plan_study(profile, design, tmp_path, 2, QUIET)
        names = [s.name for s in plan.stages if s.name.startswith("anchor-")]
        # anchors serve the agreement only: none without a simulated world
        assert len(names) == (len(anchors) * (1 + len(worlds)) if worlds else 0)
        assert set(plan.anchors) == (set(anchors) if worlds else set())
        for a, where in plan.anchors.items():
            assert set(where) == {"lab", *worlds}
            lab, sims = plan.stage(where["lab"]), [plan.stage(where[w]) for w in worlds]
            assert lab.key["policy"] == a and all(s.key["policy"] == a for s in sims)
            assert all(s.key["world"] == w for s, w in zip(sims, worlds, strict=True))
            assert not any("train" in s.key for s in (lab, *sims))
    # more training steps leave the anchors' keys as they were
    base = dataclasses.replace(PROFILES["smoke"], sim_worlds=("grounded",), anchor_steps=())
    longer = dataclasses.replace(base, train_steps=base.steps + 1)
    keys = [
        {s.name: s.hash for s in plan_study(p, design, tmp_path, 2, QUIET).stages if s.name.startswith("anchor-")}
        for p in (base, longer)
    ]
    assert keys[0] == keys[1] and keys[0]
    with pytest.raises(UnknownNameError, match="scripted"):
        dataclasses.replace(PROFILES["smoke"], anchors=("scriptd",))
    with pytest.raises(ConfigError, match="distinct"):
        dataclasses.replace(PROFILES["smoke"], anchors=("random", "random"))


def test_the_baseline_stopped_early_is_its_own_training_run_ended_at_each_step(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "train_threads", lambda: 2)  # the 2-core machine the quick profile is sized for
    design = get_design("grounding")
    plain = dataclasses.replace(PROFILES["smoke"], anchor_steps=())
    early = dataclasses.replace(plain, anchor_steps=(5, 10))
    before, plan = (plan_study(p, design, tmp_path, 2, QUIET) for p in (plain, early))
    # the early stops are copies the baseline's run keeps: no training beside the others, so the last
    # policy still trains alone on both cores; the baseline's run checkpoints at the early steps too
    last = design.policies[-1].name
    threads = [pl.stage(pl.policies[last][0]).key["torch_threads"] for pl in (before, plan)]
    assert threads == [2, 2]
    base = plan.stage(plan.policies["real-only"][0])
    assert base.key == before.stage(before.policies["real-only"][0]).key | {"keep_at": [5, 10]}
    # nothing else changes: every stage of the plain plan but the baseline's is in the new one with its key
    kept = {s.name: s.hash for s in before.stages if "real-only" not in s.name}
    assert len(kept) < len(before.stages) and kept.items() <= {s.name: s.hash for s in plan.stages}.items()
    for k in (5, 10):
        train = plan.stage(f"train-real-only@{k}")
        # the key of the same run ended at k (trained again where the copy is missing), after the trainings
        assert train.key == {n: v for n, v in base.key.items() if n != "keep_at"} | {"stop_at": k}
        assert train.cores is None and "copy" in train.what and train.estimate_s < 10
        where = plan.anchors[f"real-only@{k}"]
        assert set(where) == {"lab", "grounded", "ungrounded"}
        lab_eval = plan.stage(plan.policies["real-only"][1])
        assert plan.stage(where["lab"]).key == lab_eval.key | {"train": train.hash}  # evaluated like the baseline
        assert all(plan.stage(where[w]).key["train"] == train.hash for w in ("grounded", "ungrounded"))
    names = [s.name for s in plan.stages]
    assert names.index("train-real-only@10") < min(names.index(s) for s in plan.anchors["real-only@5"].values())
    assert len(names) == len(before.stages) + 2 * 4
    # no simulated world: no anchors, so no early stops trained
    none = plan_study(dataclasses.replace(early, sim_worlds=()), design, tmp_path, 2, QUIET)
    assert not any("@" in s.name for s in none.stages)
    for bad in ((0,), (plain.steps,), (10, 5), (5, 5), (True,), (2.5,)):
        with pytest.raises(ConfigError, match="anchor_steps"):
            dataclasses.replace(plain, anchor_steps=bad)


@pytest.mark.slow
def test_the_smoke_studys_early_stopped_baseline_retraces_its_run(smoke):
    out, results = smoke
    [k] = PROFILES["smoke"].anchor_steps
    stages = out / "stages"
    full = json.loads(next(stages.glob("train-real-only-[0-9a-f]*")).joinpath("history.json").read_text())
    early = json.loads(next(stages.glob(f"train-real-only@{k}-*")).joinpath("history.json").read_text())
    assert early[-1]["step"] == k and [h["step"] for h in early] == [h["step"] for h in full if h["step"] <= k]
    for e, f in zip(early, full, strict=False):  # the same losses, learning rates and gradients, step by step
        assert (e["loss"], e["lr"], e["grad_norm"]) == (f["loss"], f["lr"], f["grad_norm"])
    run = next(stages.glob(f"train-real-only@{k}-*")) / "run"
    assert (run / "latest").read_text().strip() == f"step_{k:08d}"
    # a copy of the baseline's run as it passed step k, not a second training: the same files
    kept = next(stages.glob("train-real-only-[0-9a-f]*")) / "early" / f"step_{k:08d}"
    assert json.loads(run.parent.joinpath("stage.json").read_text())["summary"]["copied_from"] == str(kept)
    copied = sorted(p.relative_to(run) for p in run.rglob("*") if p.is_file())
    assert copied == sorted(p.relative_to(kept) for p in kept.rglob("*") if p.is_file())
    assert all((run / f).read_bytes() == (kept / f).read_bytes() for f in copied)
    assert f"real-only@{k}" in results["agreement_anchored"]["policies"]
