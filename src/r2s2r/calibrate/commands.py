"""``r2s2r calibrate``: ground a simulator in a lab cell and write the grounded world and its report."""

from __future__ import annotations

from pathlib import Path


def calibrate_command(out: Path, lab: int = 0, seed: int = 0, ungrounded_seed: int = 0) -> None:
    """Calibrate the simulator from measurements of the lab twin: cameras, registration, belt, masses,
    arm drive, photometry; writes DIR/world.json, the mismatch report and the raw records.

    Args:
        out: Folder to write (world.json, ungrounded.json, report.md, report.json, scene.png, records/).
        lab: Seed of the lab twin to calibrate.
        seed: Seed of the calibration's own choices (board poses of the camera sessions).
        ungrounded_seed: Seed of the ungrounded world the report compares with (tape-measure errors).
    """
    import time

    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from r2s2r.calibrate.records import write_calibration
    from r2s2r.calibrate.run import STAGES, CalibrationConfig, calibrate_lab
    from r2s2r.calibrate.ungrounded import ungrounded_world
    from r2s2r.files import output_dir
    from r2s2r.lab.twin import LabTwin

    output_dir(out, "a calibration folder", "--out", create=False)
    console = Console(stderr=True)
    twin = LabTwin(lab)
    ungrounded = ungrounded_world(ungrounded_seed)
    t0 = time.perf_counter()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as bar:
        tasks = {s: bar.add_task(f"[dim]{s}", start=False, total=1) for s in STAGES}

        def show(stage: str, event: str, seconds: float) -> None:
            if event == "start":
                bar.start_task(tasks[stage])
                bar.update(tasks[stage], description=stage)
            else:
                bar.update(tasks[stage], completed=1, description=f"[green]{stage}[/] ({seconds:.0f} s)")
                bar.stop_task(tasks[stage])

        cal = calibrate_lab(twin, CalibrationConfig(seed=seed), on_stage=show)
        write = bar.add_task("report", total=1)
        report = write_calibration(cal, ungrounded, out)
        bar.update(write, completed=1)
    worse = [g for g, ok in report["grounded_closer"].items() if not ok]
    verdict = "closer to the lab on every group" if not worse else f"NOT closer on: {', '.join(worse)}"
    console.print(
        f"grounded world {cal.world.content_hash()} -> {out / 'world.json'}: {verdict}; "
        f"report {out / 'report.md'} ({time.perf_counter() - t0:.0f} s)"
    )
