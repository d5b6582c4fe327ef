"""The policy-learning ladder on one lab: holding still, the image policy as it trains, the scripted operator.

    .venv/bin/python benchmarks/policy_learning.py --demos DIR --out DIR [--lab 0] [--preset cpu]
        [--steps N] [--state-steps N] [--at 2000 4000] [--trials 24] [--workers 2] [--threads 2] [--execute K]
        [--past-cameras head_left ...]

One table, one row per rung, every number measured in this run:
- ``hold still``: every action repeats the current joint positions (the floor of the open-loop error,
  and what a policy that learned nothing does in the lab);
- ``image @ step``: the preset's flow-matching policy (cameras + proprio, as in the study) trained on
  ``--demos`` with ``r2s2r.train.train``, its checkpoints at the ``--at`` steps and the run's ``best``
  (the latest checkpoint within ``best_tolerance`` of the lowest held-out open-loop arm error; the
  policy ``r2s2r eval`` loads);
- ``privileged state``: the same flow head fed the object's state as the operator sees it (pose,
  belt speed, which object; ``r2s2r.evaluate.privileged``) instead of cameras: a diagnostic of the
  control stack, never a study policy;
- ``scripted``: the teleoperator model that collected the demonstrations (the ceiling).
Columns: held-out open-loop mean absolute error of the first 8 actions (arm and hand, rad; the ratio
is arm error / hold-still arm error, with its 95 % bootstrap interval over the held-out episodes),
success on the lab's first ``--trials`` nominal trials (the
evaluation's fixed list, 95 % Wilson interval; a longer list starts with the 24 of the default one, and
its first three waves of 8 run exactly as in a 24-trial evaluation), safety-filter clips per trial (joint speed, joint
limits), the mean arm-joint jump at a re-plan (rad), training minutes to that checkpoint.
Everything resumes from ``--out`` (the training run, each evaluation's finished waves).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time
from pathlib import Path

import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco loads)

# isort: split
import torch
from rich.console import Console
from rich.table import Table

from r2s2r import atomic
from r2s2r.evaluate.policies import HoldStill, ScriptedOperator
from r2s2r.evaluate.privileged import STATE_PRESET, PrivilegedPolicy, write_state_dataset
from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.stats import wilson_interval
from r2s2r.evaluate.trials import TrialPlan
from r2s2r.lab.twin import LabTwin
from r2s2r.policy.checkpoint import BEST, LATEST, load_policy, read_checkpoint, step_name
from r2s2r.train import get_preset, train
from r2s2r.world.cell import CellConfig


def _train(args, preset, demos: Path, run: Path) -> list[dict]:
    done = (run / LATEST).is_file() and read_checkpoint(run, verify=())[1]["step"] >= preset.train.steps
    if not done:
        torch.set_num_threads(args.threads)
        t0 = time.time()
        print(f"training {preset.train.steps} steps -> {run}", flush=True)

        def show(step: int, record: dict | None) -> None:
            if record is not None and (step % 250 == 0 or "val_arm" in record):
                val = f", held-out arm {record['val_arm']:.4f} rad" if "val_arm" in record else ""
                if "val_object_cm" in record:
                    val += f", object {record['val_object_cm']:.1f} cm"
                speed = f"{record['samples_per_s']:.0f} samples/s"
                print(f"step {step}: loss {record['loss']:.4f}, {speed}{val}", flush=True)

        train(demos, [], run, preset, device=args.device, on_step=show)
        print(f"trained in {(time.time() - t0) / 60:.1f} min", flush=True)
    _, meta = read_checkpoint(run, verify=())
    state = json.loads((run / step_name(meta["step"]) / "train_state.json").read_text())
    return [r for r in state["history"] if "val_arm" in r]


def _evaluate(args, name: str, policy) -> dict:
    plan = TrialPlan(nominal=args.trials, lighting=0, belt_speed=0, novel_object=0, combined=0)
    cfg = EvalConfig(plan=plan, batch=args.batch, workers=args.workers, max_duration=args.max_duration)
    t0 = time.time()
    res = evaluate(policy, args.lab, cfg, out=args.out / f"eval-{name}", name=name)
    o = res.outcomes
    n = len(o)
    wins = sum(x.success for x in o)
    failures: dict[str, int] = {}
    for x in o:
        if not x.success:
            failures[x.failure] = failures.get(x.failure, 0) + 1
    jumps = [x.replan_jump for x in o if x.replan_jump is not None]
    out = {
        "success": wins,
        "trials": n,
        "interval": list(wilson_interval(wins, n)),
        "velocity_clips": sum(x.safety.get("velocity", 0) for x in o) / n,
        "limit_clips": sum(x.safety.get("joint_limit", 0) for x in o) / n,
        "replan_jump": sum(jumps) / len(jumps) if jumps else None,
        "touched": sum(x.touched for x in o),
        "lifted": sum(x.lifted for x in o),
        "failures": failures,
        "eval_seconds": time.time() - t0,
    }
    print(f"{name}: {wins}/{n} {failures}", flush=True)
    return out


def _shared(args) -> dict:
    """The PolicyConfig changes the options make to the image and the privileged policy alike."""
    changes = {"delta_arm": True} if args.delta_arm else {}
    if args.noise_scale is not None:
        changes["noise_scale"] = args.noise_scale
    return changes


def _keep(preset, steps: int) -> int:
    """Every checkpoint of a ``steps`` run is kept, so the ``--at`` ones stay."""
    return steps // preset.train.checkpoint_every + 1


def _k(args) -> str:
    """The suffix naming a re-planning interval other than the trained one (rungs, evaluation folders)."""
    return f"-k{args.execute}" if args.execute is not None else ""


def _privileged(args) -> dict:
    """The privileged-state rung: the demos replayed for the operator's view, a state policy trained on
    them (``STATE_PRESET``, its held-out best checkpoint), evaluated with the view in place of cameras."""
    states = args.out / "state-demos"
    t0 = time.time()
    replay_lab = LabTwin(args.lab, CellConfig(cameras=()))

    def show(i: int, n: int) -> None:
        if i % 25 == 0 or i == n:
            print(f"replayed {i}/{n} demonstrations", flush=True)

    write_state_dataset(args.demos, states, replay_lab, show)
    print(f"state dataset in {time.time() - t0:.0f} s", flush=True)
    run = args.out / "state-run"
    steps = args.state_steps
    train_cfg = dataclasses.replace(STATE_PRESET.train, steps=steps, keep_checkpoints=_keep(STATE_PRESET, steps))
    preset = dataclasses.replace(
        STATE_PRESET, policy=dataclasses.replace(STATE_PRESET.policy, **_shared(args)), train=train_cfg
    )
    vals = _train(args, preset, states, run)
    best = int((run / BEST).read_text().split("_")[1]) if (run / BEST).is_file() else vals[-1]["step"]
    v = next((r for r in vals if r["step"] == best), {})
    return {
        "rung": f"privileged state@{best}{_k(args)}",
        "arm": v.get("val_arm"),
        "hand": v.get("val_hand"),
        "ratio": v.get("val_arm_ratio"),
        "train_minutes": v.get("seconds", float("nan")) / 60,
        **_evaluate(args, "privileged" + _k(args), PrivilegedPolicy(run, execute_steps=args.execute)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demos", type=Path, required=True, help="real demonstrations (r2s2r demos collect)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--lab", type=int, default=0)
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--steps", type=int, default=None, help="training steps (default: the preset's)")
    ap.add_argument(
        "--state-steps", type=int, default=STATE_PRESET.train.steps,
        help="training steps of the privileged-state rung (default: STATE_PRESET's)",
    )  # fmt: skip
    ap.add_argument("--at", type=int, nargs="*", default=[2000, 4000], help="earlier checkpoints to evaluate")
    ap.add_argument("--trials", type=int, default=24, help="nominal trials of the lab's fixed list")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2, help="torch threads while training")
    ap.add_argument("--max-duration", type=float, default=25.0)
    ap.add_argument("--device", default="cpu", help="training device (cpu, cuda)")
    ap.add_argument(
        "--object-state", type=float, default=None,
        help="weight of the image policy's auxiliary object-state loss (needs labelled --demos: r2s2r demos label)",
    )  # fmt: skip
    ap.add_argument(
        "--no-past-proprio", action="store_true",
        help="leave the earlier joint positions out of the image policy's past frame (PolicyConfig.past_proprio)",
    )  # fmt: skip
    ap.add_argument(
        "--past-cameras", nargs="*", default=None,
        help="the cameras whose earlier frame the image policy reads (PolicyConfig.past_cameras; default: preset's)",
    )  # fmt: skip
    ap.add_argument(
        "--delta-arm", action="store_true",
        help="image and privileged policies: arm targets relative to the current joints (PolicyConfig.delta_arm)",
    )  # fmt: skip
    ap.add_argument(
        "--shift-px", type=int, default=None, help="random image shift while training (default: the preset's)"
    )
    ap.add_argument(
        "--noise-scale", type=float, default=None,
        help="image and privileged policies: the sampler's initial noise scale (PolicyConfig.noise_scale)",
    )  # fmt: skip
    ap.add_argument(
        "--execute", type=int, default=None,
        help="image and privileged policies: actions run per chunk before a re-plan (default: the trained config's)",
    )  # fmt: skip
    ap.add_argument("--no-image", action="store_true", help="only the reference rungs (no image policy)")
    ap.add_argument(
        "--references",
        nargs="*",
        default=["hold", "scripted"],
        help="reference rungs to run: hold, privileged (object state instead of images), scripted",
    )
    args = ap.parse_args()
    console = Console(width=160)
    load = os.getloadavg()
    console.print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, torch "
        f"{torch.__version__}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; lab {args.lab}, "
        f"{args.trials} nominal trials, demos {args.demos}"
    )
    p = get_preset(args.preset)
    steps = args.steps or p.train.steps
    keep = _keep(p, steps)
    policy = p.policy if args.object_state is None else dataclasses.replace(p.policy, object_state=args.object_state)
    if args.no_past_proprio:
        policy = dataclasses.replace(policy, past_proprio=False)
    if args.past_cameras is not None:
        policy = dataclasses.replace(policy, past_cameras=tuple(args.past_cameras))
    policy = dataclasses.replace(policy, **_shared(args))
    train_cfg = dataclasses.replace(p.train, steps=steps, keep_checkpoints=keep)
    if args.shift_px is not None:
        train_cfg = dataclasses.replace(train_cfg, shift_px=args.shift_px)
    preset = dataclasses.replace(p, policy=policy, train=train_cfg)
    run = args.out / "run"
    vals = {} if args.no_image else {r["step"]: r for r in _train(args, preset, args.demos, run)}
    best = int((run / BEST).read_text().split("_")[1]) if (run / BEST).is_file() else steps
    rows: list[dict] = []
    hold = next(iter(vals.values()), {})
    if "hold" in args.references:
        rows.append(
            {
                "rung": "hold still",
                "arm": hold.get("val_hold_arm"),
                "hand": hold.get("val_hold_hand"),
                "ratio": 1.0,
                **_evaluate(args, "hold", HoldStill()),
            }
        )
    for step in [] if args.no_image else [*sorted(s for s in args.at if s in vals and s != best), best]:
        v = vals.get(step, {})
        name = f"image@{step}{_k(args)}" + (" (best)" if step == best else "")
        policy = load_policy(run / step_name(step))
        policy = policy if args.execute is None else policy.replanning_every(args.execute)
        rows.append(
            {
                "rung": name,
                "step": step,
                "arm": v.get("val_arm"),
                "hand": v.get("val_hand"),
                "ratio": v.get("val_arm_ratio"),
                "ratio_ci": [v["val_arm_ratio_lo"], v["val_arm_ratio_hi"]] if "val_arm_ratio_lo" in v else None,
                "object_cm": v.get("val_object_cm"),
                "train_minutes": v.get("seconds", float("nan")) / 60,
                **_evaluate(args, f"image-{step}{_k(args)}", policy),
            }
        )
    if "privileged" in args.references:
        rows.append(_privileged(args))
    if "scripted" in args.references:
        rows.append({"rung": "scripted", **_evaluate(args, "scripted", ScriptedOperator())})
    atomic.write_json(args.out / "ladder.json", {"load_average_start": load, "rows": rows})
    table = Table(
        "rung", "open-loop arm rad", "/ hold", "hand rad", "object cm", "success", "95 % CI", "vel clips/trial",
        "limit clips/trial", "replan jump rad", "touched", "lifted", "train min",
    )  # fmt: skip

    def f(x, spec):
        return "-" if x is None or x != x else format(x, spec)

    for r in rows:
        lo, hi = r["interval"]
        table.add_row(
            r["rung"],
            f(r.get("arm"), ".3f"),
            f(r.get("ratio"), ".2f") + (" [{:.2f}, {:.2f}]".format(*r["ratio_ci"]) if r.get("ratio_ci") else ""),
            f(r.get("hand"), ".3f"),
            f(r.get("object_cm"), ".1f"),
            f"{r['success']}/{r['trials']}",
            f"[{lo:.0%}, {hi:.0%}]",
            f(r["velocity_clips"], ".1f"),
            f(r["limit_clips"], ".1f"),
            f(r["replan_jump"], ".3f"),
            str(r["touched"]),
            str(r["lifted"]),
            f(r.get("train_minutes"), ".1f"),
        )
    console.print(table)
    load = os.getloadavg()
    console.print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
