"""Co-training: exact mixture quotas, resume equals a straight run, overfitting, checkpoint errors, CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from r2s2r.data import Dataset, DatasetWriter, WindowSampler, standard_features, synthetic_episode
from r2s2r.data.stats import pooled_stats
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.policy import ChunkPolicy, RecedingHorizon, load_policy
from r2s2r.policy.normalize import (
    ARM_DIMS,
    NORMALIZED,
    Normalizer,
    decode_actions,
    encode_actions,
    normalized_dims,
    policy_stats,
)
from r2s2r.train import Mixture, TrainConfig, apportion, get_preset, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REAL_FEATS = standard_features(state_dim=4, image_size=(24, 24))  # resized to the tiny preset's 16 px
SIM_FEATS = standard_features(state_dim=4, image_size=(16, 16))


def write(path: Path, feats, lengths, source: str, seed: int) -> Path:
    with DatasetWriter(path, feats, 10.0) as w:
        for k, n in enumerate(lengths):
            w.add(synthetic_episode(feats, n, np.random.default_rng(seed + k), key=k, source=source))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("train-data")
    return {
        "real": write(root / "real", REAL_FEATS, (12, 14, 10), "real", 0),
        "sim0": write(root / "sim0", SIM_FEATS, (15, 11, 13, 9), "sim", 100),
        "sim1": write(root / "sim1", SIM_FEATS, (20, 30), "sim", 200),
    }


def preset(**train_changes):
    p = get_preset("tiny")
    return dataclasses.replace(p, train=dataclasses.replace(p.train, **train_changes))


def test_apportion_is_exact_and_closest():
    assert apportion(np.array([0.5, 0.5]), 64).tolist() == [32, 32]
    assert apportion(np.array([0.3, 0.7 * 49 / 81, 0.7 * 32 / 81]), 16).tolist() == [5, 7, 4]
    for w in np.random.default_rng(0).dirichlet(np.ones(4), size=50):
        c = apportion(w, 37)
        assert c.sum() == 37 and np.all(np.abs(c - w * 37) < 1)


def test_quota_batches_hold_exactly_the_ratio_and_natural_follows_sizes(data):
    dss = {n: Dataset(p) for n, p in data.items()}
    samplers = {n: WindowSampler(ds, 8) for n, ds in dss.items()}
    mix = Mixture(samplers, 0.3, 16)
    # 4.8 real; the sims' 11.2 split by their 48:50 frames: 5.49, 5.71 -> largest remainders 5, 5, 6
    assert mix.describe()["per_batch"] == {"real": 5, "sim0": 5, "sim1": 6}
    rng = np.random.default_rng(0)
    for _ in range(100):
        plan = mix.plan(rng)
        assert {n: len(i) for n, i in plan.items()} == {"real": 5, "sim0": 5, "sim1": 6}
        assert all(i.min() >= 0 and i.max() < len(samplers[n]) for n, i in plan.items())
    natural = Mixture(samplers, None, 16)
    totals = np.zeros(3)
    for _ in range(400):
        totals += [len(i) for i in natural.plan(rng).values()]
    assert np.allclose(totals / totals.sum(), natural.frames / natural.frames.sum(), atol=0.02)
    with pytest.raises(R2S2RError, match="no sample per batch"):
        Mixture(samplers, 0.99, 16)
    with pytest.raises(R2S2RError, match="real share"):
        Mixture({"real": samplers["real"]}, 0.5, 16)
    for ds in dss.values():
        ds.close()


def test_training_batches_come_from_their_sources_in_quota(data):
    from r2s2r.policy import resize_images
    from r2s2r.train.pipeline import BatchLoader
    from r2s2r.train.sources import open_sources

    p = preset(ratio=0.5)
    src = open_sources(data["real"], [data["sim0"]], p.policy)
    episodes = {n: [ds.episode(i) for i in range(len(ds))] for n, ds in src.datasets.items()}
    mix = Mixture(src.samplers, 0.5, 16)
    cached = BatchLoader(mix, p.policy, 0, np.random.default_rng(0), prefetch=2, cache_bytes=1 << 30)
    uncached = BatchLoader(mix, p.policy, 0, np.random.default_rng(0), prefetch=0, cache_bytes=0)
    with cached, uncached:
        for _ in range(8):
            b, u = cached.next(), uncached.next()
            assert b.counts == {"real": 8, "sim0": 8}
            for k, (name, (e, t)) in enumerate(zip(["real"] * 8 + ["sim0"] * 8, b.frame_index, strict=True)):
                ep = episodes[name][e]
                assert np.array_equal(b.proprio[k], ep.obs["proprio"][t])
                assert np.array_equal(b.actions[k, 0], ep.actions[t])
                for cam in p.policy.cameras:  # the real data is stored at 24 px: resized to 16
                    assert np.array_equal(b.images[cam][k], resize_images(ep.obs[cam][t : t + 1], 16)[0])
            for cam in p.policy.cameras:
                assert np.array_equal(b.images[cam], u.images[cam])  # the cache changes nothing
    assert cached.frames.hits > 0 and uncached.frames.hits == 0
    src.close()


def test_shifts_translate_frames_with_edge_padding():
    from r2s2r.train.pipeline import shift_images

    frames = np.random.default_rng(0).integers(0, 256, size=(2, 8, 8, 3), dtype=np.uint8)
    same = shift_images(frames, np.array([[2, 2], [2, 2]]), 2)
    assert np.array_equal(same, frames)
    moved = shift_images(frames, np.array([[0, 2], [4, 3]]), 2)
    assert np.array_equal(moved[0, 2:], frames[0, :-2]) and np.array_equal(moved[0, :2], frames[0, :1].repeat(2, 0))
    assert np.array_equal(moved[1, :-2, :-1], frames[1, 2:, 1:])


@pytest.fixture(scope="module")
def straight(data, tmp_path_factory, one_torch_thread):
    """Four steps of real + sim at ratio 0.5 without interruption (bitwise resume needs the same threads)."""
    out = tmp_path_factory.mktemp("straight") / "run"
    p = preset(steps=4, ratio=0.5, checkpoint_every=100, log_every=1)
    return p, out, train(data["real"], [data["sim0"]], out, p)


def test_resuming_after_step_2_equals_training_4_steps_straight(data, straight, tmp_path):
    p, out, full = straight
    part = tmp_path / "run"
    first = train(data["real"], [data["sim0"]], part, p, stop_at=2)
    assert first.step == 2 and (part / "step_00000002").is_dir()
    second = train(data["real"], [data["sim0"]], part, p)
    assert second.resumed_from == 2 and second.step == 4
    a, b = out / "step_00000004", part / "step_00000004"
    for name in ("model.safetensors", "train.safetensors", "stats.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    sa, sb = (json.loads((d / "train_state.json").read_text()) for d in (a, b))
    assert sa["rng_states"] == sb["rng_states"] and sa["samples"] == sb["samples"] == {"real": 32, "sim0": 32}
    assert [r["loss"] for r in sa["history"]] == [r["loss"] for r in sb["history"]]
    with pytest.raises(R2S2RError, match="already trained to step 4"):
        train(data["real"], [data["sim0"]], part, p)
    with pytest.raises(R2S2RError, match="other settings.*train.lr"):
        train(data["real"], [data["sim0"]], part, preset(steps=4, ratio=0.5, lr=1e-4))
    with pytest.raises(R2S2RError, match="sources"):
        train(data["real"], [data["sim1"]], part, preset(steps=4, ratio=0.5, checkpoint_every=100, log_every=1))


def test_a_checkpoint_asked_for_midway_is_the_folder_of_a_run_stopped_there(data, straight, tmp_path, one_torch_thread):
    # the study keeps a copy of its baseline's run at each early-stop step in place of a second training
    import shutil

    p, out, full = straight
    copy = tmp_path / "copy"

    def keep(step, record):
        if step == 2:
            shutil.copytree(tmp_path / "full", copy)

    train(data["real"], [data["sim0"]], tmp_path / "full", p, checkpoint_at=(2,), on_step=keep)
    stopped = tmp_path / "stopped"
    train(data["real"], [data["sim0"]], stopped, p, stop_at=2)
    assert sorted(f.name for f in copy.iterdir()) == sorted(f.name for f in stopped.iterdir())
    for name in ("model.safetensors", "train.safetensors", "stats.json"):
        assert (copy / "step_00000002" / name).read_bytes() == (stopped / "step_00000002" / name).read_bytes()
    # and the run goes on as if nothing happened at step 2: the same weights at step 4
    a, b = out / "step_00000004", tmp_path / "full" / "step_00000004"
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()


def test_the_checkpoint_records_the_mixture_and_the_policy_input(straight):
    p, out, result = straight
    meta = json.loads((out / "step_00000004" / "config.json").read_text())
    assert meta["mixture"]["mode"] == "quota" and meta["mixture"]["per_batch"] == {"real": 8, "sim0": 8}
    assert meta["policy"]["cameras"] == list(p.policy.cameras) and meta["policy"]["image_size"] == 16
    assert [s["name"] for s in meta["sources"]] == ["real", "sim0"]
    policy = load_policy(out)
    assert isinstance(policy, ChunkPolicy)
    assert (policy.cameras, policy.image_size, policy.action_horizon, policy.execute_steps) == (
        p.policy.cameras,
        16,
        8,
        4,
    )


def test_replanning_every_k_changes_the_execution_only(straight):
    policy = load_policy(straight[1])
    two = policy.replanning_every(2)
    assert (two.execute_steps, policy.execute_steps) == (2, 4) and two.model is policy.model
    obs = obs_batch(policy, 3)
    assert np.array_equal(
        two.predict_chunk(obs, np.random.default_rng(1)), policy.predict_chunk(obs, np.random.default_rng(1))
    )
    calls, predict = [], two.predict_chunk
    two.predict_chunk = lambda o, rng: calls.append(1) or predict(o, rng)
    horizon, rng = RecedingHorizon(two), np.random.default_rng(0)
    for _ in range(5):
        horizon.act(obs, rng)
    assert len(calls) == 3  # re-planned at steps 0, 2 and 4
    for bad in (0, policy.action_horizon + 1):
        with pytest.raises(ConfigError, match="execute_steps"):
            policy.replanning_every(bad)


def obs_batch(policy, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    s = policy.image_size
    obs = {c: rng.integers(0, 256, size=(n, s, s, 3), dtype=np.uint8) for c in policy.cameras}
    obs["proprio"] = rng.normal(size=(n, 27)).astype(np.float32)
    return obs


def test_predict_chunk_is_batched_and_determined_by_the_generator(straight):
    policy = load_policy(straight[1])
    obs = obs_batch(policy, 5)
    a = policy.predict_chunk(obs, np.random.default_rng(7))
    assert a.shape == (5, 8, 27) and a.dtype == np.float32 and np.isfinite(a).all()
    assert np.array_equal(a, policy.predict_chunk(obs, np.random.default_rng(7)))
    assert not np.array_equal(a, policy.predict_chunk(obs, np.random.default_rng(8)))
    e = policy.embed(obs)
    # batch-independent up to float rounding: CPU kernels may sum in another order for another batch size
    assert e.shape == (5, policy.config.width) and np.allclose(
        e[:2], policy.embed({k: v[:2] for k, v in obs.items()}), rtol=1e-5, atol=1e-6
    )
    bad = dict(obs, head_left=obs["head_left"][:, :8])
    with pytest.raises(R2S2RError, match="head_left.*shape"):
        policy.predict_chunk(bad, np.random.default_rng(0))
    with pytest.raises(R2S2RError, match="missing"):
        policy.predict_chunk({k: v for k, v in obs.items() if k != "proprio"}, np.random.default_rng(0))
    with pytest.raises(R2S2RError, match="uint8"):
        policy.embed(dict(obs, right_wrist=obs["right_wrist"].astype(np.float32)))


def test_a_guided_chunk_moves_toward_its_target_only_where_weighted(straight):
    policy = load_policy(straight[1])
    obs = obs_batch(policy, 4)
    h = policy.action_horizon
    plain = policy.predict_chunk(obs, np.random.default_rng(3))
    target = plain + 0.5  # rad, every joint
    free = policy.predict_chunk(obs, np.random.default_rng(3), (target, np.zeros(h)))
    np.testing.assert_allclose(free, plain, rtol=0, atol=1e-6)  # no weight, no pull
    weights = np.r_[np.ones(h // 2), np.zeros(h - h // 2)]
    pulled = policy.predict_chunk(obs, np.random.default_rng(3), (target, weights))
    before, after = (np.abs(x[:, : h // 2] - target[:, : h // 2]).mean() for x in (plain, pulled))
    assert after < 0.5 * before  # the guided rows went most of the way
    for guide, what in (
        ((target[:2], weights), "targets \\(4, 8, 27\\)"),
        ((target, weights[:3]), "weights"),
        ((target, weights * 2), "in \\[0, 1\\]"),
    ):
        with pytest.raises(R2S2RError, match=what):
            policy.predict_chunk(obs, np.random.default_rng(3), guide)


def copy_run(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_corrupt_or_mismatched_checkpoints_raise(data, straight, tmp_path):
    out = straight[1]
    run = copy_run(out, tmp_path / "a")
    ckpt = run / "step_00000004"
    raw = bytearray((ckpt / "model.safetensors").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (ckpt / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(R2S2RError, match="model.safetensors: SHA-256 differs"):
        load_policy(run)

    run = copy_run(out, tmp_path / "b")
    meta = json.loads((run / "step_00000004" / "config.json").read_text())
    meta["policy"]["width"] = 48
    (run / "step_00000004" / "config.json").write_text(json.dumps(meta))
    with pytest.raises(R2S2RError, match="weights do not match"):
        load_policy(run)
    meta["policy"]["width"] = "wide"
    (run / "step_00000004" / "config.json").write_text(json.dumps(meta))
    with pytest.raises(R2S2RError, match="policy.width"):
        load_policy(run / "step_00000004")

    run = copy_run(out, tmp_path / "c")
    (run / "step_00000004" / "stats.json").unlink()
    with pytest.raises(R2S2RError, match="stats.json: missing"):
        load_policy(run)
    (run / "latest").write_text("../../etc\n")
    with pytest.raises(R2S2RError, match="latest"):
        load_policy(run)
    with pytest.raises(R2S2RError, match="not a checkpoint folder"):
        load_policy(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text('{"format": "other"}')
    with pytest.raises(R2S2RError, match="not an r2s2r policy checkpoint"):
        load_policy(tmp_path / "d")

    run = copy_run(out, tmp_path / "e")  # a resume refuses a corrupt training state too
    state = run / "step_00000004" / "train.safetensors"
    state.write_bytes(state.read_bytes()[:100])
    with pytest.raises(R2S2RError, match="train.safetensors: SHA-256 differs"):
        train(data["real"], [data["sim0"]], run, straight[0])


def test_bad_sources_and_names_are_explained(data, tmp_path):
    with pytest.raises(R2S2RError, match="given as a real dataset.*'sim'"):
        train(data["sim0"], [], tmp_path / "x", preset())
    with pytest.raises(R2S2RError, match="more than once"):
        train(data["real"], [data["sim0"], data["sim0"]], tmp_path / "x", preset(ratio=0.5))
    with pytest.raises(R2S2RError, match="no such dataset"):
        train(tmp_path / "nothing", [], tmp_path / "x", preset())
    with pytest.raises(R2S2RError, match="Did you mean 'tiny'"):
        get_preset("tinny")
    import importlib.util

    if importlib.util.find_spec("tensorboard") is None:
        with pytest.raises(R2S2RError, match="tensorboard"):
            train(data["real"], [], tmp_path / "x", preset(), tensorboard=True)
        assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("delta_arm", [False, True])
def test_the_policy_overfits_a_handful_of_episodes(tmp_path, delta_arm):
    feats = standard_features(state_dim=4, image_size=(16, 16))
    real = write(tmp_path / "few", feats, (10, 12, 8), "real", 50)
    p = preset(steps=500, batch_size=32, lr=2e-3, warmup_steps=20, shift_px=0, min_lr_ratio=0.01, checkpoint_every=500)
    p = dataclasses.replace(p, policy=dataclasses.replace(p.policy, width=64, delta_arm=delta_arm))  # 30 chunks
    train(real, [], tmp_path / "run", p)
    policy = load_policy(tmp_path / "run")
    with Dataset(real) as ds:
        sampler = WindowSampler(ds, policy.action_horizon, (*policy.cameras, "proprio"))
        batch = sampler.sample(np.arange(len(sampler)))
    obs = {k[4:]: v for k, v in batch.items() if k.startswith("obs/")}
    pred = policy.predict_chunk(obs, np.random.default_rng(0))
    err = np.abs(pred - batch["actions"]).mean()
    spread = np.abs(batch["actions"] - batch["actions"].mean(axis=(0, 1))).mean()
    assert err < 0.15 * spread, (err, spread)
    # another draw of the noise gives nearly the same chunks: the flow has collapsed onto the data
    again = policy.predict_chunk(obs, np.random.default_rng(1))
    assert np.abs(again - batch["actions"]).mean() < 0.15 * spread


def test_delta_arm_statistics_are_those_of_the_chunk_offsets_and_decoding_inverts_encoding(data):
    cfg = dataclasses.replace(get_preset("tiny").policy, delta_arm=True)
    with Dataset(data["real"]) as ds:
        pooled = pooled_stats([ds], NORMALIZED)
        got = policy_stats(cfg, [ds], pooled)
        rows = []  # brute force: every (t, i) with t + i inside the episode
        for e in range(len(ds)):
            a, q = ds.group(e)["actions"][()], ds.group(e)["obs/proprio"][()]
            for t in range(len(a)):
                for i in range(min(cfg.action_horizon, len(a) - t)):
                    rows.append(np.concatenate([a[t + i, :ARM_DIMS] - q[t, :ARM_DIMS], a[t + i, ARM_DIMS:]]))
    want = np.asarray(rows)
    assert np.allclose(got.features["actions"].mean, want.mean(0))
    assert np.allclose(got.features["actions"].q99, np.quantile(want, 0.99, axis=0))
    assert got.features["obs/proprio"] is pooled.features["obs/proprio"] and got.content_hash == pooled.content_hash
    assert policy_stats(get_preset("tiny").policy, [], pooled) is pooled  # absolute targets: the frames' stats
    norm = Normalizer(got, cfg.normalization, normalized_dims(cfg))
    gen = torch.Generator().manual_seed(0)
    actions = torch.randn(5, cfg.action_horizon, cfg.action_dim, generator=gen, dtype=torch.float64)
    proprio = torch.randn(5, cfg.proprio_dim, generator=gen)
    x = encode_actions(cfg, norm, actions, proprio)
    assert torch.allclose(decode_actions(cfg, norm, x, proprio).double(), actions, atol=1e-5)
    moved = proprio.clone()
    moved[:, :ARM_DIMS] += 0.3  # the arm's targets follow the joints, the hand's do not
    shift = decode_actions(cfg, norm, x, moved).double() - actions
    assert torch.allclose(shift[..., :ARM_DIMS], torch.full_like(shift[..., :ARM_DIMS], 0.3), atol=1e-5)
    assert torch.allclose(shift[..., ARM_DIMS:], torch.zeros_like(shift[..., ARM_DIMS:]), atol=1e-5)


def test_cli_trains_and_resumes(data, tmp_path, capsys):
    from r2s2r.cli import main

    out = tmp_path / "cli"
    args = ["train", "--real", str(data["real"]), "--sim", str(data["sim0"]), str(data["sim1"]), "--ratio", "0.5"]
    args += ["--preset", "tiny", "--steps", "3", "--threads", "1", "--out", str(out)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "step 3" in err and "real 24" in err
    assert load_policy(out).action_horizon == 8
    assert main([*args[:-2], "--steps", "4", "--out", str(out)]) == 2
    assert "train.steps: checkpoint 3, now 4" in capsys.readouterr().err
    assert main(["train", "--real", str(data["real"]), "--preset", "cpux", "--out", str(out)]) == 2
    assert "Did you mean 'cpu'" in capsys.readouterr().err


@pytest.mark.slow
def test_two_processes_train_with_ddp_and_resume_needs_the_same_world(data, tmp_path):
    import os
    import subprocess
    import sys

    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "r2s2r.cli"]
    cmd += ["train", "--real", str(data["real"]), "--sim", str(data["sim0"]), "--ratio", "0.5", "--preset", "tiny"]
    cmd += ["--steps", "3", "--threads", "1", "--device", "cpu", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    state = json.loads((out / "step_00000003" / "train_state.json").read_text())
    assert len(state["rng_states"]) == 2 and state["rng_states"][0] != state["rng_states"][1]
    assert state["samples"] == {"real": 24, "sim0": 24}  # 2 processes x (4 real + 4 sim) x 3 steps
    assert json.loads((out / "step_00000003" / "config.json").read_text())["world_size"] == 2
    policy = load_policy(out)
    assert np.isfinite(policy.predict_chunk(obs_batch(policy, 2), np.random.default_rng(0))).all()
    with pytest.raises(R2S2RError, match="world_size: checkpoint 2, now 1"):
        train(data["real"], [data["sim0"]], out, preset(steps=5, ratio=0.5))


def test_flow_samples_share_one_encoding_and_repeat_the_same_loss():
    # R copies of the same (noise, time) per observation give the loss of one copy: each flow sample
    # is paired with its own observation's tokens and actions
    import torch

    from r2s2r.policy.model import FlowTransformer

    p = get_preset("tiny").policy
    torch.manual_seed(0)
    model = FlowTransformer(p)
    b = 3
    images = {c: torch.randint(0, 256, (b, 16, 16, 3), dtype=torch.uint8) for c in p.cameras}
    proprio, actions = torch.randn(b, 27), torch.randn(b, p.action_horizon, 27)
    noise, t = torch.randn(b, p.action_horizon, 27), torch.rand(b)
    one = model(images, proprio, actions, noise, t)
    three = model(images, proprio, actions, noise.repeat_interleave(3, 0), t.repeat_interleave(3, 0))
    torch.testing.assert_close(three, one, rtol=1e-5, atol=1e-6)
    shuffled = model(images, proprio, actions, noise.repeat(3, 1, 1), t.repeat(3))  # wrong pairing
    assert not torch.allclose(shuffled, one)


def lowest(records: list[dict]) -> float:
    return min((r["val_arm"] for r in records), default=float("inf"))


def test_best_checkpoint_rule():
    from r2s2r.train.loop import is_best

    assert is_best(0.05, float("inf"), 0.02)  # the first checkpoint
    assert not is_best(float("inf"), float("inf"), 0.02)  # no held-out error (no held-out demos): no best
    assert is_best(0.04, 0.05, 0.0)  # a new lowest error
    assert is_best(0.051, 0.05, 0.02) and not is_best(0.051, 0.05, 0.01)  # within the tolerance, or not
    assert is_best(0.05, 0.05, 0.0) and not is_best(0.0500001, 0.05, 0.0)  # no tolerance: the latest lowest
    vals = [0.10, 0.06, 0.0605, 0.07, 0.0601]  # a flat tail: the latest within 2 % of 0.06 wins
    assert [i for i, v in enumerate(vals) if is_best(v, min(vals[:i], default=float("inf")), 0.02)] == [0, 1, 2, 4]
    with pytest.raises(ConfigError, match="best_tolerance"):
        TrainConfig(best_tolerance=-0.1)
    with pytest.raises(ConfigError, match="best_tolerance"):
        TrainConfig(best_tolerance=float("nan"))


def test_the_held_out_ratio_interval_resamples_whole_episodes():
    from r2s2r.train.validation import ratio_interval

    hold = np.array([1.0, 2.0, 3.0, 1.0, 1.0, 2.0])
    same = np.array([0, 0, 1, 1, 2, 2])
    assert ratio_interval(0.5 * hold, hold, same, seed=0) == pytest.approx((0.5, 0.5))  # every episode at 0.5
    assert ratio_interval(0.5 * hold, hold, np.zeros(6), seed=0) is None  # one episode: no interval
    # two episodes of equal hold, at 0.2 and 1.0: a resample holds twice one (0.2 or 1.0) or both (0.6)
    err, groups = np.array([0.2, 0.2, 1.0, 1.0]), np.array([7, 7, 3, 3])
    assert ratio_interval(err, np.ones(4), groups, seed=1) == pytest.approx((0.2, 1.0))
    # frames of one episode move together: the interval is that of the episodes' ratios, whatever their frame
    # counts, and the entries' order does not matter
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(10), rng.integers(5, 40, size=10))
    hold = rng.uniform(0.05, 0.2, size=len(groups))
    err = hold * rng.uniform(0.2, 0.8, size=10)[groups]
    lo, hi = ratio_interval(err, hold, groups, seed=2)
    assert lo < err.sum() / hold.sum() < hi and hi - lo > 0.05
    order = rng.permutation(len(groups))
    assert ratio_interval(err[order], hold[order], groups[order], seed=2) == pytest.approx((lo, hi))
    assert ratio_interval(err, hold, groups, seed=3) != (lo, hi)  # drawn by the seed


def test_held_out_demos_pick_the_best_checkpoint(tmp_path):
    from r2s2r.policy.checkpoint import BEST, LATEST
    from r2s2r.train.loop import is_best
    from r2s2r.train.validation import split_episodes

    feats = standard_features(state_dim=4, image_size=(16, 16))
    real = write(tmp_path / "demos", feats, (12, 10, 14, 11, 13), "real", 7)
    train_eps, held = split_episodes(5, 0.2, seed=3)
    assert len(held) == 1 and sorted([*train_eps, *held]) == list(range(5))
    p = preset(steps=60, checkpoint_every=20, log_every=10, holdout=0.2, seed=3, lr=2e-3, flow_samples=2)
    res = train(real, [], tmp_path / "run", p)
    vals = [r for r in res.history if "val_arm" in r]
    assert [r["step"] for r in vals] == [20, 40, 60]
    assert all(r["val_hold_arm"] == vals[0]["val_hold_arm"] > 0 for r in vals)  # the same frames each time
    assert not any("val_arm_ratio_lo" in r for r in vals)  # one held-out episode: no interval over episodes
    assert res.samples["real"] == 60 * 16
    # the latest checkpoint within best_tolerance of the lowest error before and at it
    best = [r["step"] for i, r in enumerate(vals) if is_best(r["val_arm"], lowest(vals[:i]), 0.02)][-1]
    assert best == max(r["step"] for r in vals if r["val_arm"] <= 1.02 * min(v["val_arm"] for v in vals))
    run = tmp_path / "run"
    assert (run / BEST).read_text().strip() == f"step_{best:08d}" and (run / f"step_{best:08d}").is_dir()
    assert (run / LATEST).read_text().strip() == "step_00000060"
    meta = json.loads((run / "step_00000060" / "config.json").read_text())
    assert meta["sources"][0]["held_out"] == held.tolist()
    # the held-out episode is never trained on
    with Dataset(real) as ds:
        from r2s2r.train.sources import open_sources

        src = open_sources(real, [], p.policy, 0.2, 3)
        try:
            assert set(src.samplers["real"].index[:, 0].tolist()) == set(train_eps.tolist())
        finally:
            src.close()
        assert len(ds) == 5
    # the policy loaded from the run folder is the best checkpoint's
    import torch

    from r2s2r.policy.checkpoint import WEIGHTS, read_tensors

    policy = load_policy(run)
    want = read_tensors(run / f"step_{best:08d}" / WEIGHTS)
    for k, v in policy.model.state_dict().items():
        torch.testing.assert_close(v, want[k])


def test_a_past_frame_policy_trains_on_the_frames_that_many_steps_back(data, tmp_path):
    from r2s2r.policy import resize_images
    from r2s2r.train.pipeline import BatchLoader
    from r2s2r.train.sources import open_sources

    p = preset(steps=6, checkpoint_every=3, holdout=0.3, log_every=3)
    p = dataclasses.replace(p, policy=dataclasses.replace(p.policy, past_frame=3))
    src = open_sources(data["real"], [data["sim0"]], p.policy)
    episodes = {n: [ds.episode(i) for i in range(len(ds))] for n, ds in src.datasets.items()}
    with BatchLoader(Mixture(src.samplers, 0.5, 16), p.policy, 0, np.random.default_rng(1), prefetch=0) as loader:
        for _ in range(4):
            b = loader.next()
            for k, (name, (e, t)) in enumerate(zip(["real"] * 8 + ["sim0"] * 8, b.frame_index, strict=True)):
                ep, tp = episodes[name][e], max(t - 3, 0)  # clamped at the episode's first frame
                assert np.array_equal(b.past_proprio[k], ep.obs["proprio"][tp])
                for cam in p.policy.cameras:
                    assert np.array_equal(b.images["past/" + cam][k], resize_images(ep.obs[cam][tp : tp + 1], 16)[0])
    src.close()
    # the whole path: training with the held-out probe, the checkpoint, the policy asking for past/ keys
    res = train(data["real"], [data["sim0"]], tmp_path / "run", p)
    assert [r["step"] for r in res.history if "val_arm" in r] == [3, 6]
    policy = load_policy(tmp_path / "run")
    assert policy.past_frame == 3
    rng = np.random.default_rng(0)
    obs = {c: rng.integers(0, 256, (2, 16, 16, 3), dtype=np.uint8) for c in policy.cameras}
    obs["proprio"] = np.zeros((2, 27), np.float32)
    with pytest.raises(R2S2RError, match="past/"):
        policy.predict_chunk(obs, rng)
    obs.update({"past/" + k: v for k, v in obs.items()})
    assert policy.predict_chunk(obs, rng).shape == (2, policy.action_horizon, 27)


def test_a_policy_reading_one_earlier_camera_loads_and_probes_that_one_alone(data, tmp_path):
    from r2s2r.train.pipeline import BatchLoader
    from r2s2r.train.sources import open_sources

    p = preset(steps=2, checkpoint_every=2, holdout=0.3, log_every=1)
    first = p.policy.cameras[0]
    p = dataclasses.replace(p, policy=dataclasses.replace(p.policy, past_frame=3, past_cameras=(first,)))
    src = open_sources(data["real"], [data["sim0"]], p.policy)
    with BatchLoader(Mixture(src.samplers, 0.5, 16), p.policy, 0, np.random.default_rng(1), prefetch=0) as loader:
        assert sorted(k for k in loader.next().images if k.startswith("past/")) == ["past/" + first]
    src.close()
    train(data["real"], [data["sim0"]], tmp_path / "run", p)
    policy = load_policy(tmp_path / "run")
    assert policy.config.past_cameras == (first,)  # through the checkpoint's JSON
    rng = np.random.default_rng(0)
    obs = {c: rng.integers(0, 256, (2, 16, 16, 3), dtype=np.uint8) for c in policy.cameras}
    obs["proprio"] = np.zeros((2, 27), np.float32)
    obs["past/" + first], obs["past/proprio"] = obs[first], obs["proprio"]
    assert policy.predict_chunk(obs, rng).shape == (2, policy.action_horizon, 27)


def test_frames_stored_at_another_size_than_the_policy_are_named(data):
    from r2s2r.train.sources import resize_note

    p = get_preset("tiny").policy  # 16 px
    with Dataset(data["real"]) as real, Dataset(data["sim0"]) as sim:
        note = resize_note(real, p)
        assert note is not None and "[24] px" in note and "--image-size 16" in note
        assert resize_note(sim, p) is None
