"""Policy pieces without training: presets build and run, configs validate, receding horizon, resizing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from r2s2r.errors import R2S2RError
from r2s2r.policy import PolicyConfig, RecedingHorizon, count_parameters, resize_images
from r2s2r.policy.horizon import ChunkEnsemble
from r2s2r.policy.model import FlowTransformer
from r2s2r.policy.policy import obs_keys
from r2s2r.train import PRESETS

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds_and_gives_a_finite_loss_and_chunk(name):
    cfg = PRESETS[name].policy
    torch.manual_seed(0)
    model = FlowTransformer(cfg)
    s, h, a = cfg.image_size, cfg.action_horizon, cfg.action_dim
    keys = [*cfg.cameras, *(f"past/{c}" for c in cfg.past_images)]  # a past-frame policy: earlier images too
    images = {k: torch.randint(0, 256, (2, s, s, 3), dtype=torch.uint8) for k in keys}
    joints = 2 if cfg.past_frame and cfg.past_proprio else 1  # the earlier joints are read only with past_proprio
    proprio = torch.randn(2, joints * cfg.proprio_dim)
    with torch.no_grad():
        tokens = model.encode(images, proprio)
        assert tokens.shape == (2, len(keys) * cfg.tokens_per_camera + joints, cfg.width)
        loss = model(images, proprio, torch.randn(2, h, a), torch.randn(2, h, a), torch.rand(2))
        assert torch.isfinite(loss)
        assert model.sample(tokens, torch.randn(2, h, a)).shape == (2, h, a)
    assert count_parameters(model) > 0


def test_a_past_frame_without_past_proprio_reads_the_earlier_images_only():
    cfg = PolicyConfig(cameras=("head_left",), image_size=16, token_grid=2, width=32, past_frame=3, past_proprio=False)
    assert obs_keys(cfg) == ("head_left", "proprio", "past/head_left")
    torch.manual_seed(0)
    model = FlowTransformer(cfg).eval()
    images = {k: torch.randint(0, 256, (2, 16, 16, 3), dtype=torch.uint8) for k in ("head_left", "past/head_left")}
    proprio = torch.randn(2, cfg.proprio_dim)
    with torch.no_grad():
        tokens = model.encode(images, proprio)
        assert tokens.shape == (2, 2 * cfg.tokens_per_camera + 1, cfg.width)  # no earlier-joints token
        moved = dict(images, **{"past/head_left": torch.zeros_like(images["past/head_left"])})
        assert not torch.allclose(model.encode(moved, proprio), tokens)  # the earlier image is read


def test_past_cameras_choose_which_earlier_images_are_read():
    cams = ("head_left", "right_wrist", "left_wrist")
    small = dict(image_size=16, token_grid=2, width=32)
    cfg = PolicyConfig(cameras=cams, **small, past_frame=3, past_proprio=False, past_cameras=("head_left",))
    assert cfg.past_images == ("head_left",)
    assert obs_keys(cfg) == (*cams, "proprio", "past/head_left")
    assert PolicyConfig(cameras=cams, past_frame=2, past_cameras=("left_wrist", "head_left")).past_images == (
        "head_left",
        "left_wrist",
    )  # in the cameras' order
    assert PolicyConfig(cameras=cams, past_frame=2).past_images == cams  # None: every camera
    assert PolicyConfig(cameras=cams).past_images == ()  # no past frame
    torch.manual_seed(0)
    model = FlowTransformer(cfg).eval()
    images = {k: torch.randint(0, 256, (2, 16, 16, 3), dtype=torch.uint8) for k in obs_keys(cfg) if k != "proprio"}
    proprio = torch.randn(2, cfg.proprio_dim)
    with torch.no_grad():
        tokens = model.encode(images, proprio)
        assert tokens.shape == (2, 4 * cfg.tokens_per_camera + 1, cfg.width)
        moved = dict(images, **{"past/head_left": torch.zeros_like(images["past/head_left"])})
        assert not torch.allclose(model.encode(moved, proprio), tokens)  # the earlier head image is read
        extra = dict(images, **{"past/right_wrist": images["right_wrist"]})
        assert torch.equal(model.encode(extra, proprio), tokens)  # and no other earlier image


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(past_proprio=1), "past_proprio"),
        (dict(past_frame=2, past_cameras=("nowhere",)), "past_cameras"),
        (dict(past_frame=2, past_cameras=["head_left"]), "past_cameras"),
        (dict(past_frame=2, past_cameras=("head_left", "head_left")), "duplicate camera"),
        (dict(past_cameras=("head_left",)), "past_frame > 0"),
        (dict(delta_arm="yes"), "delta_arm"),
        (dict(execute_steps=20), "exceeds action_horizon"),
        (dict(image_size=8), "smaller than token_grid"),
        (dict(width=130, heads=4), "divisible by heads"),
        (dict(normalization="minmax"), "normalisation mode"),
        (dict(cameras=("a", "a")), "duplicate camera"),
        (dict(euler_steps=0), "euler_steps"),
        (dict(noise_scale=-0.5), "noise_scale"),
        (dict(noise_scale=float("nan")), "noise_scale"),
        (dict(noise_scale=True), "noise_scale"),
    ],
)
def test_bad_policy_configs_name_the_field(change, message):
    with pytest.raises(R2S2RError, match=message):
        PolicyConfig(**change)


class CountingPolicy:
    cameras = ("head_left",)
    image_size = 8
    action_horizon = 5
    execute_steps = 3

    def __init__(self):
        self.calls = 0

    def predict_chunk(self, obs, rng):
        self.calls += 1
        b = len(obs["proprio"])
        # action j of chunk c: c * 100 + j, so the executed sequence shows which chunk and step it came from
        return np.broadcast_to((self.calls * 100 + np.arange(5))[None, :, None], (b, 5, 27)).astype(np.float32)


def test_receding_horizon_executes_k_actions_per_chunk():
    policy = CountingPolicy()
    runner = RecedingHorizon(policy)
    obs = {"proprio": np.zeros((4, 27), np.float32)}
    got = [runner.act(obs, np.random.default_rng(0))[0, 0] for _ in range(7)]
    assert got == [100, 101, 102, 200, 201, 202, 300] and policy.calls == 3
    runner.reset()
    assert runner.act(obs, np.random.default_rng(0))[0, 0] == 400


def test_chunk_ensemble_weights_overlapping_chunks_and_keeps_a_consistent_trajectory():
    # consistent chunks (all on one trajectory) are executed exactly, whatever the weights
    traj = np.cumsum(np.random.default_rng(1).normal(size=(40, 27)), axis=0)
    for decay in (None, 0.0, 0.01, 0.5, -0.5):
        ens = ChunkEnsemble(decay)
        got = []
        for step in range(30):
            if step % 3 == 0:
                ens.add(step, traj[step : step + 8])
            got.append(ens.action(step))
        np.testing.assert_allclose(got, traj[:30], atol=1e-4)
    # chunks offset by their index: step 6 is covered by chunks 0 (row 6), 1 (row 3), 2 (row 0)
    ens = ChunkEnsemble(0.5)
    for c in range(3):
        ens.add(3 * c, np.full((8, 27), float(c)))
    w = np.exp(-0.5 * np.arange(3))
    np.testing.assert_allclose(ens.action(6), np.full(27, (w * [0, 1, 2]).sum() / w.sum()), rtol=1e-6)
    plain = ChunkEnsemble(None)
    plain.add(0, np.zeros((8, 27)))
    plain.add(3, np.ones((8, 27)))
    np.testing.assert_array_equal(plain.action(4), np.ones(27))  # newest alone
    with pytest.raises(R2S2RError, match="no chunk covers step 20"):
        plain.action(20)
    with pytest.raises(R2S2RError, match="decay"):
        ChunkEnsemble(float("nan"))


def test_ensembling_shrinks_the_jumps_between_disagreeing_chunks():
    # each chunk is the same trajectory plus its own random offset (a sampled chunk's error): executing
    # the newest alone jumps by the difference of two offsets at every re-plan; the mean of the 4
    # overlapping chunks (H 16, k 4) by a quarter of one
    offsets = np.random.default_rng(0).normal(size=100)

    def rms_jump(decay):
        ens, actions = ChunkEnsemble(decay), []
        for step in range(400):
            if step % 4 == 0:
                ens.add(step, np.full((16, 27), offsets[step // 4]))
            actions.append(ens.action(step)[0])
        return np.sqrt(np.mean(np.diff(actions[16:]) ** 2))

    assert rms_jump(0.0) < 0.3 * rms_jump(None)


def test_resize_keeps_frames_at_size_and_averages_when_shrinking():
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(3, 32, 32, 3), dtype=np.uint8)
    assert resize_images(frames, 32) is frames
    small = resize_images(frames, 16)
    assert small.shape == (3, 16, 16, 3) and small.dtype == np.uint8
    blocks = frames.reshape(3, 16, 2, 16, 2, 3).astype(float).mean(axis=(2, 4))
    assert np.abs(small - blocks).max() <= 1


def test_receding_horizon_gives_a_past_frame_policy_the_observation_d_steps_back():
    class PastCounting(CountingPolicy):
        past_frame = 2

        def __init__(self):
            super().__init__()
            self.pasts = []

        def predict_chunk(self, obs, rng):
            self.pasts.append((obs["proprio"][0, 0], obs["past/proprio"][0, 0]))
            return super().predict_chunk(obs, rng)

    policy = PastCounting()
    runner = RecedingHorizon(policy)
    for step in range(10):
        runner.act({"proprio": np.full((1, 27), step, np.float32)}, np.random.default_rng(0))
    assert policy.pasts == [(0, 0), (3, 1), (6, 4), (9, 7)]  # re-plans every 3 steps, 2 back (first clamped)


def test_spatial_softmax_finds_a_peak_and_moves_with_it():
    """A single hot cell gives that cell's centre; shifting the map shifts the keypoint by a cell."""
    from r2s2r.policy.encoders import SpatialSoftmax

    ss = SpatialSoftmax(1, 1)
    with torch.no_grad():
        ss.maps.weight.fill_(1.0)
        ss.maps.bias.zero_()
        ss.log_temperature.fill_(-4.0)  # sharp: the expectation sits on the peak
    h, w = 12, 8
    for r, c in ((0, 0), (5, 3), (11, 7)):
        fmap = torch.zeros(1, 1, h, w)
        fmap[0, 0, r, c] = 1.0
        xy = ss(fmap)[0, 0]
        assert torch.allclose(xy, torch.tensor([-1 + 2 * c / (w - 1), -1 + 2 * r / (h - 1)]), atol=1e-4)
    blob = torch.zeros(1, 1, h, w)
    blob[0, 0, 4:7, 2:5] = torch.tensor([[0.2, 0.5, 0.2], [0.5, 1.0, 0.5], [0.2, 0.5, 0.2]])
    with torch.no_grad():
        ss.log_temperature.fill_(0.0)  # soft: the expectation interpolates between cells
    a, b = ss(blob)[0, 0], ss(torch.roll(blob, shifts=1, dims=3))[0, 0]
    assert b[0] > a[0] and torch.isclose(b[1], a[1], atol=1e-6)


