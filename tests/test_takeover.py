"""Takeover demonstrations (HG-DAgger): a policy drives first, the operator's correction is recorded."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from r2s2r.behavior.demos import make_operator, run_attempt
from r2s2r.behavior.takeover import Takeover
from r2s2r.behavior.teleop import OperatorConfig
from r2s2r.cli import main
from r2s2r.errors import ConfigError
from r2s2r.lab.twin import LabTwin
from r2s2r.world.cell import CellConfig


@dataclass(frozen=True)
class Swing:
    """A chunk policy that turns the first arm joint away from where it is (a policy going wrong)."""

    cameras: tuple[str, ...] = ("head_left",)
    image_size: int = 16
    action_horizon: int = 4
    execute_steps: int = 4
    past_frame: int = 2

    def predict_chunk(self, obs, rng):
        assert "past/head_left" in obs and obs["head_left"].shape == (1, 16, 16, 3)
        q = np.asarray(obs["proprio"], np.float32)
        chunk = np.repeat(q[:, None], self.action_horizon, axis=1)
        chunk[:, :, 0] += 0.04 * np.arange(1, self.action_horizon + 1)
        return chunk


@pytest.mark.parametrize("bad", [{"share": 0.0}, {"share": 1.5}, {"window": (3.0, 1.0)}, {"window": (-1.0, 2.0)}])
def test_bad_takeovers_are_refused(bad):
    with pytest.raises(ConfigError, match="takeover"):
        Takeover(Path("run"), **bad)


def test_the_share_of_takeover_attempts_and_their_times_are_drawn_per_attempt():
    t = Takeover(Path("run"), share=0.3, window=(2.0, 4.0))
    draws = [t.draw(0, key)[0] for key in range(400)]
    times = [d for d in draws if d is not None]
    assert 0.22 < len(times) / len(draws) < 0.38
    assert all(2.0 <= d <= 4.0 for d in times)
    assert draws == [t.draw(0, key)[0] for key in range(400)]  # reproducible per (seed, key)


def test_demos_collect_refuses_a_missing_takeover_policy(tmp_path, capsys):
    args = ["demos", "collect", "--out", str(tmp_path / "demos"), "--n", "1", "--takeover", str(tmp_path / "nope")]
    assert main(args) == 2
    assert "nope" in capsys.readouterr().err
    assert not (tmp_path / "demos").exists()


@pytest.mark.slow
def test_a_takeover_attempt_records_the_operators_correction_from_where_the_policy_left_the_arm():
    lab = LabTwin(3, CellConfig(image_size=16, cameras=("head_left",)))
    op = make_operator(lab, OperatorConfig())
    handover = (Takeover(Path("unused"), share=1.0, window=(1.5, 1.5)), Swing())
    clean = run_attempt(lab, op, 1, 0)
    a = run_attempt(lab, op, 1, 0, takeover=handover)
    b = run_attempt(lab, op, 1, 0, takeover=handover)
    assert clean.success and a.success, (clean.failure, a.failure)
    ea, eb, ec = a.episode, b.episode, clean.episode
    assert ea.provenance.behavior == "teleop-takeover" and ec.provenance.behavior == "teleop"
    assert ea.provenance.seed == ec.provenance.seed  # the same trial
    assert np.array_equal(ea.actions, eb.actions)  # reproducible
    # the episode starts 15 steps in, where the policy turned joint 0 (~0.04 rad a step) away from home
    assert ea.obs["proprio"][0, 0] - ec.obs["proprio"][15, 0] > 0.3
    assert {"head_left_full", "head_right_full"} <= set(ea.extras)  # the stereo pair of the takeover
    assert len(ea.actions) < len(ec.actions)
