"""Filming chosen trials of a finished evaluation: replayed alone from the actions the evaluation
kept, or their waves run again, they repeat the recorded rollouts exactly (the same frames either
way), only the chosen trials are filmed, a mismatch is an error, a rerun resumes."""

from __future__ import annotations

import dataclasses

import av
import numpy as np
import pytest

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.evaluate.film import SAME, film_trials
from r2s2r.evaluate.policies import RandomPolicy
from r2s2r.evaluate.runner import EvalConfig, evaluate, read_actions, replan_jump, wave_key, write_actions
from r2s2r.evaluate.trials import TrialPlan

LAB = 1
# two waves of three: a trial's random draws are batched with the other running trials of its wave
CONFIG = EvalConfig(plan=TrialPlan(nominal=4, lighting=2, belt_speed=0, novel_object=0, combined=0), batch=3,
                    max_duration=2.0, seed=4)  # fmt: skip


class Refuses(RandomPolicy):
    """A chunk policy that must not be asked for anything (a resumed filming runs no wave)."""

    def predict_chunk(self, obs, rng):
        raise AssertionError("a finished wave ran again")


REFUSES = Refuses(cameras=("head_left",), image_size=16)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    policy = RandomPolicy(cameras=("head_left",), image_size=16)
    return policy, evaluate(policy, LAB, CONFIG, out=out, name="random"), out


def _frames(path) -> int:
    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


def _pixels(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_filmed_trials_repeat_their_recorded_rollouts(evaluated, tmp_path):
    policy, res, _ = evaluated
    chosen = [1, 4]  # the middle of wave 0 and of wave 1
    filmed = film_trials(policy, res, CONFIG, chosen, tmp_path)
    assert sorted(filmed) == chosen
    for i in chosen:
        o, rec = filmed[i], res.outcomes[i]
        assert (o.success, o.failure, o.steps, o.trace, o.safety) == (rec.success, rec.failure, rec.steps, rec.trace,
                                                                        rec.safety)  # fmt: skip
        assert o.video == f"videos/trial_{i:03d}.mp4" and _frames(tmp_path / o.video) == o.steps + 1
    assert sorted(p.name for p in (tmp_path / "videos").iterdir()) == ["trial_001.mp4", "trial_004.mp4"]
    assert sorted(p.name for p in (tmp_path / "waves").iterdir()) == ["wave_000.json", "wave_001.json"]
    # a rerun resumes: both waves are recorded, nothing runs again
    again = film_trials(REFUSES, res, CONFIG, chosen, tmp_path)
    assert again == filmed
    # a lost video: only its wave runs again
    (tmp_path / "videos" / "trial_004.mp4").unlink()
    with pytest.raises(AssertionError, match="ran again"):
        film_trials(REFUSES, res, CONFIG, chosen, tmp_path)
    redone = film_trials(policy, res, CONFIG, chosen, tmp_path)
    assert redone[1] == filmed[1] and redone[4].trace == filmed[4].trace  # wave 0 was reused as recorded
    assert (tmp_path / "videos" / "trial_004.mp4").is_file()


def test_a_rollout_that_does_not_repeat_is_an_error(evaluated, tmp_path):
    policy, res, _ = evaluated
    outcomes = list(res.outcomes)
    outcomes[2] = dataclasses.replace(outcomes[2], trace="0" * 16)
    with pytest.raises(R2S2RError, match="trial 2 .*did not repeat.*trace"):
        film_trials(policy, dataclasses.replace(res, outcomes=tuple(outcomes)), CONFIG, [2], tmp_path)
    assert not (tmp_path / "waves" / "wave_000.json").exists()  # no record of a wave that did not repeat
    # the same trials under another batch are other rollouts: refused before anything runs
    with pytest.raises(ConfigError, match="ran with"):
        film_trials(policy, res, dataclasses.replace(CONFIG, batch=2), [2], tmp_path)
    with pytest.raises(ConfigError, match="no trials"):
        film_trials(policy, res, CONFIG, [6], tmp_path)


def test_an_evaluation_keeps_the_actions_each_trial_was_sent(evaluated):
    policy, res, out = evaluated
    key = wave_key("random", res.trials, CONFIG, None)
    sent = {**read_actions(out, 0, key), **read_actions(out, 1, key)}
    assert sorted(sent) == [o.index for o in res.outcomes]
    for o in res.outcomes:  # one action per step, from which the recorded re-plan jump follows exactly
        assert sent[o.index].shape == (o.steps, 27) and sent[o.index].dtype == np.float32
        assert replan_jump(sent[o.index], policy.execute_steps) == o.replan_jump
    assert read_actions(out, 2, key) == {}  # no such wave: nothing kept
    with pytest.raises(ConfigError, match="other settings"):
        read_actions(out, 0, "0" * 16)


def test_recorded_trials_are_replayed_alone_and_film_the_same_frames(evaluated, tmp_path):
    policy, res, out = evaluated
    chosen = [1, 4]
    rerun = film_trials(policy, res, CONFIG, chosen, tmp_path / "rerun")  # whole waves, the policy asked again
    for workers in (1, 2):  # replayed: the policy is never asked, no wave runs; the same on 1 and 2 workers
        config, where = dataclasses.replace(CONFIG, workers=workers), tmp_path / f"replay{workers}"
        replayed = film_trials(REFUSES, res, config, chosen, where, recorded=out)
        assert sorted(replayed) == chosen
        for i in chosen:
            assert {k: getattr(replayed[i], k) for k in SAME} == {k: getattr(rerun[i], k) for k in SAME}
            assert replayed[i].video == rerun[i].video == f"videos/trial_{i:03d}.mp4"
            a, b = (_pixels(d / replayed[i].video) for d in (where, tmp_path / "rerun"))
            assert len(a) == replayed[i].steps + 1 and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
        assert sorted(p.name for p in where.iterdir()) == ["replays", "videos"]
        assert sorted(p.name for p in (where / "replays").iterdir()) == ["trial_001.json", "trial_004.json"]
    # a rerun resumes: a lost video is replayed again, its neighbour's record is kept as it was
    where = tmp_path / "replay1"
    kept = (where / "replays" / "trial_001.json").stat().st_mtime_ns
    (where / "videos" / "trial_004.mp4").unlink()
    again = film_trials(REFUSES, res, CONFIG, chosen, where, recorded=out)
    assert again[4].trace == replayed[4].trace and (where / "videos" / "trial_004.mp4").is_file()
    assert (where / "replays" / "trial_001.json").stat().st_mtime_ns == kept


def test_a_replay_that_does_not_repeat_is_an_error(evaluated, tmp_path):
    _, res, out = evaluated
    outcomes = list(res.outcomes)
    outcomes[1] = dataclasses.replace(outcomes[1], steps=outcomes[1].steps + 1)
    with pytest.raises(R2S2RError, match=r"trial 1 \(replayed\) did not repeat.*steps"):
        film_trials(REFUSES, dataclasses.replace(res, outcomes=tuple(outcomes)), CONFIG, [1], tmp_path, recorded=out)
    assert not (tmp_path / "replays" / "trial_001.json").exists()
    # actions of other settings in the evaluation's folder are refused, not replayed
    other = tmp_path / "other"
    (other / "waves").mkdir(parents=True)
    write_actions(other / "waves" / "wave_000.npz", "0" * 16, {1: np.zeros((3, 27), np.float32)})
    with pytest.raises(ConfigError, match="other settings"):
        film_trials(REFUSES, res, CONFIG, [1], tmp_path / "film", recorded=other)
