"""The study report's content: its blocks (``r2s2r.study.sections``) built from ``results.json``
(``summary``), rendered as ``report.md`` here and as ``report.html`` by ``r2s2r.study.html``.

Sections: headline success with 95 % Wilson intervals (overall, nominal, shifted) and a figure like
the study's Fig. 2(a); per-condition counts (its Appendix E); paired comparisons against the
baseline; the 2x2 main effects and interaction with plain sentences where intervals include zero;
whether the run reproduces the study's trends; filmed lab trials of every policy (a success and a
failure per condition kind, where there are any); the grounding mismatch table (its Appendix A);
generation admission per configuration; training curves; the time and machine of every stage.
"""

from __future__ import annotations

from typing import Any

from r2s2r.evaluate.agreement_report import AGREEMENT_NOTE, agreement_rows, pearson_notes, success_rows
from r2s2r.evaluate.tables import LABELS
from r2s2r.study.sections import Block, Bullets, Clip, Clips, Figure, Heading, Text, table, to_markdown
from r2s2r.world.conditions import KINDS

SUBSETS = ("overall", "nominal", "shifted")


def fmt_rate(r: dict | None) -> str:
    """``k/n (p%) [lo%, hi%]``: the form every success rate takes in the report."""
    if r is None:
        return "-"
    return f"{r['successes']}/{r['trials']} ({r['rate']:.0%}) [{r['low']:.0%}, {r['high']:.0%}]"


def _pts(e: dict) -> str:
    return f"{100 * e['estimate']:+.1f} [{100 * e['low']:+.1f}, {100 * e['high']:+.1f}]"


def _includes_zero(e: dict) -> bool:
    return e["low"] <= 0 <= e["high"]


def trend_sentences(s: dict[str, Any]) -> list[str]:
    """Whether this run shows the study's trends, in plain words, from the intervals."""
    out = []
    base = s["design"]["baseline"]
    for name, c in s["comparisons"].items():
        d = c["difference"]
        if _includes_zero(d):
            verdict = "not distinguishable from it (the paired interval includes zero)"
        else:
            verdict = "above it" if d["estimate"] > 0 else "BELOW it"
        out.append(f"`{name}` vs `{base}`: {_pts(d)} pts, {verdict}.")
    if s["effects"] is not None:
        for factor, e in s["effects"]["overall"].items():
            if " x " in factor:
                what = "interaction"
                sign = "the factors' effects do not differ detectably" if _includes_zero(e) else "they interact"
            else:
                what = f"main effect of {factor}"
                sign = (
                    "intervals overlap zero: a trend at most, not a definitive gap"
                    if _includes_zero(e)
                    else ("grounded above ungrounded" if e["estimate"] > 0 else "grounded BELOW ungrounded")
                )
            out.append(f"The {what}: {_pts(e)} pts; {sign}.")
    return out


def reproduces(s: dict[str, Any]) -> str:
    """One sentence: does the run reproduce co-training above real-only and grounded above ungrounded?"""
    cot = [c["difference"]["estimate"] for c in s["comparisons"].values()]
    checks = {"every co-trained policy scores above the baseline": bool(cot) and all(d > 0 for d in cot)}
    if s["effects"] is not None:
        for factor, e in s["effects"]["overall"].items():
            if " x " not in factor:
                checks[f"{factor} raises success"] = e["estimate"] > 0
    held = [k for k, v in checks.items() if v]
    failed = [k for k, v in checks.items() if not v]
    if not failed:
        return "This run shows the study's trends in its point estimates (" + "; ".join(held) + "); see the intervals."
    return (
        "This run does NOT reproduce the study's trends in full: "
        + "; ".join(f"not so: {k}" for k in failed)
        + (f" (holds: {'; '.join(held)})" if held else "")
        + "."
    )


