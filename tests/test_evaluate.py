"""Evaluation on the lab twin: the fixed trial list, batched rollouts, workers, resume, videos."""

import dataclasses
import json

import numpy as np
import pytest

from r2s2r.errors import R2S2RError
from r2s2r.evaluate.policies import RandomPolicy, ScriptedOperator, policy_kind
from r2s2r.evaluate.results import EvalResults
from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.trials import TrialList, TrialPlan, make_trials
from r2s2r.world.engine import home_command
from r2s2r.world.objects import CATALOG

LAB = 1
PLAN = TrialPlan(nominal=3, lighting=1, belt_speed=0, novel_object=0, combined=0)
TINY_CAMERA = ("head_left",)


def _replayed(res: EvalResults) -> list[tuple]:
    """What a rerun must reproduce (everything but compute times)."""
    return [(o.index, o.success, o.failure, o.steps, o.safety, o.trace) for o in res.outcomes]


class TinyPolicy:
    """A deterministic chunk policy standing in for a checkpoint: it steers the arm by its own
    proprio and the brightness of its own image, and records the batches it is asked for."""

    cameras = TINY_CAMERA
    image_size = 16
    action_horizon = 4
    execute_steps = 2

    def __init__(self) -> None:
        self.batches: list[int] = []

    def predict_chunk(self, obs, rng):
        img = obs["head_left"]
        assert img.dtype == np.uint8 and img.shape[1:] == (16, 16, 3)
        assert obs["proprio"].dtype == np.float32 and obs["proprio"].shape == (len(img), 27)
        self.batches.append(len(img))
        bright = img.reshape(len(img), -1).mean(axis=1) / 255.0
        target = obs["proprio"] + np.outer(bright, np.r_[0.05, -0.05, np.zeros(25)])
        target[:, 7:] = home_command()[7:]
        return np.repeat(target[:, None, :], self.action_horizon, axis=1)


def test_trial_list_is_fixed_per_lab_and_stores_its_conditions():
    trials = make_trials(0)
    assert len(trials) == 50
    assert [t.kind for t in trials] == ["nominal"] * 24 + ["lighting"] * 7 + ["belt_speed"] * 7 + [
        "novel_object"
    ] * 6 + ["combined"] * 6
    assert make_trials(0) == trials and make_trials(0).digest() == trials.digest()
    assert make_trials(1).digest() != trials.digest()
    assert all(not CATALOG[t.condition.object].novel for t in trials if t.kind in ("nominal", "lighting"))
    assert all(CATALOG[t.condition.object].novel for t in trials if t.kind == "novel_object")
    assert all(t.condition.belt_speed >= 0.12 for t in trials if t.kind == "belt_speed")
    assert len({t.seed for t in trials}) == 50
    # Enlarging one kind leaves every other trial as it was.
    more = make_trials(0, TrialPlan(nominal=30))
    assert [t.condition for t in more if t.kind != "nominal"] == [t.condition for t in trials if t.kind != "nominal"]
    assert [t.condition for t in more][:24] == [t.condition for t in trials][:24]
    restored = TrialList.from_json(json.loads(json.dumps(trials.to_json())))
    assert restored == trials and restored.digest() == trials.digest()
    with pytest.raises(R2S2RError, match="lighting"):
        TrialPlan(lighting=-1)


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    out = tmp_path_factory.mktemp("scripted")
    return out, evaluate(ScriptedOperator(), LAB, EvalConfig(plan=PLAN, batch=2), out=out, name="scripted")


@pytest.fixture(scope="module")
def random_policy():
    policy = RandomPolicy(cameras=TINY_CAMERA, image_size=16)
    # without the command shaping: the filter-tripping floor
    return evaluate(policy, LAB, EvalConfig(plan=PLAN, batch=4, max_duration=6.0, shaping=False), name="random")


