"""``r2s2r generate``: N admitted episodes of one grounding configuration (world x behaviour)."""

from __future__ import annotations

import os
from pathlib import Path

from r2s2r.errors import R2S2RError
from r2s2r.files import output_dir
from r2s2r.generate.mix import ConditionMix

# The study's behaviour configurations and the behaviours that implement them.
BEHAVIOR_OF = {"grounded": "mimic", "ungrounded": "planner"}
WORLD_FILE_OF = {"grounded": "world.json", "ungrounded": "ungrounded.json"}  # in a calibration folder


def resolve_world(world: str, calibration: Path | None, world_file: Path | None) -> Path:
    """The WorldParams file of ``--world`` (grounded | ungrounded): ``--world-file``, or the
    matching file of the ``r2s2r calibrate`` folder ``--calibration``."""
    if world not in WORLD_FILE_OF:
        from r2s2r.errors import UnknownNameError

        raise UnknownNameError("world configuration", world, tuple(WORLD_FILE_OF))
    if world_file is not None:
        return world_file
    if calibration is None:
        raise R2S2RError(
            f"--world {world}: name the world with --calibration DIR (the output of `r2s2r calibrate`, "
            f"holding {WORLD_FILE_OF[world]}) or --world-file FILE"
        )
    path = calibration / WORLD_FILE_OF[world]
    if not path.is_file():
        raise R2S2RError(f"--calibration {calibration}: no {WORLD_FILE_OF[world]} (expected `r2s2r calibrate` output)")
    return path


def progress_status(stats: dict) -> str:
    """The progress bar's status of a generation run: attempts, admission rate, top failure reasons."""
    fails = ", ".join(f"{k} {v}" for k, v in list(stats["failures"].items())[:3])
    return f"attempts {stats['attempts']}, rate {stats['admission_rate']:.0%}" + (f"; {fails}" if fails else "")


def configuration(
    world: str,
    behavior: str,
    world_path: Path,
    demos: Path | None,
    seed: int,
    image_size: int,
    mix: ConditionMix,
    world_option: str | None = None,
    shadows: bool = False,
):
    """The generation spec of one configuration and the manifest's description of it: (spec, info).

    ``behavior`` is grounded, ungrounded or a registered behaviour name; ``world_path`` the
    WorldParams file of ``world`` (grounded | ungrounded), given by ``world_option`` (for messages);
    ``shadows``: its policy frames rendered with ``SHADOWED_RENDER`` (``WorldParams.load``)."""
    from r2s2r.data import Manifest
    from r2s2r.generate.attempt import BehaviorInputs, GenerationSpec
    from r2s2r.generate.one import BEHAVIORS
    from r2s2r.world.cell import CellConfig
    from r2s2r.world.params import WorldParams

    name = BEHAVIOR_OF.get(behavior, behavior)
    if name not in BEHAVIORS:
        from r2s2r.errors import UnknownNameError

        raise UnknownNameError("behavior", behavior, (*BEHAVIOR_OF, *BEHAVIORS))
    if name == "mimic" and demos is None:  # checked here, not first in every worker process
        raise R2S2RError(f"--behavior {behavior} transforms real demonstrations: give their dataset with --demos DIR")
    params = WorldParams.load(world_path, world_option, shadows)
    spec = GenerationSpec(BehaviorInputs(params, demos), BEHAVIORS[name], CellConfig(image_size=image_size), mix, seed)
    info = {
        "kind": "simulated episodes",
        "configuration": {"world": world, "behavior": behavior},
        "behavior": name,
        "world_hash": params.content_hash(),  # of the params as rendered
        "demos_hash": Manifest.load(demos).content_hash() if demos is not None else None,
        "condition_mix": mix.fractions,
        "seed": seed,
        "image_size": image_size,
    }
    if shadows:  # only then: a lean dataset started before the option resumes with the same info
        info["shadows"] = True
    return spec, info


def generate_command(
    out: Path,
    world: str,
    behavior: str,
    n: int = 1500,
    calibration: Path | None = None,
    world_file: Path | None = None,
    demos: Path | None = None,
    seed: int = 0,
    workers: int | None = None,
    executor: str = "local",
    address: str | None = None,
    image_size: int = 96,
    max_attempts: int | None = None,
    mix: ConditionMix = ConditionMix(),
    shadows: bool = False,
) -> None:
    """Generate N admitted simulated episodes of one configuration (resumes an existing DIR).

    Args:
        out: Dataset folder to write (created, or resumed with the same settings).
        world: World configuration: grounded (calibrated) or ungrounded (spec sheet + tape measure).
        behavior: Behaviour configuration: grounded (MimicGen-style from the real demos), ungrounded
            (grasp sampler + motion planner), or a registered behaviour name (e.g. teleop).
        n: Admitted episodes wanted.
        calibration: Output folder of `r2s2r calibrate` (holds world.json and ungrounded.json).
        world_file: WorldParams JSON to use instead of the calibration folder's.
        demos: Real demonstrations dataset (the grounded behaviour transforms them).
        seed: Run seed: attempt k draws everything from (seed, k).
        workers: Worker processes, >= 1 (default: one per core).
        executor: local (processes on this machine) or ray (a Ray cluster; local without --address).
        address: Ray cluster address for --executor ray.
        image_size: Side of the recorded policy images, px.
        max_attempts: Give up after this many attempts (default 5 N).
        mix: Fraction of episodes per condition kind (the same for every configuration).
        shadows: Render the world with shadows and anti-aliasing (1024 px shadow map, 2x MSAA; small
            policy frames 2x2 supersampled with a 256 px map), as the lab twin draws and as the photometric
            calibration fitted the lighting, instead of the file's own settings (a calibration writes lean
            ones); about 2.6 x the time per trajectory (a study's: ``StudyProfile.sim_data_shadows``).
    """
    from rich.console import Console

    from r2s2r.generate.run import RunConfig, generate
    from r2s2r.progress import count_progress

    if workers is not None and workers < 1:
        raise R2S2RError(f"--workers: expected a number of processes >= 1 (omit it for one per core), got {workers}")
    config = RunConfig(
        n=n, workers=workers or os.cpu_count() or 1, executor=executor, address=address, max_attempts=max_attempts
    )
    output_dir(out, "a dataset folder", "--out", create=False)
    path = resolve_world(world, calibration, world_file)
    if demos is not None and not (demos / "manifest.json").is_file():
        raise R2S2RError(f"--demos {demos}: not a dataset folder (no manifest.json)")
    option = "--world-file" if world_file is not None else "--calibration"
    spec, info = configuration(world, behavior, path, demos, seed, image_size, mix, option, shadows)
    name = info["behavior"]
    console = Console(stderr=True)
    console.print(
        f"generate: {n} episodes, world {world} ({path}{', shadows' if shadows else ''}), "
        f"behaviour {behavior} ({name}), {config.workers} {executor} workers -> {out}"
    )
    with count_progress("admitted", console) as bar:
        task = bar.add_task("generate", total=n, status="")

        def show(rec, stats):
            bar.update(task, completed=stats["admitted"], status=progress_status(stats))

        stats = generate(out, spec, config, info, on_attempt=show)
    over = "n/a" if stats["overhead"] is None else f"{stats['overhead']:+.0%}"
    console.print(
        f"{stats['admitted']} admitted of {stats['attempts']} attempts ({stats['admission_rate']:.0%}); "
        f"{stats['admitted_per_hour_per_worker']:.0f} per hour per worker; overhead over physics+render {over}; "
        f"stats in {out / 'stats.json'}"
    )
