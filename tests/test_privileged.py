"""The privileged-state diagnostic: replayed operator views, a camera-less policy, the trial policy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from r2s2r.data import Dataset
from r2s2r.errors import R2S2RError
from r2s2r.evaluate.privileged import (
    PROPRIO_DIM,
    STATE_DIM,
    STATE_PRESET,
    PrivilegedPolicy,
    replay_states,
    state_features,
    write_state_dataset,
)
from r2s2r.lab.twin import LabTwin
from r2s2r.world.cell import CellConfig
from r2s2r.world.objects import KNOWN_OBJECTS


@pytest.fixture(scope="module")
def replay_lab():
    return LabTwin(3, CellConfig(image_size=16, cameras=()))  # the demos' lab, rendering nothing


def test_state_features_name_the_object(replay_lab, real_demos):
    _, demos = real_demos
    with Dataset(demos) as ds:
        ep = ds.episode(0)
    states = replay_states(replay_lab, ep, "demo 0")
    assert states.shape == (len(ep.actions), STATE_DIM)
    which = states[:, 6:]
    assert np.all(which.sum(axis=1) == 1.0)  # one known object, the same throughout
    assert KNOWN_OBJECTS[int(which[0].argmax())] == ep.provenance.condition["object"]
    assert np.allclose(np.linalg.norm(states[:, 3:5], axis=1), 1.0, atol=1e-5)  # yaw as cos, sin
    # the object rides the belt until it is picked: it moves at the start of the demonstration
    assert np.linalg.norm(states[5, :3] - states[0, :3]) > 0.01
    assert replay_lab.verdict().success  # the replay repeats the recorded (successful) trial
    view = replay_lab.human_view()
    assert np.array_equal(state_features(view)[:3], view.object_pos.astype(np.float32))


def test_replay_rejects_another_trial(replay_lab, real_demos):
    _, demos = real_demos
    with Dataset(demos) as ds:
        ep = ds.episode(1)
    bad = dataclasses.replace(ep, actions=ep.actions + np.float32(0.05))  # commands it was not sent
    with pytest.raises(R2S2RError, match="departs from the recorded joints"):
        replay_states(replay_lab, bad, "demo 1")


def test_state_dataset_trains_and_runs_in_the_lab(replay_lab, real_demos, tmp_path, one_torch_thread):
    from r2s2r.evaluate.runner import EvalConfig, evaluate
    from r2s2r.evaluate.trials import TrialPlan
    from r2s2r.train import train
    from r2s2r.train.presets import get_preset

    _, demos = real_demos
    seen = []
    out = write_state_dataset(demos, tmp_path / "state", replay_lab, on_episode=lambda i, n: seen.append((i, n)))
    with Dataset(out) as ds, Dataset(demos) as src:
        assert len(ds) == len(src) and seen[-1] == (len(src), len(src))
        assert ds.features["obs/proprio"].shape == (PROPRIO_DIM + STATE_DIM,)
        assert not any(f.is_image for f in ds.features.values())
        ep, orig = ds.episode(0), src.episode(0)
        assert np.array_equal(ep.obs["proprio"][:, :PROPRIO_DIM], orig.obs["proprio"])
        assert np.array_equal(ep.actions, orig.actions)
    write_state_dataset(demos, out, replay_lab)  # resumes: nothing to add, nothing duplicated
    with Dataset(out) as ds:
        assert len(ds) == len(seen)
    tiny = get_preset("tiny")
    preset = dataclasses.replace(
        STATE_PRESET,
        policy=dataclasses.replace(tiny.policy, cameras=(), proprio_dim=PROPRIO_DIM + STATE_DIM),
        train=dataclasses.replace(tiny.train, steps=10, checkpoint_every=10),
    )
    train(out, [], tmp_path / "run", preset)
    plan = TrialPlan(nominal=2, lighting=0, belt_speed=0, novel_object=0, combined=0)
    res = evaluate(PrivilegedPolicy(tmp_path / "run"), 3, EvalConfig(plan=plan, batch=2, max_duration=2.0))
    assert [t.index for t in res.outcomes] == [0, 1]
    image = dataclasses.replace(
        tiny,
        policy=dataclasses.replace(tiny.policy, cameras=("head_left",)),
        train=dataclasses.replace(tiny.train, steps=2, checkpoint_every=2),
    )
    train(demos, [], tmp_path / "image", image)
    with pytest.raises(R2S2RError, match="not a privileged-state policy"):
        evaluate(PrivilegedPolicy(tmp_path / "image"), 3, EvalConfig(plan=plan, batch=2, max_duration=1.0))
