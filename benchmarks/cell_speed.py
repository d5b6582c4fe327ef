"""Cell speed: physics steps/s, render ms/frame per camera, and control-step overhead.

    .venv/bin/python benchmarks/cell_speed.py [--steps 2000] [--frames 30] [--controls 40] [--size 48]

The control-step cost of ``SimCell.step`` / ``LabTwin.act`` is compared against its floor measured
in the same run: the raw ``mj_step`` calls for one control period plus the raw render + camera
model of the policy cameras. This machine is shared and noisy: read the ratios, not the times.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco loads)

# isort: split
import mujoco
import numpy as np
from rich.console import Console
from rich.table import Table

from r2s2r.lab.twin import LabTwin, _hidden_params
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import sample_condition
from r2s2r.world.engine import CellEngine, home_command
from r2s2r.world.params import SHADOWED_RENDER, WorldParams
from r2s2r.world.rendering import CellRenderer, block_mean

SHADOWED_ROW = "SimCell.step, with shadows (a study's sim evaluation)"


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def physics_rate(params: WorldParams, steps: int) -> float:
    eng = CellEngine(params)
    eng.apply_condition(sample_condition("nominal", np.random.default_rng(0)))
    eng.step_physics(10)
    t = _median_time(lambda: mujoco.mj_step(eng.model, eng.data, nstep=steps), 3)
    eng.close()
    return steps / t


def render_ms(params: WorldParams, frames: int) -> dict[tuple[str, str], float]:
    eng = CellEngine(params)
    eng.apply_condition(sample_condition("nominal", np.random.default_rng(0)))
    rng = np.random.default_rng(0)
    out = {}
    for cam in ("head_left", "head_right", "right_wrist", "left_wrist"):
        for label, size in (("96x96", (96, 96)), ("full", None)):
            eng.render(cam, size, rng)  # build the context and the camera maps once
            n = frames if size else max(3, frames // 5)
            out[(cam, label)] = 1000 * _median_time(lambda: eng.render(cam, size, rng), n)  # noqa: B023
    eng.close()
    return out


def _draw_as_before(lab: LabTwin) -> None:
    """Benchmark only: make ``lab`` draw every render at its params' quality (1024 px shadows, 2x MSAA),
    as before renders were drawn at their size's quality (``r2s2r.world.rendering.render_quality``)."""
    eng = lab._LabTwin__engine
    for key, (model, data, renderer) in eng._built.items():
        renderer.close()
        eng._built[key] = (model, data, CellRenderer(model, eng.params.cameras, small=0))
    eng.renderer = eng._built[(eng.object_name, eng.target)][2]


