"""``r2s2r eval`` (evaluate one policy on a lab, or on its trials in a simulated world) and
``r2s2r eval compare`` (a table across policies)."""

from __future__ import annotations

from pathlib import Path

import tyro


def eval_command(
    policy: str,
    out: Path,
    lab: int = 0,
    workers: int = 1,
    batch: int = 4,
    seed: int = 0,
    nominal: int = 24,
    lighting: int = 7,
    belt_speed: int = 7,
    novel_object: int = 6,
    combined: int = 6,
    trial_seed: int = 0,
    max_duration: float = 25.0,
    videos: bool = False,
    ensemble: float | None = None,
    shaping: bool = True,
    world: Path | None = None,
    shadows: bool = False,
    replan: int | None = None,
    inpaint: bool = False,
) -> None:
    """Evaluate a policy on the lab's fixed trial list; writes DIR/results.json and DIR/results.md (resumes).

    With --world FILE the same trials (conditions, objects, belt speeds, seeds of --lab's list) run in
    the simulated world of that WorldParams JSON (grounded or ungrounded) instead of the lab twin.

    Also: `r2s2r eval compare DIR DIR ...` prints a table across evaluated policies.

    Args:
        policy: 'scripted' (the teleop operator), 'random', 'hold' (hold still), or a checkpoint directory.
        out: Folder for results.json, results.md, finished waves and videos (rerun to resume).
        lab: Seed of the lab twin.
        workers: Lab processes stepping trials in parallel (results do not depend on it).
        batch: Trials run at once; one policy forward pass per control step serves all of them.
        seed: Seed of the policy's random draws.
        nominal: Nominal trials.
        lighting: Lighting-shift trials.
        belt_speed: Fast-belt trials.
        novel_object: Novel-object trials.
        combined: Trials combining two or three shifts.
        trial_seed: Seed of the trial list's draw (the same for every policy).
        max_duration: Trial time limit, s.
        videos: Write an MP4 of every trial (head-left and right-wrist captures; slow).
        ensemble: How overlapping action chunks are joined: weights exp(-m i), i = 0 the oldest chunk
            covering a step (ACT's temporal ensembling, m = this value); None executes the newest chunk alone.
        shaping: A checkpoint's commands pass the teleop system's shaping before the lab (arm steps within
            90 % of the rated joint speeds, targets inside the joint ranges), as the operator's did;
            --no-shaping sends them raw (the lab's safety filter still clips, and counts).
        world: A WorldParams JSON file (e.g. a calibration's world.json): run --lab's trials in this simulated
            world instead of the lab twin; results.json records the file and its content hash.
        shadows: With --world: render that world with shadows and anti-aliasing (1024 px shadow map, 2x
            MSAA; the photometric calibration fits the lighting on shadowed renders) instead of the file's
            own settings (a calibration writes the lean ones it generates with). What a study's sim
            evaluations do.
        replan: A checkpoint policy executes this many actions of each chunk before predicting again
            (default: its trained config's execute_steps; 1 <= replan <= its action horizon).
        inpaint: A checkpoint policy's re-plans are inpainted toward the rest of the chunk being executed
            (real-time chunking, Black et al. 2025: guided sampling with a soft mask over the overlap)
            instead of replacing it; keeps the plan of a grasp across re-plans. Not with --ensemble.
    """
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from r2s2r.errors import ConfigError
    from r2s2r.evaluate.cells import WorldCell
    from r2s2r.evaluate.policies import resolve_policy
    from r2s2r.evaluate.runner import EvalConfig, evaluate
    from r2s2r.evaluate.tables import results_table
    from r2s2r.evaluate.trials import TrialPlan
    from r2s2r.files import output_dir
    from r2s2r.policy.policy import Policy

    output_dir(out, "an evaluation folder", "--out", create=False)  # before any trial runs
    if shadows and world is None:
        raise ConfigError("--shadows: applies to a simulated world; give --world FILE")
    sim = WorldCell.load(world, "--world", shadows) if world is not None else None
    plan = TrialPlan(nominal, lighting, belt_speed, novel_object, combined, trial_seed)
    config = EvalConfig(plan, seed, batch, workers, max_duration, videos, ensemble, shaping, inpaint)
    pol = resolve_policy(policy)
    if inpaint and not isinstance(pol, Policy):
        raise ConfigError(f"--inpaint: applies to a checkpoint policy, not to {policy!r}")
    if replan is not None:
        if not isinstance(pol, Policy):
            raise ConfigError(f"--replan {replan}: applies to a checkpoint policy, not to {policy!r}")
        pol = pol.replanning_every(replan)
    console = Console(stderr=True)
    columns = (TextColumn("trials"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[score]}"))
    with Progress(*columns, TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("trials", total=plan.total, score="")
        wins = [0, 0]

        def show(o) -> None:
            wins[0] += o.success
            wins[1] += 1
            bar.update(task, advance=1, score=f"success {wins[0]}/{wins[1]}")
            if not console.is_terminal:  # a log file, CI, nohup: the bar is not drawn, so say it in lines
                console.print(
                    f"trial {o.index} ({o.kind}): {'success' if o.success else o.failure}; "
                    f"{wins[1]}/{plan.total} done, success {wins[0]}/{wins[1]}",
                    soft_wrap=True,
                )

        res = evaluate(pol, lab, config, out=out, name=policy, on_trial=show, world=sim)
    res.save(out)
    console.print(Markdown(results_table(res)))
    t = res.timing
    console.print(
        f"{len(res.outcomes)} trials in {t['wall_seconds']:.0f} s (compute: lab {t['lab_seconds']:.0f} s, "
        f"policy {t['trial_policy_seconds'] + t['chunk_policy_seconds']:.0f} s) -> {out}"
    )


def eval_compare_command(
    results: tyro.conf.Positional[tuple[Path, ...]],
    factors: tuple[str, str] | None = None,
    out: Path | None = None,
) -> None:
    """Table across evaluated policies: per-condition successes, Wilson intervals, paired tests.

    Args:
        results: Evaluation folders (or results.json files); the first is the reference.
        factors: Names of a 2x2 design's factors A and B; then give 4 results, in the order
            A0B0 A0B1 A1B0 A1B1, for each factor's main effect and the interaction.
        out: Also write the table to this markdown file.
    """
    from r2s2r import atomic
    from r2s2r.errors import ConfigError
    from r2s2r.evaluate.compare import design_effects, paired_against_first
    from r2s2r.evaluate.results import EvalResults
    from r2s2r.evaluate.tables import comparison_table, effects_table

    if len(results) < 1:
        raise ConfigError("eval compare: expected at least one evaluation folder")
    loaded = [EvalResults.load(p) for p in results]
    paired = paired_against_first(loaded) if len(loaded) > 1 else None
    text = comparison_table(loaded, paired)
    if factors is not None:
        effects, cells = design_effects(loaded, factors)
        text += "\n" + effects_table(effects, cells)
    print(text, end="")
    if out is not None:
        atomic.write_text(out, text)
