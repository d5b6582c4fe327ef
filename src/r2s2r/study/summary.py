"""The study's numbers, gathered from its stage folders into one JSON-able dict (``results.json``).

Everything the report shows comes from here, and everything here comes from the stages' own output
files (evaluation ``results.json``, generation ``stats.json``, the calibration's ``report.json``,
training ``history.json``, the filmed trials' ``clips.json``, each ``stage.json``), and the
statistics over them (comparisons, effects, the sim-vs-lab agreement) are computed here: the report
never computes a number of its own.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from r2s2r.evaluate.agreement_report import agreement_table
from r2s2r.evaluate.compare import design_effects, paired_against_first
from r2s2r.evaluate.results import EvalResults
from r2s2r.evaluate.stats import Effect, Rate
from r2s2r.files import read_json
from r2s2r.study.clips import CLIP_RULE
from r2s2r.study.design import Design
from r2s2r.study.profiles import StudyProfile
from r2s2r.study.runner import StudyPlan
from r2s2r.study.stages import StageRecord
from r2s2r.study.steps import CLIPS, DATA, HISTORY

# 2: the filmed trials ("videos"); 3: the sim-vs-lab agreement ("agreement"); 4: the agreement with the
# reference policies too ("agreement_anchored")
SCHEMA = 4


def _rate(r: Rate | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"successes": r.successes, "trials": r.trials, "rate": r.rate, "low": r.low, "high": r.high}


def _effect(e: Effect) -> dict[str, float]:
    return {"estimate": e.estimate, "low": e.low, "high": e.high}


def _read(path: Path) -> Any:
    return read_json(path, "a JSON file a study stage writes", expect=None)


def load_evaluations(plan: StudyPlan, records: dict[str, StageRecord]) -> dict[str, EvalResults]:
    return {pol: EvalResults.load(records[ev].dir) for pol, (_, ev) in plan.policies.items()}


def sim_lab_agreement(
    plan: StudyPlan,
    records: dict[str, StageRecord],
    evals: dict[str, EvalResults],
    seed: int,
    anchored: bool = False,
) -> dict[str, Any] | None:
    """Per simulated world (named "<world> sim"), its success per policy and its agreement with the
    lab (``AgreementTable.to_json()``), over the study's policies and, ``anchored``, the plan's
    reference policies after them; None when the study evaluated in no world, or (anchored) has no
    anchors, or the set has fewer than two policies."""
    worlds = [w for w in ("grounded", "ungrounded") if any(w in by_world for by_world in plan.sim_evals.values())]
    if anchored and not plan.anchors:
        return None
    lab = list(evals.values())
    in_sim = {w: [EvalResults.load(records[plan.sim_evals[pol][w]].dir) for pol in evals] for w in worlds}
    if anchored:
        for stages in plan.anchors.values():
            lab.append(EvalResults.load(records[stages["lab"]].dir))
            for w in worlds:
                in_sim[w].append(EvalResults.load(records[stages[w]].dir))
    if not worlds or len(lab) < 2:
        return None
    return agreement_table(lab, {f"{w} sim": r for w, r in in_sim.items()}, seed=seed).to_json()


def summarize_study(
    plan: StudyPlan,
    records: dict[str, StageRecord],
    profile_name: str,
    profile: StudyProfile,
    design_name: str,
    design: Design,
) -> dict[str, Any]:
    """Every number of the study, by section."""
    evals = load_evaluations(plan, records)
    names = list(evals)
    baseline = design.baseline
    ordered = [evals[baseline], *(evals[n] for n in names if n != baseline)]
    paired = paired_against_first(ordered)
    policies = {}
    for name, res in evals.items():
        policies[name] = {
            "sims": [c.name for c in design.policy(name).sims],
            "overall": _rate(res.overall()),
            "nominal": _rate(res.by_kind().get("nominal")),
            "shifted": _rate(res.shifted()),
            "by_kind": {k: _rate(r) for k, r in res.by_kind().items()},
            "failures": res.failures(),
            "eval_dir": str(records[plan.policies[name][1]].dir),
        }
    comparisons = {}
    for i, c in paired.items():
        comparisons[ordered[i].policy] = {
            "difference": _effect(c.difference),
            "only_policy": c.only_a,
            "only_baseline": c.only_b,
            "p_value": c.p_value,
        }
    effects = None
    if design.cells is not None:
        effects = {}
        for subset in ("overall", "nominal", "shifted"):
            cut = [_subset(evals[c], subset) for c in design.cells]
            if all(r.outcomes for r in cut):  # a plan may have no nominal or no shifted trials
                eff, _ = design_effects(cut, design.factors)
                effects[subset] = {k: _effect(e) for k, e in eff.items()}
    generation = {}
    for cfg, stage in plan.sims.items():
        stats = _read(records[stage].dir / DATA / "stats.json")
        keep = ("attempts", "admitted", "admission_rate", "failures", "admitted_per_hour_per_worker", "overhead")
        generation[cfg] = {k: stats[k] for k in keep} | {"wall_s": stats["wall_s"]}
    demos = {str(n): records[s].summary for n, s in plan.demos.items()}
    cal = _read(records[plan.calibrate].dir / "report.json")
    videos = {"rule": CLIP_RULE, "policies": {pol: _clips(records[st].dir) for pol, st in plan.videos.items()}}
    training = {
        pol: {"history": _read(records[tr].dir / HISTORY), **records[tr].summary}
        for pol, (tr, _) in plan.policies.items()
    }
    stages = [
        {
            "stage": r.name,
            "hash": r.hash,
            "seconds": r.seconds,
            "expected_s": plan.stage(r.name).estimate_s,  # the plan's estimate, for the report's check
            "machine": r.machine,
            "cached": r.cached,
        }
        for r in records.values()
    ]
    return {
        "schema": SCHEMA,
        "profile": {"name": profile_name, **dataclasses.asdict(profile)},
        "design": {"name": design_name, "summary": design.summary, "baseline": baseline},
        "trial_list": evals[baseline].trials.digest(),
        "policies": policies,
        "comparisons": comparisons,
        "effects": effects,
        "factors": list(design.factors) if design.factors else None,
        "cells": list(design.cells) if design.cells else None,
        "generation": generation,
        "demos": demos,
        "calibration": {"rows": cal["rows"], "grounded_closer": cal["grounded_closer"]},
        "training": training,
        "videos": videos,
        "agreement": sim_lab_agreement(plan, records, evals, profile.seed),
        "agreement_anchored": sim_lab_agreement(plan, records, evals, profile.seed, anchored=True),
        "stages": stages,
    }


def _clips(folder: Path) -> list[dict[str, Any]]:
    """A videos stage's filmed trials, each video named relative to the study folder
    (``<study>/stages/<stage folder>/videos/...``)."""
    rel = Path(folder.parent.name) / folder.name
    return [{**c, "video": str(rel / c["video"])} for c in _read(folder / CLIPS)]


def _subset(res: EvalResults, subset: str) -> EvalResults:
    """``res`` restricted to nominal or shifted trials (``overall``: unchanged), for effects per subset."""
    if subset == "overall":
        return res
    keep = [i for i, o in enumerate(res.outcomes) if (o.kind == "nominal") == (subset == "nominal")]
    trials = dataclasses.replace(res.trials, trials=tuple(res.trials.trials[i] for i in keep))
    return dataclasses.replace(res, trials=trials, outcomes=tuple(res.outcomes[i] for i in keep))