def test_scripted_operator_scores_high_on_nominal_trials(scripted):
    _, res = scripted
    nominal = res.by_kind()["nominal"]
    assert nominal.successes == nominal.trials == 3
    assert res.overall().successes >= 3
    assert all(o.duration == pytest.approx(o.steps * 0.1) for o in res.outcomes)
    assert all(o.lifted for o in res.outcomes if o.success)


def test_random_policy_scores_near_zero_and_trips_the_safety_filter(random_policy):
    res = random_policy
    assert res.overall().successes == 0
    assert res.overall().high < 0.5  # 0/4 with its Wilson interval
    assert all(o.failure in ("missed", "fell_off_belt", "dropped") for o in res.outcomes)
    safety = res.safety_totals()
    assert safety.get("velocity", 0) > 50  # uniformly random targets exceed the joint speeds
    assert sum(o.steps for o in res.outcomes) <= 4 * 60


def test_shaped_commands_never_trip_the_filters_speed_or_range_checks(random_policy):
    # the same random policy and trials, its commands shaped as the teleop system shapes the operator's
    policy = RandomPolicy(cameras=TINY_CAMERA, image_size=16)
    shaped = evaluate(policy, LAB, EvalConfig(plan=PLAN, batch=4, max_duration=6.0), name="random")
    totals = shaped.safety_totals()
    assert totals.get("velocity", 0) == 0 and totals.get("joint_limit", 0) == 0
    assert all(o.shaped and o.shaped > 0.9 * o.steps for o in shaped.outcomes)  # it engaged on nearly every step
    assert all(o.shaped is None for o in random_policy.outcomes)
    assert shaped.settings["shaping"] and not random_policy.settings["shaping"]


def test_the_trial_list_is_the_same_for_every_policy_and_run(scripted, random_policy, tmp_path):
    _, res = scripted
    assert res.trials == random_policy.trials == make_trials(LAB, PLAN)
    res.save(tmp_path)
    loaded = EvalResults.load(tmp_path)
    assert loaded.trials.digest() == res.trials.digest()
    assert loaded.outcomes == res.outcomes
    assert "| nominal | 3/3 | 100% |" in (tmp_path / "results.md").read_text()


@pytest.mark.parametrize("policy", [RandomPolicy(cameras=TINY_CAMERA, image_size=16), ScriptedOperator()])
def test_one_and_two_workers_give_identical_results(policy):
    plan = TrialPlan(nominal=2, lighting=0, belt_speed=1, novel_object=0, combined=0)
    one = evaluate(policy, LAB, EvalConfig(plan=plan, batch=2, workers=1, max_duration=2.0))
    two = evaluate(policy, LAB, EvalConfig(plan=plan, batch=2, workers=2, max_duration=2.0))
    assert two.timing["workers"] == 2
    assert _replayed(one) == _replayed(two)
    assert len({o.trace for o in one.outcomes}) == 3  # the trace tells trials apart


def test_a_chunk_policy_is_batched_and_a_deterministic_one_ignores_the_batch():
    plan = TrialPlan(nominal=2, lighting=1, belt_speed=0, novel_object=0, combined=0)
    config = EvalConfig(plan=plan, max_duration=1.5)
    batched, single = TinyPolicy(), TinyPolicy()
    a = evaluate(batched, LAB, dataclasses.replace(config, batch=3))
    b = evaluate(single, LAB, dataclasses.replace(config, batch=1))
    assert _replayed(a) == _replayed(b)
    assert all(o.steps == 15 and o.failure == "missed" for o in a.outcomes)
    assert batched.batches == [3] * 8  # one forward pass per chunk (every 2 steps) for all trials
    assert single.batches == [1] * 24
    assert policy_kind(batched) == "chunk" and policy_kind(ScriptedOperator()) == "trial"