def test_keypoint_tokens_add_one_per_camera_and_get_gradients():
    cfg = dataclasses.replace(PRESETS["tiny"].policy, keypoints=4)
    model = FlowTransformer(cfg)
    s = cfg.image_size
    images = {c: torch.randint(0, 256, (2, s, s, 3), dtype=torch.uint8) for c in cfg.cameras}
    tokens = model.encode(images, torch.randn(2, cfg.proprio_dim))
    assert tokens.shape == (2, len(cfg.cameras) * (cfg.token_grid**2 + 1) + 1, cfg.width)
    tokens.square().mean().backward()
    enc = model.cameras[cfg.cameras[0]]
    assert enc.keypoints.maps.weight.grad.abs().sum() > 0


def test_noise_scale_zero_samples_one_chunk_whatever_the_draw_and_one_keeps_the_draws_apart():
    cfg = dataclasses.replace(PRESETS["tiny"].policy, cameras=(), proprio_dim=5)
    torch.manual_seed(0)
    model = FlowTransformer(cfg).eval()
    tokens = model.encode({}, torch.randn(2, 5))
    a, b = torch.randn(2, 2, cfg.action_horizon, cfg.action_dim)
    with torch.no_grad():
        assert not torch.allclose(model.sample(tokens, a), model.sample(tokens, b))
        model.config = dataclasses.replace(cfg, noise_scale=0.0)
        zero = model.sample(tokens, a)
        assert torch.equal(zero, model.sample(tokens, b))  # deterministic: the draw is ignored
        assert torch.equal(zero, model.sample(tokens, torch.zeros_like(a)))  # the noise's mean
        model.config = dataclasses.replace(cfg, noise_scale=0.5)
        half = model.sample(tokens, a)
        model.config = cfg
        assert torch.allclose(half, model.sample(tokens, 0.5 * a))  # N(0, 0.25 I): the draw halved


