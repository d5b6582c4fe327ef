"""An adversarial policy on the lab twin: whatever a policy sends, only safe commands reach the robot,
and every change the safety filter made is counted in the evaluation's results.

The adversary cycles through NaN commands, wild targets far outside the joint ranges, jumps far
beyond the rated joint speed, and a steady pull of the arm down into its pedestal and out of the
workspace. What reached the robot is read back after every step (``RealCell.last_command``: the
command after the filter) and checked against the filter's guarantees: finite, inside the joint
ranges less the margin, within the rated joint speed of the previous executed command.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.trials import TrialPlan
from r2s2r.lab.safety import SafetyLimits
from r2s2r.world import rizon
from r2s2r.world.hand import hand_joint_ranges

TOL = 1e-9
PEDESTAL_DIVE = np.array([0.0, 2.2, 0.0, 2.5, 0.0, 0.0, 0.0])  # shoulder and elbow folded down


class Adversary:
    """A trial policy that tries to break the robot (single slot: ``batch=1``)."""

    cameras: tuple[str, ...] = ()
    image_size = 16

    def __init__(self) -> None:
        self.executed: list[list[np.ndarray]] = []  # per trial, the commands that reached the robot
        self.labs: list = []

    def begin(self, lab, rng):
        self.labs.append(lab)
        trail: list[np.ndarray] = [lab.last_command("right").copy()]
        self.executed.append(trail)
        step = 0

        def act(obs):
            nonlocal step
            if step:
                trail.append(lab.last_command("right").copy())
            step += 1
            q = np.asarray(obs["proprio"], dtype=np.float64)
            kind = step % 6
            if kind == 0:
                return np.full(27, np.nan)
            if kind == 1:
                return rng.uniform(-50.0, 50.0, 27)
            if kind == 2:
                return q + rng.choice([-3.0, 3.0], 27)
            bad = q.copy()
            bad[:7] = PEDESTAL_DIVE
            return bad

        return act


@pytest.mark.slow
def test_no_unsafe_command_reaches_the_robot_and_every_clip_is_counted(tmp_path):
    adversary = Adversary()
    plan = TrialPlan(nominal=3, lighting=0, belt_speed=0, novel_object=0, combined=0)
    res = evaluate(adversary, 0, EvalConfig(plan=plan, batch=1, workers=1, max_duration=6.0), out=tmp_path, name="adv")
    res.save(tmp_path)
    assert len(adversary.executed) == 3 and len(set(map(id, adversary.labs))) == 1
    limits = SafetyLimits()
    lo = np.r_[rizon.JOINT_RANGE[:, 0] + limits.joint_margin, hand_joint_ranges()[:, 0]]
    hi = np.r_[rizon.JOINT_RANGE[:, 1] - limits.joint_margin, hand_joint_ranges()[:, 1]]
    vmax = np.asarray(rizon.VELOCITY_LIMIT) * limits.speed_scale * adversary.labs[0].control_dt
    for trail in adversary.executed:
        q = np.array(trail)
        assert len(q) > 20 and np.isfinite(q).all()
        assert (q >= lo - TOL).all() and (q <= hi + TOL).all()
        assert (np.abs(np.diff(q[:, :7], axis=0)) <= vmax + 1e-6).all()
    # what the filter changed, as the lab counted it, is what the results say, trial by trial summed
    lab_counts = {k: v for k, v in adversary.labs[0].safety_report().items() if v}
    saved = json.loads((tmp_path / "results.json").read_text())
    assert res.safety_totals() == dict(sorted(lab_counts.items()))
    assert saved["summary"]["safety"] == dict(sorted(lab_counts.items()))
    assert sum(sum(o["safety"].values()) for o in saved["outcomes"]) == sum(lab_counts.values())
    for kind in ("non_finite", "joint_limit", "velocity"):
        assert lab_counts.get(kind, 0) > 0, (kind, lab_counts)
    assert lab_counts.get("workspace", 0) + lab_counts.get("self_collision", 0) > 0, lab_counts