def report_blocks(s: dict[str, Any], header: dict[str, str]) -> list[Block]:
    """The report's blocks, from ``results.json`` (``s``) and the run's ``header`` (command, commit, ...)."""
    p, pol = s["profile"], s["policies"]
    blocks: list[Block] = [
        Heading(f"r2s2r study: {s['design']['name']} design, {p['name']} profile, lab {p['lab']}", 1),
        Bullets(
            (
                *(f"{k}: {v}" for k, v in header.items()),
                f"design: {s['design']['summary']}",
                f"sizes: {p['n_real']} real demonstrations; {p['n_sim']} simulated trajectories per configuration; "
                f"preset `{p['preset']}` for {p['train_steps'] or 'its default'} steps, real share {p['ratio']} of "
                f"every co-training batch; {sum(p['trials'][k] for k in KINDS)} lab trials per policy (trial list "
                f"{s['trial_list']}), at most {p['max_duration']} s each",
            )
        ),
        Heading("Success on the lab (95 % Wilson intervals)"),
        table(
            ["policy", "sim data", "overall", "nominal", "shifted"],
            [
                [
                    n,
                    ", ".join(v["sims"]) or "none",
                    fmt_rate(v["overall"]),
                    fmt_rate(v["nominal"]),
                    fmt_rate(v["shifted"]),
                ]
                for n, v in pol.items()
            ],
        ),  # fmt: skip
        Figure("success.png", "success"),
        Heading("Per-condition successes"),
        table(
            ["policy", *(LABELS[k] for k in KINDS), "failure modes"],
            [
                [
                    n,
                    *(
                        f"{v['by_kind'][k]['successes']}/{v['by_kind'][k]['trials']}" if k in v["by_kind"] else "-"
                        for k in KINDS
                    ),
                    ", ".join(f"{f} {c}" for f, c in v["failures"].items()) or "none",
                ]
                for n, v in pol.items()
            ],
        ),  # fmt: skip
        Heading(f"Against `{s['design']['baseline']}`, trial by trial"),
        table(
            [
                "policy",
                "difference (pts) [95 % Newcombe CI]",
                "trials only it won / only the baseline won",
                "exact McNemar p",
            ],
            [
                [n, _pts(c["difference"]), f"{c['only_policy']} / {c['only_baseline']}", f"{c['p_value']:.3g}"]
                for n, c in s["comparisons"].items()
            ],
        ),  # fmt: skip
    ]
    if s["effects"] is not None:
        a, b = s["factors"]
        blocks += [
            Heading("Grounding effects (2x2)"),
            Text(
                (
                    f"Cells (level 0 = ungrounded, 1 = grounded; {a} x {b}): "
                    + ", ".join(f"{lvl} `{c}`" for lvl, c in zip(("00", "01", "10", "11"), s["cells"], strict=True))
                    + ". A main effect is the change in success from ungrounded to grounded averaged over the other "
                    "factor; the interaction is how much more one helps when the other is grounded. 95 % MOVER-Wilson "
                    "intervals, treating the four policies as independent samples (conservative for paired trials).",
                )
            ),
            table(
                ["effect (pts)", "overall", "nominal", "shifted"],
                [
                    [k, *(_pts(s["effects"][sub][k]) if sub in s["effects"] else "-" for sub in SUBSETS)]
                    for k in s["effects"]["overall"]
                ],
            ),  # fmt: skip
        ]
    blocks += [Heading("What this run shows"), Bullets(tuple(trend_sentences(s))), Text((reproduces(s),))]
    return blocks + clip_blocks(s) + agreement_blocks(s) + _grounding_blocks(s)


def report_markdown(s: dict[str, Any], header: dict[str, str]) -> str:
    """``report.md``."""
    return to_markdown(report_blocks(s, header))


def condition_words(c: dict[str, Any]) -> str:
    """A trial's condition values (``Condition`` as JSON), in words."""
    tint = "/".join(f"{g:.2f}" for g in c["light_tint"])
    return (
        f"{c['object']}, belt {c['belt_speed']:.3f} m/s, light x{c['light_scale']:.2f} (tint {tint}, azimuth "
        f"{c['light_azimuth']:+.2f} rad), start {c['start_x']:+.3f} m, lateral {c['lateral']:+.3f} m, "
        f"yaw {c['yaw']:+.2f} rad"
    )


def outcome_words(clip: dict[str, Any]) -> str:
    """``success`` or ``failure: <mode>``, and when the trial ended."""
    what = "success" if clip["success"] else f"failure: {clip['failure']}"
    return f"{what}, ended at {clip['duration']:.1f} s"


def clip_blocks(s: dict[str, Any]) -> list[Block]:
    """Filmed lab trials per policy: a success and a failure per condition kind where there are any."""
    videos = s["videos"]
    blocks: list[Block] = [
        Heading("Rollouts on the lab"),
        Text(
            (
                "Per policy and condition kind, one trial that succeeded and one that failed, where there are any "
                f"({videos['rule']}); each was run again with its whole wave and repeated its recorded rollout "
                "exactly. Head-left and right-wrist cameras, side by side.",
            )
        ),
    ]
    unfilmed = [p for p in s["policies"] if p not in videos["policies"]]
    if unfilmed:
        film = s["profile"].get("film", "all")
        blocks.append(Text((f"Not filmed (the profile's film setting, {film}): {', '.join(unfilmed)}.",)))
    for policy, clips in videos["policies"].items():
        blocks.append(
            Clips(
                policy,
                tuple(
                    Clip(c["trial"], LABELS[c["kind"]], condition_words(c["condition"]), outcome_words(c), c["video"])
                    for c in clips
                ),
            )
        )
    return blocks


