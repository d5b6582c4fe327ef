"""How far a simulated world's policy images are from the lab's, rendered lean and with shadows.

    .venv/bin/python benchmarks/sim_image_gap.py --calibration DIR [--lab 0] [--nominal 6] [--lighting 4] [--size 48]

``DIR`` is an ``r2s2r calibrate`` folder of that lab (its ``world.json`` and ``ungrounded.json``).
The first trials of the lab's own trial list (its conditions and seeds) are reset in the lab twin and in
each world, the robot commanded to hold its home pose for one step, and the three policy cameras read
through the sensors on both sides; the table gives the mean absolute difference per camera in 8-bit
grey levels, averaged over the trials, for the world's own lean renders and for ``--shadows`` renders
(``r2s2r.world.SHADOWED_RENDER``, what a study's sim evaluations draw), and their ratio. The object's
placement and the lighting of a trial come from the trial list, so a calibrated world should match the
lab's image wherever its parameters do; what is left is rendering and the parameters' residual error.
Nothing the lab hides is read.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco loads)

# isort: split
import mujoco
import numpy as np
from rich.console import Console
from rich.table import Table

from r2s2r.evaluate.cells import LabCell, WorldCell
from r2s2r.evaluate.trials import TrialPlan, make_trials
from r2s2r.generate.commands import WORLD_FILE_OF
from r2s2r.world.cell import CellConfig
from r2s2r.world.engine import home_command


def frames(build, trials, config: CellConfig) -> list[dict[str, np.ndarray]]:
    """The policy cameras' images after one held step from each trial's reset, in a cell of ``build``."""
    out = []
    for t in trials:
        cell = build(config)
        cell.reset(t.condition, t.seed)
        obs = cell.act(home_command())
        out.append({c: obs[c].astype(np.float64) for c in config.cameras})
        cell.close()
    return out


def gap(lab: list[dict], sim: list[dict], camera: str) -> float:
    return float(np.mean([np.abs(a[camera] - b[camera]).mean() for a, b in zip(lab, sim, strict=True)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path, required=True)
    ap.add_argument("--lab", type=int, default=0)
    ap.add_argument("--nominal", type=int, default=6)
    ap.add_argument("--lighting", type=int, default=4)
    ap.add_argument("--size", type=int, default=48, help="policy image side, px (the cpu preset's 48)")
    args = ap.parse_args()
    plan = TrialPlan(nominal=args.nominal, lighting=args.lighting, belt_speed=0, novel_object=0, combined=0)
    trials = list(make_trials(args.lab, plan))
    config = CellConfig(image_size=args.size)
    cams = config.cameras
    lab = frames(LabCell(args.lab).build, trials, config)
    table = Table(
        title=f"policy images, {args.size} px: mean |sim - lab| in grey levels, lab {args.lab}, {len(trials)} trials"
    )
    for col in ("world", "camera", "lean", "with shadows", "shadows / lean"):
        table.add_column(col)
    for world, name in WORLD_FILE_OF.items():
        path = args.calibration / name
        lean = frames(WorldCell.load(path, "--calibration").build, trials, config)
        shadowed = frames(WorldCell.load(path, "--calibration", shadows=True).build, trials, config)
        for c in cams:
            a, b = gap(lab, lean, c), gap(lab, shadowed, c)
            table.add_row(world, c, f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}")
    console = Console()
    console.print(table)
    console.print(f"machine: {platform.machine()}, python {platform.python_version()}, mujoco {mujoco.__version__}")


if __name__ == "__main__":
    main()
