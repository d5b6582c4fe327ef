"""``r2s2r train``: co-train a policy from the command line, with a progress bar; ``r2s2r train heldout``:
a run's open-loop error on demonstrations it did not train on (``r2s2r.train.heldout``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path


def train_command(
    real: Path,
    out: Path,
    sim: tuple[Path, ...] = (),
    ratio: float | None = None,
    steps: int | None = None,
    preset: str = "cpu",
    seed: int | None = None,
    batch_size: int | None = None,
    device: str = "auto",
    threads: int | None = None,
    tensorboard: bool = False,
) -> None:
    """Co-train a flow-matching policy on real + sim datasets (resumes a run folder that holds a checkpoint).

    Args:
        real: The real-demonstration dataset folder.
        out: Run folder: checkpoints step_*/, 'latest' and (with held-out demos) 'best' (r2s2r.policy.load_policy).
        sim: Simulated dataset folders (zero or more).
        ratio: Real share of every batch, exact per batch (e.g. 0.5); omit for natural proportions.
        steps: Optimiser steps (default: the preset's).
        preset: Named preset: tiny, cpu or gpu.
        seed: Run seed (default: the preset's).
        batch_size: Global batch size (default: the preset's).
        device: auto, cpu, cuda or cuda:N (under torchrun each process takes its LOCAL_RANK GPU).
        threads: torch CPU threads per process (default: the cores per process, r2s2r.train.threads; give 1
            on a machine other jobs keep busy).
        tensorboard: Also write TensorBoard logs to OUT/tensorboard (needs the tensorboard package).
    """
    import torch
    from rich.console import Console

    from r2s2r.files import output_dir
    from r2s2r.progress import count_progress
    from r2s2r.train.loop import require_tensorboard, train
    from r2s2r.train.presets import get_preset
    from r2s2r.train.threads import train_threads

    if tensorboard:
        require_tensorboard()
    output_dir(out, "a training run folder", "--out", create=False)
    chosen = get_preset(preset)
    changes = {k: v for k, v in (("steps", steps), ("seed", seed), ("batch_size", batch_size)) if v is not None}
    tc = dataclasses.replace(chosen.train, ratio=ratio, **changes)
    chosen = dataclasses.replace(chosen, train=tc)
    torch.set_num_threads(train_threads(threads))
    main = int(os.environ.get("RANK", "0")) == 0
    console = Console(stderr=True)
    with count_progress("train", console, disable=not main) as bar:
        task = bar.add_task("train", total=tc.steps, status="")

        def show(step, record):
            if record is not None:
                counts = " ".join(f"{n} {c}" for n, c in record["samples"].items())
                info = f"loss {record['loss']:.4f}  {record['samples_per_s']:.0f} samples/s  [{counts}]"
                if "val_arm" in record:
                    ratio = f"{record['val_arm_ratio']:.2f}"
                    if "val_arm_ratio_lo" in record:  # the 95 % interval over the held-out episodes
                        ratio += f" [{record['val_arm_ratio_lo']:.2f}, {record['val_arm_ratio_hi']:.2f}]"
                    info += f"  held-out arm {record['val_arm']:.3f} rad ({ratio} x hold still)"
                    if "val_object_cm" in record:
                        info += f", object {record['val_object_cm']:.1f} cm"
                bar.update(task, completed=step, status=info)
            else:
                bar.update(task, completed=step)

        result = train(real, sim, out, chosen, device=device, on_step=show, tensorboard=tensorboard)
    if main:
        counts = ", ".join(f"{n} {c}" for n, c in result.samples.items())
        start = f" (resumed at step {result.resumed_from})" if result.resumed_from else ""
        console.print(f"trained {preset} to step {result.step}{start}; samples seen: {counts} -> {result.checkpoint}")


def heldout_command(
    policy: Path,
    demos: Path,
    steps: tuple[int, ...] = (),
    frames: int | None = None,
    seed: int | None = None,
    out: Path | None = None,
) -> None:
    """Open-loop action error of a training run's checkpoints on demonstrations it did not train on.

    The mean absolute error of the first 8 predicted actions (arm and hand, rad) against the recorded ones,
    beside the error of holding still, and their ratio with a 95 % bootstrap interval over the episodes.

    Args:
        policy: A training run folder (r2s2r train --out) or one of its step_* checkpoints.
        demos: Demonstrations (r2s2r demos collect): the run's own training data (its held-out episodes
            are measured, as its training log did) or any other (every episode).
        steps: Checkpoints to measure, by training step (default: the run's best).
        frames: Frames sampled from the episodes (default: the run's probe count on its own data, else 1024).
        seed: Seed of the sampled frames and the sampler's noise (default: the run's).
        out: Also write the rows to this JSON file.
    """
    from rich.console import Console
    from rich.table import Table

    from r2s2r import atomic
    from r2s2r.train.heldout import heldout_errors

    if Path(policy).name.startswith("step_"):
        run, steps = Path(policy).parent, steps or (int(Path(policy).name[5:]),)
    else:
        run = Path(policy)
    rows = heldout_errors(run, demos, tuple(steps), frames, seed)
    table = Table("step", "episodes", "frames", "arm rad", "hold rad", "arm / hold [95 % CI]", "hand rad",
                  title=f"open-loop error of {run} on {demos}")  # fmt: skip
    for r in rows:
        e = r.error
        ci = "" if e.arm_ratio_ci is None else " [{:.3f}, {:.3f}]".format(*e.arm_ratio_ci)
        which = f"{r.episodes} (its held-out split)" if r.own_split else str(r.episodes)
        step = str(int(r.checkpoint.removeprefix("step_")))
        table.add_row(step, which, str(r.frames), f"{e.arm:.4f}", f"{e.hold_arm:.4f}",
                      f"{e.arm_ratio:.3f}{ci}", f"{e.hand:.4f}")  # fmt: skip
    Console(width=max(100, Console().width)).print(table)
    if out is not None:
        atomic.write_json(out, {"policy": str(run), "demos": str(demos), "rows": [r.record() for r in rows]})
