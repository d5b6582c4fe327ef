"""DART perturbation of demonstrations: the offset process, its limits, and a perturbed attempt."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from r2s2r.behavior.demos import make_operator, run_attempt
from r2s2r.behavior.perturb import ArmPerturber, Perturbation
from r2s2r.behavior.teleop import OperatorConfig
from r2s2r.cli import main
from r2s2r.errors import ConfigError
from r2s2r.lab.twin import LabTwin
from r2s2r.world.cell import CellConfig

LO, HI = np.full(7, -2.0), np.full(7, 2.0)
STEP = np.full(7, 0.15)


def _perturber(p: Perturbation, seed: int = 0, start=np.zeros(27)) -> ArmPerturber:
    return ArmPerturber(p, 0.1, np.random.default_rng(seed), LO, HI, STEP, start)


def test_offset_has_the_stated_spread_and_leaves_the_hand_alone():
    send = _perturber(Perturbation(std=0.05, tau=0.5))
    command = np.zeros(27, dtype=np.float32)
    command[7:] = 0.3
    sent = np.array([send(command, approaching=True) for _ in range(20000)])
    assert sent.dtype == np.float32
    assert np.all(sent[:, 7:] == np.float32(0.3))
    assert np.allclose(sent[2000:, :7].std(axis=0), 0.05, rtol=0.15)
    lag1 = np.mean([np.corrcoef(sent[2000:-1, j], sent[2001:, j])[0, 1] for j in range(7)])
    assert lag1 == pytest.approx(np.exp(-0.1 / 0.5), abs=0.03)  # OU correlation over one step


@settings(max_examples=25, deadline=None)
@given(st.floats(0.01, 1.0), st.integers(0, 2**31), st.floats(-3.0, 3.0))
def test_sent_commands_stay_in_range_and_rate_limits(std, seed, jump):
    send = _perturber(Perturbation(std=std), seed)
    prev = np.zeros(7)
    for i in range(60):
        command = np.full(27, jump if i == 30 else 0.0)  # a sudden far target too
        sent = send(command, approaching=i < 40)[:7]
        assert np.all(sent >= LO) and np.all(sent <= HI)
        assert np.all(np.abs(sent - prev) <= STEP + 1e-12)
        prev = sent


def test_offset_fades_out_after_the_approach():
    p = Perturbation(std=0.1, tau=0.5, fade=0.5)
    send = _perturber(p, 3)
    command = np.zeros(27)
    for _ in range(30):
        send(command, approaching=True)
    assert np.abs(send.offset).max() > 0.01
    gone = [send(command, approaching=False)[:7] for _ in range(int(round(p.fade / 0.1)) + 2)]
    assert np.all(gone[-1] == 0.0)  # faded out and the rate limit caught up: the command itself


@pytest.mark.parametrize("bad", [{"std": 0.0}, {"std": -1.0}, {"std": float("nan")}, {"tau": 0.0}, {"fade": -1.0}])
def test_bad_perturbations_are_refused(bad):
    with pytest.raises(ConfigError, match="perturbation"):
        Perturbation(**bad)


@pytest.mark.parametrize("flag, value", [("--perturb-std", "-0.1"), ("--perturb-tau", "0")])
def test_demos_collect_refuses_a_bad_perturbation(tmp_path, capsys, flag, value):
    args = ["demos", "collect", "--out", str(tmp_path / "demos"), "--n", "1"]
    if flag == "--perturb-tau":
        args += ["--perturb-std", "0.05"]
    assert main([*args, flag, value]) == 2
    assert f"perturbation {flag.removeprefix('--perturb-')}" in capsys.readouterr().err
    assert not (tmp_path / "demos").exists()  # refused before any lab or folder was made


@pytest.mark.slow
def test_a_perturbed_attempt_records_the_operators_commands_and_repeats():
    lab = LabTwin(3, CellConfig(image_size=16, cameras=("head_left",)))
    op = make_operator(lab, OperatorConfig())
    clean = run_attempt(lab, op, 1, 0)
    a = run_attempt(lab, op, 1, 0, Perturbation(std=0.06))
    b = run_attempt(lab, op, 1, 0, Perturbation(std=0.06))
    assert clean.success and a.success, (clean.failure, a.failure)
    assert a.safety == {}  # what was sent needed no change by the safety filter
    ea, eb, ec = a.episode, b.episode, clean.episode
    assert ea.provenance.seed == ec.provenance.seed  # the same trial as without the perturbation
    assert np.array_equal(ea.actions, eb.actions) and np.array_equal(ea.obs["proprio"], eb.obs["proprio"])
    # the operator commands from what they see of the object, not from the robot, so before the hand
    # reaches the object the recorded actions are the clean run's commands, while the robot was
    # pushed off that path (its joints differ): off-path states labelled with the on-path commands
    n = 20
    assert np.array_equal(ea.actions[:n], ec.actions[:n])
    assert np.abs(ea.obs["proprio"][:n, :7] - ec.obs["proprio"][:n, :7]).max() > 0.02
    assert ea.provenance.behavior == "teleop"
