"""Object-state labels of real demonstrations from their stereo pairs, checked against the lab's truth
(the trial conditions and the lab's belt speed scale, read through the test-only hook), and a policy
trained with the auxiliary object-state head on them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from r2s2r.behavior.object_labels import label_demonstrations
from r2s2r.cli import main
from r2s2r.data import Dataset, check_dataset
from r2s2r.data.object_state import OBJECT_STATE, POSITION, SPEED, WHICH, YAW
from r2s2r.errors import R2S2RError
from r2s2r.lab.twin import _hidden_params
from r2s2r.world.objects import KNOWN_OBJECTS


@pytest.fixture(scope="module")
def labelled(real_demos, tmp_path_factory):
    lab, demos = real_demos
    world = _hidden_params(lab)
    out = tmp_path_factory.mktemp("labelled") / "demos"
    label_demonstrations(demos, world, out)
    return world, demos, out


def test_labels_recover_the_trial_conditions_and_follow_the_demonstration(labelled):
    world, demos, out = labelled
    assert not check_dataset(out).problems  # NaN (unknown) is allowed in the labels, nowhere else
    with Dataset(demos) as src, Dataset(out) as ds:
        assert len(ds) == len(src) == 4
        for i in range(len(ds)):
            ep, orig = ds.episode(i), src.episode(i)
            assert np.array_equal(ep.actions, orig.actions) and np.array_equal(
                ep.obs["head_left"], orig.obs["head_left"]
            )
            y = ep.obs[OBJECT_STATE]
            cond = ep.provenance.condition
            # the start: where the trial put the object (belt frame), at the lab's belt speed
            assert np.hypot(y[0, 0] - cond["start_x"], y[0, 1] - cond["lateral"]) < 0.015
            speed = world.conveyor.speed_scale * cond["belt_speed"]
            assert abs(y[0, SPEED] - speed) < 0.05 * speed
            assert KNOWN_OBJECTS[int(np.argmax(y[0, WHICH]))] == cond["object"]
            # labelled from the start until the release; the yaw only while on the belt; then nothing
            known = np.isfinite(y[:, POSITION]).all(axis=1)
            assert known[0] and not known[-1] and np.all(np.diff(known.astype(int)) <= 0)
            assert np.isfinite(y[:, YAW]).all(axis=1).sum() < known.sum()
            # on the belt the object moves along +x at the belt speed
            dx = np.diff(y[:5, 0]) * ds.control_rate_hz
            assert np.allclose(dx, y[0, SPEED], rtol=1e-4) and np.allclose(np.diff(y[:5, 1]), 0, atol=1e-9)


def test_labelling_resumes_and_refuses_labelled_input(labelled, tmp_path):
    world, demos, out = labelled
    again = tmp_path / "again"
    label_demonstrations(demos, world, again)
    label_demonstrations(demos, world, again)  # nothing left to do: no duplicate
    with Dataset(out) as first, Dataset(again) as ds:
        assert [ds.provenance(i).key for i in range(len(ds))] == [first.provenance(i).key for i in range(len(first))]
        a, b = ds.episode(1).obs[OBJECT_STATE], first.episode(1).obs[OBJECT_STATE]
        assert np.array_equal(a, b, equal_nan=True)  # the same labels, to the bit
    with pytest.raises(R2S2RError, match="already carries"):
        label_demonstrations(out, world, tmp_path / "twice")


def test_cli_label_names_a_missing_calibration(real_demos, tmp_path, capsys):
    _, demos = real_demos
    assert (
        main(
            [
                "demos",
                "label",
                "--demos",
                str(demos),
                "--calibration",
                str(tmp_path / "nope"),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert "--calibration" in capsys.readouterr().err


def test_a_policy_with_the_object_head_trains_on_labels_and_reports_the_held_out_error(
    labelled, tmp_path, one_torch_thread
):
    from r2s2r.train import get_preset, train

    _, demos, out = labelled
    p = get_preset("tiny")
    policy = dataclasses.replace(p.policy, cameras=("head_left",), object_state=1.0)
    preset = dataclasses.replace(
        p, policy=policy, train=dataclasses.replace(p.train, steps=4, holdout=0.25, checkpoint_every=2)
    )
    res = train(out, [], tmp_path / "run", preset)
    vals = [r for r in res.history if "val_arm" in r]
    assert vals and all(np.isfinite(r["val_object_cm"]) and r["val_object_cm"] > 0 for r in vals)
    # the unlabelled demonstrations cannot train it
    with pytest.raises(R2S2RError, match="no dataset carries"):
        train(demos, [], tmp_path / "run2", preset)


@pytest.mark.parametrize("behavior", ["teleop-takeover", "teleop"])
def test_a_takeover_gets_unknown_labels_and_a_demonstration_that_cannot_be_labelled_an_error(
    real_demos, tmp_path, behavior
):
    """A takeover episode starts wherever the policy left the cell (the object possibly touched or in
    the hand): its labels are unknown (NaN), even without a stereo pair, while a teleoperated
    demonstration that cannot be labelled stays an error."""
    from r2s2r.data.derive import derive_dataset

    lab, demos = real_demos
    broken = tmp_path / "broken"

    def without_stereo(i, ep):  # a demonstration loses its pair; a takeover keeps it, labels unknown all the same
        prov = dataclasses.replace(ep.provenance, behavior=behavior)
        return dataclasses.replace(ep, provenance=prov, extras={} if behavior == "teleop" else ep.extras)

    derive_dataset(demos, broken, lambda src: list(src.features.values()), without_stereo, {"kind": "test"})
    if behavior == "teleop":
        with pytest.raises(R2S2RError, match="episode 0|demonstration 0"):
            label_demonstrations(broken, _hidden_params(lab), tmp_path / "out")
        return
    label_demonstrations(broken, _hidden_params(lab), tmp_path / "out")
    with Dataset(tmp_path / "out") as ds, Dataset(demos) as src:
        assert len(ds) == len(src)
        for i in range(len(ds)):
            assert np.isnan(ds.episode(i).obs[OBJECT_STATE]).all()
            assert np.array_equal(ds.episode(i).actions, src.episode(i).actions)
