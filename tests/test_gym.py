"""The Gymnasium environments: API conformance (``check_env``), determinism, episode ends, safe
handling of bad actions, errors on bad input, and the scripted operator through the API."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import r2s2r.gym
from r2s2r.errors import ConfigError, R2S2RError, UnknownNameError
from r2s2r.evaluate.policies import ScriptedOperator, joint_target_ranges
from r2s2r.lab.safety import SafetyLimits
from r2s2r.world.conditions import sample_condition

ENVS = {"sim": (r2s2r.gym.SIM_CELL_ID, {}), "lab": (r2s2r.gym.LAB_TWIN_ID, {"lab": 2})}
SMALL = {"image_size": 16, "max_duration": 1.0}
LO, HI = joint_target_ranges().T


def make(which: str, **kwargs) -> gymnasium.Env:
    env_id, extra = ENVS[which]
    return gymnasium.make(env_id, **{**SMALL, **extra, **kwargs})


@pytest.mark.parametrize("which", ENVS)
def test_check_env_passes_with_only_the_action_scale_advice(which):
    env = make(which, render_mode="rgb_array")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)  # render and close checks included (the env has a spec)
    finally:
        env.close()
    # actions are absolute joint targets in rad (the project's convention), not scaled to [-1, 1]
    others = [str(w.message) for w in caught if "symmetric and normalized space" not in str(w.message)]
    assert others == []


def test_make_builds_the_documented_spaces():
    env = gymnasium.make(r2s2r.gym.SIM_CELL_ID, cameras=("head_left", "right_wrist"), image_size=24)
    try:
        assert env.spec.id == "r2s2r/SimCell-v0"
        space = env.observation_space
        assert set(space) == {"head_left", "right_wrist", "proprio"}
        assert space["head_left"].shape == (24, 24, 3) and space["head_left"].dtype == np.uint8
        assert space["proprio"].dtype == np.float32 and space["proprio"].shape == (27,)
        act = env.action_space
        assert act.dtype == np.float32 and act.shape == (27,)
        assert np.allclose(act.low, LO) and np.allclose(act.high, HI)
        obs, info = env.reset(seed=3)
        assert obs in space and info["condition"].kind == "nominal"
        assert env.unwrapped.human_view().object_name == info["condition"].object
    finally:
        env.close()


@pytest.mark.parametrize("which", ENVS)
def test_same_seed_gives_the_same_episode(which):
    runs = []
    for seed in (11, 11, 12):
        env = make(which, cameras=("head_left", "right_wrist"))
        obs, info = env.reset(seed=seed)
        frames = [obs]
        actions = np.random.default_rng(0).uniform(LO, HI, size=(3, 27)).astype(np.float32)
        for a in actions:
            obs, _r, _term, _trunc, step_info = env.step(a)
            frames.append(obs)
        env.close()
        runs.append((info["condition"], info["trial_seed"], frames, step_info))
    (cond_a, seed_a, frames_a, info_a), (cond_b, seed_b, frames_b, info_b), (cond_c, _, frames_c, _) = runs
    assert (cond_a, seed_a) == (cond_b, seed_b)
    for fa, fb in zip(frames_a, frames_b, strict=True):
        assert fa.keys() == fb.keys() and all(np.array_equal(fa[k], fb[k]) for k in fa)
    assert np.array_equal(info_a["command"], info_b["command"]) and info_a["safety"] == info_b["safety"]
    assert cond_c != cond_a  # another seed, another trial
    assert not np.array_equal(frames_c[0]["head_left"], frames_a[0]["head_left"])


@pytest.mark.parametrize("which", ENVS)
def test_out_of_range_and_nan_actions_pass_the_lab_safety_filter(which):
    env = make(which, cameras=())
    try:
        obs, _ = env.reset(seed=5)
        wild = np.where(np.arange(27) % 2 == 0, HI + 1.0, LO - 1.0).astype(np.float32)
        obs, _r, _t, _tr, info = env.step(wild)
        assert obs in env.observation_space
        assert np.all(info["command"] >= LO - 1e-6) and np.all(info["command"] <= HI + 1e-6)
        # both cells run the lab's safety filter: arm targets inside a margin of the joint ranges
        assert info["safety"].get("joint_limit") == 1
        margin = SafetyLimits().joint_margin
        assert np.all(info["command"][:7] >= LO[:7] + margin - 1e-6)
        assert np.all(info["command"][:7] <= HI[:7] - margin + 1e-6)
        before = info["command"]
        bad = np.full(27, np.nan, dtype=np.float32)
        obs, _r, _t, _tr, info = env.step(bad)
        assert obs in env.observation_space and np.all(np.isfinite(obs["proprio"]))
        assert info["safety"].get("non_finite") == 1
        assert np.array_equal(info["command"], before)  # the previous command holds
        with pytest.raises(ConfigError, match=r"shape \(27,\)"):
            env.step(np.zeros(7, dtype=np.float32))
    finally:
        env.close()


def test_truncation_at_max_duration_and_no_step_after_the_end():
    env = make("sim", cameras=(), max_duration=0.5)
    try:
        obs, _ = env.reset(seed=1)
        ends = []
        for _ in range(5):  # hold still: the object rides by, never lifted
            obs, reward, terminated, truncated, info = env.step(obs["proprio"])
            ends.append((reward, terminated, truncated))
        assert ends[:4] == [(0.0, False, False)] * 4
        assert ends[4] == (0.0, False, True) and info["failure"] == "missed" and info["time"] == pytest.approx(0.5)
        with pytest.raises(ConfigError, match="episode has ended"):
            env.unwrapped.step(obs["proprio"])
    finally:
        env.close()


def test_reset_runs_a_given_condition_and_render_shows_the_first_camera():
    cond = sample_condition("belt_speed", np.random.default_rng(4))
    env = make("sim", cameras=("right_wrist", "head_left"), render_mode="rgb_array")
    try:
        obs, info = env.reset(seed=0, options={"condition": cond})
        assert info["condition"] == cond and env.unwrapped.cell.condition == cond
        assert np.array_equal(env.render(), obs["right_wrist"])
        obs, *_ = env.step(obs["proprio"])
        assert np.array_equal(env.render(), obs["right_wrist"])
        with pytest.raises(ConfigError, match="only 'condition'"):
            env.reset(options={"conditon": cond})
    finally:
        env.close()


def test_bad_input_raises_r2s2r_errors(tmp_path):
    with pytest.raises(R2S2RError, match="missing.json"):
        gymnasium.make(r2s2r.gym.SIM_CELL_ID, world=tmp_path / "missing.json")
    bad = tmp_path / "world.json"
    bad.write_text('{"cameras": 3}')
    with pytest.raises(ConfigError, match="world.json"):
        gymnasium.make(r2s2r.gym.SIM_CELL_ID, world=str(bad))
    with pytest.raises(UnknownNameError, match="Did you mean 'nominal'"):
        gymnasium.make(r2s2r.gym.SIM_CELL_ID, condition="nominall")
    with pytest.raises(UnknownNameError, match="head_centre"):
        gymnasium.make(r2s2r.gym.LAB_TWIN_ID, cameras=("head_centre",))
    with pytest.raises(ConfigError, match="render_mode"):
        r2s2r.gym.SimCellEnv(render_mode="human")
    with pytest.raises(ConfigError, match="lab seed"):
        r2s2r.gym.LabTwinEnv(lab=-1)
    env = r2s2r.gym.SimCellEnv(cameras=())
    with pytest.raises(ConfigError, match="before reset"):
        env.step(np.zeros(27, dtype=np.float32))
    with pytest.raises(ConfigError, match="before reset"):
        env.human_view()
    env.close()


def test_scripted_operator_succeeds_through_the_sim_env():
    operator = ScriptedOperator()
    env = gymnasium.make(r2s2r.gym.SIM_CELL_ID, cameras=operator.cameras)
    try:
        obs, _ = env.reset(seed=0)
        act = operator.begin(env.unwrapped.station, np.random.default_rng(0))
        rewards, done = [], False
        while not done:
            obs, reward, terminated, truncated, info = env.step(act(obs))
            rewards.append(reward)
            done = terminated or truncated
        assert terminated and not truncated and info["success"] and info["lifted"]
        assert sum(rewards) == rewards[-1] == 1.0  # sparse: only the step that scores the success
        assert info["safety"] == {}
    finally:
        env.close()
