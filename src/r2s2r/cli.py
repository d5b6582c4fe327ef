"""The ``r2s2r`` command: one subcommand per stage, built from typed functions with tyro.

r2s2r cell show [--lab SEED] [--condition KIND] [--seed N] [--world FILE] --out PNG
r2s2r data export DIR --format lerobot --out OUT [--crf N]
r2s2r eval --policy CKPT|scripted|random [--lab SEED] [--world FILE] --out DIR
r2s2r eval compare DIR DIR ...
r2s2r train heldout --policy RUN --demos DIR [--steps N ...]
r2s2r study run [--profile smoke|quick|paper] [--design NAME] [--lab SEED] [--out DIR]
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import tyro

from r2s2r.calibrate.commands import calibrate_command
from r2s2r.errors import R2S2RError
from r2s2r.evaluate.commands import eval_command, eval_compare_command
from r2s2r.files import output_dir, output_file
from r2s2r.generate.commands import generate_command
from r2s2r.generate.one import generate_one_command
from r2s2r.study.commands import study_run_command
from r2s2r.train.commands import heldout_command, train_command


def cell_show(
    out: Path,
    lab: int = 0,
    condition: str = "nominal",
    seed: int = 0,
    world: Path | None = None,
    size: Annotated[int, tyro.conf.arg(help="policy-view size; 0 shows full sensor resolution")] = 0,
) -> None:
    """Contact sheet of every camera, simulated cell and lab twin side by side, as a PNG.

    Args:
        out: PNG file to write.
        lab: Seed of the lab twin.
        condition: Condition kind: nominal, lighting, belt_speed, novel_object or combined.
        seed: Seed of the condition draw (object, pose, belt speed, lighting).
        world: WorldParams JSON for the simulated side (default: the nominal spec sheet).
        size: Render size of each view in px; 0 shows full sensor resolution.
    """
    import numpy as np
    from rich.console import Console

    from r2s2r import atomic
    from r2s2r.lab.twin import LabTwin
    from r2s2r.world.cell import CellConfig, SimCell
    from r2s2r.world.conditions import sample_condition
    from r2s2r.world.params import WorldParams
    from r2s2r.world.sheet import contact_sheet

    output_file(out, "a contact sheet image", "--out", suffix=".png", create=False)
    if size != 0 and not 16 <= size <= 1024:
        raise R2S2RError(f"--size: expected 0 (full resolution) or 16..1024 px, got {size}")
    params = WorldParams.load(world, "--world") if world is not None else WorldParams.nominal()
    cond = sample_condition(condition, np.random.default_rng(seed))
    view = None if size == 0 else (size, size)
    sim = SimCell(params, CellConfig())
    twin = LabTwin(lab)
    sim.reset(cond, np.random.default_rng(seed))
    twin.reset(cond, seed)
    cams = [c.name for c in params.cameras]
    columns = {
        "sim": {c: sim.render(c, view) for c in cams},
        f"lab {lab}": {c: twin.capture(c) if view is None else _resize(twin.capture(c), view) for c in cams},
    }
    world_name = "nominal" if world is None else world.name
    title = (
        f"{cond.kind}: {cond.object}, belt {cond.belt_speed:.3f} m/s, light x{cond.light_scale:.2f}"
        f" | sim world {world_name}"
    )
    atomic.write_bytes(out, contact_sheet(columns, title))
    sim.close()
    Console(stderr=True).print(f"wrote {out} ({len(cams)} cameras, sim vs lab {lab})")


def _resize(img, size):
    import cv2

    return cv2.resize(img, size, interpolation=cv2.INTER_AREA)


def demos_collect(
    out: Path,
    lab: int = 0,
    n: int = 100,
    seed: int = 0,
    workers: int = 1,
    image_size: int = 48,
    max_attempts: int | None = None,
    perturb_std: float = 0.0,
    perturb_tau: float = 0.5,
    takeover: Path | None = None,
    takeover_share: float = 0.5,
    takeover_window: tuple[float, float] = (2.0, 5.0),
) -> None:
    """Collect N successful teleoperated demonstrations on the lab twin (resumes an existing DIR).

    Args:
        out: Dataset folder to write (created, or resumed if it holds an earlier run).
        lab: Seed of the lab twin.
        n: Number of successful demonstrations wanted.
        seed: Collection seed (conditions and the operator's variability).
        workers: Lab processes collecting in parallel.
        image_size: Side of the recorded policy images, px: the training preset's (48 for cpu, 96 for gpu).
        max_attempts: Give up after this many attempts (default 4 N).
        perturb_std: DART: std (rad) of a drifting offset added to the arm targets sent to the robot,
            not to the recorded actions, so the demos show the way back to the path (0: none).
        perturb_tau: DART: correlation time of that offset, s.
        takeover: HG-DAgger: a trained policy (run or step folder) that drives a share of the attempts
            until the operator takes over; only the operator's correction is recorded.
        takeover_share: Fraction of attempts the policy drives first.
        takeover_window: Trial time (s) the takeover is drawn in, uniformly: START END.
    """
    from rich.console import Console

    from r2s2r.behavior.demos import DemoConfig, collect_demos
    from r2s2r.behavior.perturb import Perturbation
    from r2s2r.behavior.takeover import Takeover
    from r2s2r.lab.twin import LabTwin
    from r2s2r.progress import count_progress
    from r2s2r.world.cell import CellConfig

    perturb = Perturbation(perturb_std, perturb_tau) if perturb_std else None
    handover = None
    if takeover is not None:
        handover = Takeover(takeover, takeover_share, takeover_window)
    config = DemoConfig(n=n, seed=seed, workers=workers, max_attempts=max_attempts, perturb=perturb, takeover=handover)
    output_dir(out, "a dataset folder", "--out", create=False)
    cell = LabTwin(lab, CellConfig(image_size=image_size))
    console = Console(stderr=True)
    with count_progress("demos", console) as bar:
        task = bar.add_task("demos", total=n, status="")

        def show(attempt, demos, attempts):
            bar.update(task, completed=demos, status=f"attempts {attempts}, success {demos / attempts:.0%}")

        stats = collect_demos(cell, out, config, lab_seed=lab, on_attempt=show)
    fails = ", ".join(f"{k} {v}" for k, v in sorted(stats.failures.items())) or "none"
    console.print(
        f"{stats.demos} demonstrations in {stats.attempts} attempts: attempt success rate "
        f"{stats.success_rate:.0%} (failures this run: {fails}); safety-filter interventions: "
        f"{sum(stats.safety.values())}; {stats.wall_time:.0f} s -> {out}"
    )


def demos_label(demos: Path, calibration: Path, out: Path) -> None:
    """Copy demonstrations with per-frame object-state labels from their stereo pairs (resumes DIR).

    The labels (obs/object_state: position in the belt frame, yaw, belt speed, which object) train a
    policy's auxiliary object-state head (PolicyConfig.object_state); see r2s2r.behavior.object_labels.

    Args:
        demos: Demonstration dataset (r2s2r demos collect).
        calibration: Calibration folder of the same lab (r2s2r calibrate): its world.json.
        out: Dataset folder to write (created, or resumed).
    """
    from rich.console import Console

    from r2s2r.behavior.object_labels import label_with_progress
    from r2s2r.files import input_dir
    from r2s2r.world.params import WorldParams

    input_dir(demos, "a demonstration dataset", "--demos")
    input_dir(calibration, "a calibration folder", "--calibration")
    world = WorldParams.load(Path(calibration) / "world.json", "--calibration")
    output_dir(out, "a dataset folder", "--out", create=False)
    console = Console(stderr=True)
    label_with_progress(demos, world, out, console)
    console.print(f"labelled demonstrations -> {out}")


def data_check(path: tyro.conf.Positional[Path]) -> None:
    """Verify a dataset's schema and checksums; names any corrupt shard.

    Args:
        path: Dataset folder.
    """
    from r2s2r.data.commands import data_check as run

    run(path)


def data_show(path: tyro.conf.Positional[Path], out: Path | None = None) -> None:
    """Summarise a dataset (episodes, frames, conditions, success, provenance) and draw sample frames.

    Args:
        path: Dataset folder.
        out: PNG of sample frames (default: DIR/samples.png).
    """
    from r2s2r.data.commands import data_show as run

    run(path, out)


def data_export(
    path: tyro.conf.Positional[Path],
    format: str,
    out: Path,
    crf: int | None = None,
    task: str | None = None,
) -> None:
    """Export a dataset to another tool's format: LeRobot v3.0 (parquet + MP4 videos).

    Args:
        path: Dataset folder.
        format: Output format: lerobot.
        out: New (or empty) folder to write; a failed export leaves none.
        crf: Encode the videos lossy (H.264 yuv420p at this rate factor, e.g. 23: ~8x smaller, a mean
            error of 3-4.5 levels) instead of lossless (every pixel kept).
        task: The task description stored with every episode (default: the cell's pick-and-sort task).
    """
    from r2s2r.data.commands import data_export as run

    run(path, format, out, crf, task)


def world_ungrounded(out: Path, seed: int = 0) -> None:
    """Write the ungrounded world: the spec sheet with tape-measured camera, conveyor and bin poses.

    Args:
        out: WorldParams JSON file to write.
        seed: Seed of the tape-measure errors.
    """
    from rich.console import Console

    from r2s2r.calibrate.ungrounded import ungrounded_world

    output_file(out, "a WorldParams file", "--out", suffix=".json", create=False)
    params = ungrounded_world(seed)
    params.save(out)
    Console(stderr=True).print(f"wrote {out} (ungrounded world, seed {seed}, hash {params.content_hash()})")


# A group of subcommands (``r2s2r data check``) or a single command (``r2s2r generate-one``). In a
# group, the key "" is the default subcommand: it runs when no subcommand name follows the group
# (``r2s2r eval --policy ...`` next to ``r2s2r eval compare ...``).
COMMANDS: dict[str, dict[str, Callable[..., None]] | Callable[..., None]] = {
    "cell": {"show": cell_show},
    "demos": {"collect": demos_collect, "label": demos_label},
    "data": {"check": data_check, "show": data_show, "export": data_export},
    "world": {"ungrounded": world_ungrounded},
    "calibrate": calibrate_command,
    "generate": generate_command,
    "generate-one": generate_one_command,
    "train": {"": train_command, "heldout": heldout_command},
    "eval": {"": eval_command, "compare": eval_compare_command},
    "study": {"run": study_run_command},
}


def _pick(kind: str, name: str | None, known: dict) -> Callable | dict:
    if name is None or name in ("-h", "--help"):
        rows = []
        for k, v in known.items():
            subs = v.items() if isinstance(v, dict) else [("", v)]
            for sub, func in subs:
                summary = (func.__doc__ or "").strip().splitlines()[0]
                rows.append(f"  {(kind + k + ' ' + sub).strip():<22} {summary}")
        print(f"usage: r2s2r {kind}<command> ... [--help]\n\ncommands:\n" + "\n".join(rows))
        raise SystemExit(0 if name else 2)
    if name not in known or not name:
        names = [k for k in known if k]  # "" (a group's default subcommand) is not a name
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise R2S2RError(f"unknown command {kind}{name!r}; expected one of {sorted(names)}.{hint}")
    return known[name]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        group = _pick("", argv[0] if argv else None, COMMANDS)
        if callable(group):
            tyro.cli(group, args=argv[1:], prog=f"r2s2r {argv[0]}")
        elif "" in group and (len(argv) == 1 or argv[1].startswith("-")):
            tyro.cli(group[""], args=argv[1:], prog=f"r2s2r {argv[0]}")
        else:
            func = _pick(f"{argv[0]} ", argv[1] if len(argv) > 1 else None, group)
            tyro.cli(func, args=argv[2:], prog=f"r2s2r {argv[0]} {argv[1]}")
    except R2S2RError as e:
        print(f"r2s2r: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