def test_a_chunk_policy_runs_on_one_torch_thread_whatever_the_process_had_set():
    """Another thread count rounds batched products differently: a study resumed at its evaluation (no
    training before it in the process, so torch's default count) scored other trajectories (chaos test)."""
    import torch

    class ThreadsSeen(TinyPolicy):
        def __init__(self) -> None:
            super().__init__()
            self.threads: set[int] = set()

        def predict_chunk(self, obs, rng):
            self.threads.add(torch.get_num_threads())
            return super().predict_chunk(obs, rng)

    plan = TrialPlan(nominal=1, lighting=0, belt_speed=0, novel_object=0, combined=0)
    before = torch.get_num_threads()
    try:
        for n in (2, 1):
            torch.set_num_threads(n)
            policy = ThreadsSeen()
            evaluate(policy, LAB, EvalConfig(plan=plan, max_duration=0.5))
            assert policy.threads == {1} and torch.get_num_threads() == n  # restored after
    finally:
        torch.set_num_threads(before)


def test_bad_policies_are_named():
    class WrongShape(TinyPolicy):
        def predict_chunk(self, obs, rng):
            return np.zeros((len(obs["proprio"]), 3, 27))

    plan = TrialPlan(nominal=1, lighting=0, belt_speed=0, novel_object=0, combined=0)
    with pytest.raises(R2S2RError, match=r"predict_chunk returned shape \(1, 3, 27\), expected \(1, 4, 27\)"):
        evaluate(WrongShape(), LAB, EvalConfig(plan=plan, max_duration=0.5))
    with pytest.raises(R2S2RError, match="ChunkPolicy"):
        policy_kind(object())


def test_a_killed_evaluation_resumes_to_the_same_results(scripted):
    out, res = scripted
    waves = sorted((out / "waves").iterdir())
    assert [p.name for p in waves] == ["wave_000.json", "wave_001.json"]
    kept = waves[0].read_bytes()
    waves[1].unlink()  # as if killed during the second wave
    seen = []
    again = evaluate(
        ScriptedOperator(), LAB, EvalConfig(plan=PLAN, batch=2), out=out, name="scripted", on_trial=seen.append
    )
    assert _replayed(again) == _replayed(res)
    assert waves[0].read_bytes() == kept and waves[1].is_file()
    assert sorted(o.index for o in seen) == [0, 1, 2, 3]
    assert again.outcomes[:2] == res.outcomes[:2]  # reused, not rerun
    with pytest.raises(R2S2RError, match="other settings"):
        evaluate(ScriptedOperator(), LAB, EvalConfig(plan=PLAN, batch=2, seed=5), out=out, name="scripted")


def test_videos_of_trials(tmp_path):
    import cv2

    plan = TrialPlan(nominal=1, lighting=0, belt_speed=0, novel_object=0, combined=0)
    res = evaluate(ScriptedOperator(), LAB, EvalConfig(plan=plan, max_duration=1.0, videos=True), out=tmp_path)
    (o,) = res.outcomes
    assert o.video == "videos/trial_000.mp4"
    cap = cv2.VideoCapture(str(tmp_path / o.video))
    frames = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    ok, frame = cap.read()
    assert ok and frame.shape == (240, 640, 3) and frames == o.steps + 1
    assert float(frame.std()) > 10


class PastPolicy(TinyPolicy):
    """Reads the observation of ``past_frame`` steps back too, records the (proprio, past proprio)
    pairs it is given, and always sends the same command (so runs with any re-plan period follow
    the same trajectory)."""

    past_frame = 3

    def __init__(self) -> None:
        super().__init__()
        self.given: list[tuple[np.ndarray, np.ndarray]] = []

    def predict_chunk(self, obs, rng):
        assert obs["past/head_left"].shape == obs["head_left"].shape
        self.given.append((obs["proprio"].copy(), obs["past/proprio"].copy()))
        return np.repeat(home_command()[None, None], len(obs["proprio"]), axis=0).repeat(self.action_horizon, 1)