def test_camera_less_policy_encodes_proprio_alone():
    cfg = dataclasses.replace(PRESETS["tiny"].policy, cameras=(), proprio_dim=31)
    model = FlowTransformer(cfg)
    tokens = model.encode({}, torch.randn(3, 31))
    assert tokens.shape == (3, 1, cfg.width)


def _object_model(weight: float = 2.0) -> FlowTransformer:
    cfg = dataclasses.replace(PRESETS["tiny"].policy, cameras=("head_left",), object_state=weight)
    torch.manual_seed(0)
    return FlowTransformer(cfg)


def _object_batch(model: FlowTransformer, b: int = 3):
    cfg = model.config
    s, h, a = cfg.image_size, cfg.action_horizon, cfg.action_dim
    images = {"head_left": torch.randint(0, 256, (b, s, s, 3), dtype=torch.uint8)}
    return images, torch.randn(b, cfg.proprio_dim), torch.randn(b, h, a), torch.randn(b, h, a), torch.rand(b)


def test_object_loss_counts_only_known_entries_and_adds_its_weight_to_the_flow_loss():
    from r2s2r.data.object_state import OBJECT_STATE_DIM, OBJECT_STATE_SCALE

    model = _object_model(2.0)
    images, proprio, actions, noise, t = _object_batch(model)
    target = torch.randn(3, OBJECT_STATE_DIM)
    target[1, :3] = float("nan")  # position unknown on sample 1
    target[2] = float("nan")  # nothing known on sample 2
    with torch.no_grad():
        tokens = model.encode(images, proprio)
        pred = model.object_state(tokens)
        known = ~torch.isnan(target)
        want = (((pred - target) / torch.tensor(OBJECT_STATE_SCALE))[known] ** 2).mean()
        assert torch.allclose(model.object_loss(tokens, target), want)
        flow_only = model(images, proprio, actions, noise, t)
        both = model(images, proprio, actions, noise, t, target)
        assert torch.allclose(both - flow_only, 2.0 * want, atol=1e-6)
        # an unlabelled batch adds nothing (not NaN)
        none = torch.full((3, OBJECT_STATE_DIM), float("nan"))
        assert torch.equal(model(images, proprio, actions, noise, t, none), flow_only)
    # unknown entries give no gradient to the head
    model.zero_grad()
    model.object_loss(model.encode(images, proprio)[2:], target[2:]).backward()
    assert all(p.grad is None or not p.grad.any() for p in model.object_head.parameters())


@pytest.mark.parametrize("weight, message", [(-1.0, "weight >= 0"), (float("nan"), "weight >= 0"), (True, "weight")])
def test_object_state_weight_is_checked(weight, message):
    with pytest.raises(R2S2RError, match=message):
        PolicyConfig(object_state=weight)


def test_object_state_head_needs_cameras():
    with pytest.raises(R2S2RError, match="needs cameras"):
        PolicyConfig(cameras=(), object_state=1.0)
