"""What each study stage is expected to cost: the table the plan's time estimate is made from.

Only the estimate uses these (``StudyPlan``, the report's "expected s" column); no result depends on
them. They are seconds on the 2-core development machine the benchmarks name; another CPU scales them
(the report's measured / expected column says by how much).
"""

from __future__ import annotations

from r2s2r.study.profiles import StudyProfile

# Estimated costs on one core of the 2-core development machine (AMD EPYC, AVX2), refitted to the quick study
# run from an empty folder on 2026-12-07 (fourteenth session, docs/results/quick-lab0-head: 115.5 min wall);
# the same CPU ran the same work up to 1.4 x slower on other days. Only the plan's time estimate uses them.
COST_S = {
    "calibrate": 185.0,  # the whole calibration (one process): 183 s (231 s on a slower day)
    "lab_step": 0.09,  # one 10 Hz lab control step: physics + three shadowed, anti-aliased renders
    # an evaluation observes only the steps its policy reads (RealCell.act(observe=False) between):
    # benchmarks/cell_speed.py --size 48, 2026-12-06: 5.0 ms a step without frames, 61.9 ms with
    "lab_step_unobserved": 0.006,
    # the three 48 px policy frames of one observed step: 57 ms, x 0.57 since small renders are supersampled
    # (cell_speed.py, 2026-12-06, fourth session: 79.9 -> 45.9 ms an observed step)
    "lab_frames": 0.033,
    "demo_steps": 100.0,  # control steps of one teleoperated demonstration attempt
    # seconds per admitted simulated trajectory, its rejected attempts included: the four 200-trajectory stages
    # of 2026-12-07 took 1,121 s on 2 workers at 48 px (158-457 s each: the configurations' admission rates differ)
    "sim_admitted_96px": 4.0,
    # ... rendered with shadows and anti-aliasing (StudyProfile.sim_data_shadows): gw-gb's 200 at 48 px on 2 workers
    # took 305 s lean (2026-12-07, fourteenth session) and ~780 s shadowed (fifteenth session, partly loaded): 2.6 x
    "sim_shadows": 2.6,
    # one optimiser step on the two cores: cpu 0.243 s in benchmarks/train_speed.py, 0.25-0.27 s inside the
    # quick study of 2026-12-06 (fifth session: 740-800 s per 3000 steps, real frames decoded beside it)
    # x 0.72 since the cpu preset reads the head camera's earlier frame alone (train_lanes.py, 2026-12-07);
    # refitted: the quick study of 2026-12-07 (fourteenth session) trained its fifth policy alone on both
    # cores in 754 s per 3000 steps
    "train_step": {"tiny": 0.02, "cpu": 0.25, "gpu": 5.0},
    # a step of a training on a share of the cores beside others, against one training on all of them:
    # benchmarks/train_lanes.py (2026-12-06, synthetic data) 0.34 s a step for each of two one-thread runs
    # against 0.227 s for one two-thread run (1.5); the quick study (seventh session) 990 s per 3000 steps
    # for each of two side by side against 740-800 s alone on both cores the session before (1.3); the quick
    # study of 2026-12-07 (fourteenth session): 1015-1129 s per 3000 steps side by side against 754 s alone (1.43)
    "train_lane_slowdown": 1.43,
    "early_copy": 5.0,  # an early-stop anchor copied from the full run's folder (a few MB)
    "trial_fill": 0.8,  # fraction of the time limit an average trial runs
    "label_demo": 0.6,  # object-state labels of one demonstration (pose estimation from its stereo pair)
    # one filmed lab step beyond the physics: two 320x240 lab-twin captures and their encoding, and
    # the length of a filmed trial (half of them successes, which end early) as a fraction of the time limit:
    # the quick study of 2026-12-06 filmed 678-746 steps in 8 trials per policy, 150-169 s a stage (loaded)
    "video_frame": 0.12,
    "clip_fill": 0.45,
    "film_start": 10.0,  # a filming's lab processes: spawned, their cells and renderers built
    # a simulated evaluation step (SimulatedCell, benchmarks/cell_speed.py): physics, and three plain renders
    "sim_step_unobserved": 0.004,
    "sim_frames": 0.015,
    # an evaluation's wall over its cells' steps (the policy's sampling at each re-plan, waves started and
    # joined): the quick study of 2026-12-07 (fourteenth session) measured 1.14-1.74 x the steps' estimate for
    # its policies' 21 lab and sim evaluations (1.0-1.4 x for the random and scripted anchors)
    "eval_overhead": 1.5,
}


def eval_estimate_s(p: StudyProfile, workers: int, observed: float, world: str = "lab") -> float:
    """Wall seconds of an evaluation on the profile's trial list whose policy reads frames on the
    ``observed`` fraction of steps, in the lab or (any other ``world``) a simulated world; a world
    rendered with shadows (``StudyProfile.sim_eval_shadows``) draws frames at the lab's cost."""
    cell = "lab" if world == "lab" else "sim"
    frames = "lab" if world == "lab" or p.sim_eval_shadows else "sim"
    step_s = COST_S[f"{cell}_step_unobserved"] + observed * COST_S[f"{frames}_frames"]
    steps = p.trials.total * p.max_duration * 10 * COST_S["trial_fill"]
    return COST_S["eval_overhead"] * steps * step_s / min(workers, p.eval_batch)


def observed_share(pc) -> float:
    """The frames a chunk policy (``PolicyConfig``) reads per step, in steps' worth of every camera: each
    re-plan and, for a past frame, ``past_frame`` steps before it its ``past_images`` cameras."""
    past = len(pc.past_images) / len(pc.cameras) if pc.cameras and pc.past_frame % pc.execute_steps else 0.0
    return (1 + past) / pc.execute_steps
