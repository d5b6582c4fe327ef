"""Filming chosen trials of a finished evaluation: their waves run again and repeat the recorded
rollouts exactly, only the chosen trials are filmed, a mismatch is an error, a rerun resumes."""

from __future__ import annotations

import dataclasses

import av
import pytest

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.evaluate.film import film_trials
from r2s2r.evaluate.policies import RandomPolicy
from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.trials import TrialPlan

LAB = 1
# two waves of three: a trial's random draws are batched with the other running trials of its wave
CONFIG = EvalConfig(plan=TrialPlan(nominal=4, lighting=2, belt_speed=0, novel_object=0, combined=0), batch=3,
                    max_duration=2.0, seed=4)  # fmt: skip


class Refuses(RandomPolicy):
    """A chunk policy that must not be asked for anything (a resumed filming runs no wave)."""

    def predict_chunk(self, obs, rng):
        raise AssertionError("a finished wave ran again")


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    policy = RandomPolicy(cameras=("head_left",), image_size=16)
    return policy, evaluate(policy, LAB, CONFIG, out=out, name="random")


def _frames(path) -> int:
    with av.open(str(path)) as c:
        return sum(1 for _ in c.decode(video=0))


def test_filmed_trials_repeat_their_recorded_rollouts(evaluated, tmp_path):
    policy, res = evaluated
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
    again = film_trials(Refuses(cameras=("head_left",), image_size=16), res, CONFIG, chosen, tmp_path)
    assert again == filmed
    # a lost video: only its wave runs again
    (tmp_path / "videos" / "trial_004.mp4").unlink()
    with pytest.raises(AssertionError, match="ran again"):
        film_trials(Refuses(cameras=("head_left",), image_size=16), res, CONFIG, chosen, tmp_path)
    redone = film_trials(policy, res, CONFIG, chosen, tmp_path)
    assert redone[1] == filmed[1] and redone[4].trace == filmed[4].trace  # wave 0 was reused as recorded
    assert (tmp_path / "videos" / "trial_004.mp4").is_file()


def test_a_rollout_that_does_not_repeat_is_an_error(evaluated, tmp_path):
    policy, res = evaluated
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