def test_a_policy_with_a_past_frame_gets_the_observation_of_that_many_steps_back():
    # re-plans every 2 steps need the observations of steps 0, 2, 4, ... and 1, 3, ... (3 back); a
    # run that re-plans every step shows the lab's proprio at every step to compare with
    plan = TrialPlan(nominal=1, lighting=0, belt_speed=0, novel_object=0, combined=0)
    policy = PastPolicy()
    evaluate(policy, LAB, EvalConfig(plan=plan, batch=1, max_duration=2.0))
    every = PastPolicy()
    every.execute_steps = 1  # re-plans every step: its current proprio at step t is the lab's at t
    evaluate(every, LAB, EvalConfig(plan=plan, batch=1, max_duration=2.0))
    now = [p[0][0] for p in every.given]
    np.testing.assert_array_equal(every.given[0][1][0], now[0])  # clamped to the first observation
    np.testing.assert_array_equal(every.given[5][1][0], now[2])
    for i, (cur, past) in enumerate(policy.given):
        r = 2 * i
        np.testing.assert_array_equal(past[0], now[max(r - 3, 0)])
        np.testing.assert_array_equal(cur[0], now[r])


class PastHeadPolicy(PastPolicy):
    """A past-frame policy that reads the head camera's earlier frame alone (``past_images``); records
    the earlier head frames it is given."""

    cameras = ("head_left", "right_wrist", "left_wrist")
    past_images = ("head_left",)
    execute_steps = 4

    def predict_chunk(self, obs, rng):
        assert not any(k in obs for k in ("past/right_wrist", "past/left_wrist"))  # never drawn for it
        self.given.append((obs["head_left"].copy(), obs["past/head_left"].copy()))
        return np.repeat(home_command()[None, None], len(obs["proprio"]), axis=0).repeat(self.action_horizon, 1)


def test_a_policy_reading_one_earlier_camera_gets_the_frame_a_full_observation_has():
    # re-plans every 4 steps read steps 0, 4, 8 ... and the head's frame at 1, 5, ... (3 back); a run
    # that re-plans every step draws every camera at every step: the same frames, as the lab's camera
    # noise advances for each skipped frame as if it were taken
    plan = TrialPlan(nominal=1, lighting=0, belt_speed=0, novel_object=0, combined=0)
    policy = PastHeadPolicy()
    res = evaluate(policy, LAB, EvalConfig(plan=plan, batch=1, max_duration=2.0))
    every = PastHeadPolicy()
    every.execute_steps = 1
    again = evaluate(every, LAB, EvalConfig(plan=plan, batch=1, max_duration=2.0))
    assert [o.trace for o in res.outcomes] == [o.trace for o in again.outcomes]
    now = [g[0][0] for g in every.given]  # the head's frame at every step
    assert len(policy.given) >= 4
    for i, (cur, past) in enumerate(policy.given):
        np.testing.assert_array_equal(cur[0], now[4 * i])
        np.testing.assert_array_equal(past[0], now[max(4 * i - 3, 0)])
    assert any(not np.array_equal(now[0], f) for f in now[1:])  # the frames do change


class PastJointsPolicy(PastPolicy):
    """A past-frame policy that reads no earlier image (``past_images`` empty), only the earlier joints."""

    cameras = ("head_left", "right_wrist")
    past_images = ()

    def predict_chunk(self, obs, rng):
        assert not any(k.startswith("past/") and k != "past/proprio" for k in obs)
        self.given.append((obs["proprio"].copy(), obs["past/proprio"].copy()))
        return np.repeat(home_command()[None, None], len(obs["proprio"]), axis=0).repeat(self.action_horizon, 1)


def test_a_policy_reading_no_earlier_image_still_gets_the_earlier_joints():
    plan = TrialPlan(nominal=1, lighting=0, belt_speed=0, novel_object=0, combined=0)
    policy, every = PastJointsPolicy(), PastJointsPolicy()
    every.execute_steps = 1
    evaluate(policy, LAB, EvalConfig(plan=plan, batch=1, max_duration=2.0))
    evaluate(every, LAB, EvalConfig(plan=plan, batch=1, max_duration=2.0))
    now = [g[0][0] for g in every.given]
    assert len(policy.given) >= 4
    for i, (_, past) in enumerate(policy.given):  # re-plans every 2 steps, the joints 3 steps back
        np.testing.assert_array_equal(past[0], now[max(2 * i - 3, 0)])