def control_cost(
    params: WorldParams, lab_seed: int | None, controls: int, size: int, observe: bool = True, before: bool = False
) -> tuple[float, float]:
    """(median seconds per control step, median seconds of its floor); ``observe`` False: the lab's
    ``act(observe=False)`` (what an evaluation does between re-plans), whose floor is the physics alone;
    ``before``: the lab draws its small renders as it did before (the reference row)."""
    cond = sample_condition("nominal", np.random.default_rng(0))
    if lab_seed is None:
        cell = SimCell(params, CellConfig(image_size=size))
        cell.reset(cond, np.random.default_rng(0))
        act = cell.step
        engine = cell.engine
    else:
        cell = LabTwin(lab_seed, CellConfig(image_size=size))
        cell.reset(cond, 0)
        if before:
            _draw_as_before(cell)
        act = cell.act if observe else lambda a: cell.act(a, observe=False)
        engine = None
    a = home_command()
    step_t = _median_time(lambda: act(a), controls)
    # The floor: a bare engine with the same params, raw mj_step for one period and raw renders.
    eng = engine or (cell._LabTwin__engine if before else CellEngine(params))
    if engine is None and not before:
        eng.apply_condition(cond)
    nstep = int(round(0.1 / params.physics.timestep))
    rng = np.random.default_rng(0)
    cams = CellConfig().cameras if observe else ()
    for c in cams:
        eng.render(c, (size, size), rng)
    renderers = eng.renderer

    def floor() -> None:
        mujoco.mj_step(eng.model, eng.data, nstep=nstep)
        for c in cams:
            pipe = renderers.pipeline(c, (size, size))
            r, k = renderers._renderers[(pipe.render_height, pipe.render_width)]
            r.update_scene(eng.data, camera=c)
            image = r.render()
            pipe.apply(block_mean(image, k) if k > 1 else image, rng)

    floor_t = _median_time(floor, controls)
    return step_t, floor_t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--controls", type=int, default=40)
    ap.add_argument("--lab", type=int, default=0)
    ap.add_argument("--size", type=int, default=48, help="policy image side, px (the cpu preset's 48)")
    args = ap.parse_args()
    console = Console()
    sim, lab = WorldParams.nominal(), _hidden_params(LabTwin(args.lab))
    console.print(
        f"machine: {platform.machine()}, {platform.processor() or platform.platform()}, "
        f"python {platform.python_version()}, mujoco {mujoco.__version__}"
    )

    t = Table(title="Physics (holding home, object riding the belt)")
    for col in ("world", "timestep", "steps/s", "real-time factor"):
        t.add_column(col)
    for name, p in (("sim (nominal)", sim), (f"lab twin {args.lab}", lab)):
        rate = physics_rate(p, args.steps)
        t.add_row(name, f"{p.physics.timestep * 1000:.1f} ms", f"{rate:,.0f}", f"{rate * p.physics.timestep:.1f}x")
    console.print(t)

    t = Table(title="Render ms/frame (MuJoCo render + camera model)")
    for col in ("camera", "view", "sim (no shadows, no MSAA)", "lab (shadows + MSAA)", "lab / sim"):
        t.add_column(col)
    rs, rl = render_ms(sim, args.frames), render_ms(lab, args.frames)
    for key in rs:
        t.add_row(key[0], key[1], f"{rs[key]:.2f}", f"{rl[key]:.2f}", f"{rl[key] / rs[key]:.1f}x")
    console.print(t)

    t = Table(title=f"Control step (one 10 Hz action, 3 policy cameras at {args.size}x{args.size}) vs its floor")
    for col in ("cell", "step ms", "floor ms (raw physics + render)", "ratio", "overhead"):
        t.add_column(col)
    rows = (
        ("SimCell.step", sim, None, True, False),
        (SHADOWED_ROW, sim.replace(render=SHADOWED_RENDER), None, True, False),
        ("LabTwin.act, as before (MSAA, 1024 px shadows)", lab, args.lab, True, True),
        ("LabTwin.act", lab, args.lab, True, False),
        ("LabTwin.act(observe=False)", lab, args.lab, False, False),
    )
    cost = {}
    for name, p, seed, observe, before in rows:
        step_t, floor_t = control_cost(p, seed, args.controls, args.size, observe, before)
        cost[name] = step_t
        t.add_row(
            name,
            f"{step_t * 1000:.1f}",
            f"{floor_t * 1000:.1f}",
            f"{step_t / floor_t:.2f}",
            f"{100 * (step_t / floor_t - 1):+.0f}%",
        )
    console.print(t)
    before, now = cost["LabTwin.act, as before (MSAA, 1024 px shadows)"], cost["LabTwin.act"]
    console.print(
        f"observed lab step at {args.size} px: {now * 1000:.1f} ms = {now / before:.2f} x before "
        f"({before * 1000:.1f} ms)"
    )
    lean, shadowed = cost["SimCell.step"], cost[SHADOWED_ROW]  # what a sim evaluation's renders cost
    console.print(
        f"observed sim step with shadows: {shadowed / lean:.2f} x a lean one, {shadowed / now:.2f} x the lab's"
    )
    # An evaluation of the cpu preset (re-plan every 8 steps, a past frame 5 steps back) observes 2
    # steps of 8: its mean lab step, against observing every step (what evaluation did before).
    observed = 2 / 8
    mix = observed * cost["LabTwin.act"] + (1 - observed) * cost["LabTwin.act(observe=False)"]
    console.print(
        f"evaluation lab step (cpu preset, 2 of 8 steps observed): {mix * 1000:.1f} ms = "
        f"{mix / cost['LabTwin.act']:.2f} x observing every step ({cost['LabTwin.act'] * 1000:.1f} ms)"
    )


if __name__ == "__main__":
    main()