def _grounding_blocks(s: dict[str, Any]) -> list[Block]:
    cal = s["calibration"]
    return [
        Heading("Grounding mismatch (measured on lab data; lower is better)"),
        table(
            ["group", "item", "unit", "ungrounded", "grounded"],
            [[r["group"], r["item"], r["unit"], f"{r['ungrounded']:.3g}", f"{r['grounded']:.3g}"] for r in cal["rows"]],
        ),
        Text(
            (
                "Grounded world closer on every item of: "
                + ", ".join(f"{g} {'yes' if ok else '**no**'}" for g, ok in cal["grounded_closer"].items())
                + ".",
            )
        ),
        Heading("Simulated data per configuration"),
        Text(
            (
                "Policy frames rendered "
                + (
                    "with shadows and anti-aliasing, as the lab twin draws (`r2s2r generate --shadows`)."
                    if s.get("profile", {}).get("sim_data_shadows", False)
                    else "lean: no shadows, no anti-aliasing (the worlds' own settings)."
                ),
            )
        ),
        table(
            [
                "configuration",
                "admitted / attempts",
                "admission rate",
                "failure reasons",
                "admitted per hour per worker",
                "overhead over physics + render",
            ],
            [
                [
                    c,
                    f"{g['admitted']}/{g['attempts']}",
                    f"{g['admission_rate']:.0%}",
                    ", ".join(f"{k} {v}" for k, v in g["failures"].items()) or "none",
                    f"{g['admitted_per_hour_per_worker']:.0f}",
                    "n/a" if g["overhead"] is None else f"{g['overhead']:+.0%}",
                ]
                for c, g in s["generation"].items()
            ],
        ),  # fmt: skip
        Text(
            (
                "Real demonstrations: "
                + "; ".join(f"{d['demos']} in {d['attempts']} teleoperation attempts" for d in s["demos"].values())
                + ".",
            )
        ),
        Heading("Training"),
        table(
            ["policy", "steps", "final loss", "samples seen"],
            [
                [
                    n,
                    t["step"],
                    "-" if t["final_loss"] is None else f"{t['final_loss']:.4f}",
                    ", ".join(f"{k} {v}" for k, v in t["samples"].items()),
                ]
                for n, t in s["training"].items()
            ],
        ),  # fmt: skip
        Figure("training.png", "training"),
        Heading("Stages: time and machine"),
        Text(
            (
                "Expected: the plan's estimate from the costs in `r2s2r.study.costs.COST_S`; measured / expected",
                "far from 1 means the estimate (or the machine's load) is off.",
            )
        ),
        table(
            ["stage", "expected s", "measured s", "measured / expected", "cached this run", "machine"],
            [
                [
                    r["stage"],
                    f"{r['expected_s']:.0f}",
                    f"{r['seconds']:.0f}",
                    f"{r['seconds'] / r['expected_s']:.2f}" if r["expected_s"] > 0 else "-",
                    "yes" if r["cached"] else "no",
                    r["machine"],
                ]
                for r in s["stages"]
            ],
        ),
    ]


def agreement_blocks(s: dict[str, Any]) -> list[Block]:
    """ "Can the simulator stand in for the lab?": every policy's success in the lab and in each
    simulated world on the same trial list, and per world Pearson r and MMRV (SIMPLER) with intervals:
    over the study's policies, and over them with the reference policies (anchors) where the study ran any."""
    a, anchored = s.get("agreement"), s.get("agreement_anchored")
    if a is None:
        return []
    study = set(a["policies"])
    anchors = [p for p in anchored["policies"] if p not in study] if anchored else []

    def verdicts(t: dict, over: str) -> list[str]:
        out = []
        for w, g in t["agreements"].items():
            r, m = g["pearson"], g["mmrv"]
            holds = r is not None and r >= 0.9 and m <= 0.05
            out.append(f"{w}, {over}: {'meets' if holds else 'does not meet'} the bar of r >= 0.9 and MMRV <= 0.05")
        return out

    intro = (
        f"Each of the {len(a['policies'])} study policies ran the lab's very trial list (same conditions, objects, "
        "belt speeds and seeds) in the grounded and the ungrounded simulated world (`r2s2r eval --world`), "
        + (
            "rendered with shadows and anti-aliasing (`--shadows`: the lighting was fitted on shadowed renders)."
            if s.get("profile", {}).get("sim_eval_shadows", False)
            else "rendered lean (no shadows, no anti-aliasing)."
        )
    )
    blocks: list[Block] = [Heading("Can the simulator stand in for the lab?")]
    if anchors:
        intro += (
            f" So did the anchor policies {', '.join(f'`{p}`' for p in anchors)} (not study policies: reference "
            "policies, `StudyProfile.anchors`, and the baseline stopped early in its own training, `name@step`, "
            "`StudyProfile.anchor_steps`): they give the ranking the spread of success SIMPLER's statistics need. "
            "The agreement is given over the study's policies alone, then with the anchors."
        )
        blocks += [Text((intro,)), table(*success_rows(anchored))]
    else:
        intro += " No anchor policies (random, scripted) were added, so the spread is the study's own."
        blocks += [Text((intro,)), table(*success_rows(a))]
    blocks += [Text(("Over the study's policies:",)), table(*agreement_rows(a))]
    if anchors:
        blocks += [Text((f"Over the study's policies and {', '.join(anchors)}:",)), table(*agreement_rows(anchored))]
    notes = [*pearson_notes(a), *(pearson_notes(anchored) if anchors else [])]
    lines = verdicts(a, "study policies") + (verdicts(anchored, "with the anchors") if anchors else [])
    return [
        *blocks,
        Text((AGREEMENT_NOTE, *notes)),
        Bullets(tuple(lines)),
        Figure("agreement.png", "sim vs lab success per policy" + (" (anchors included)" if anchors else "")),
    ]
