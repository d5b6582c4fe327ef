"""Real-time chunking's inpainting: guided flow sampling, its soft mask, and re-plans in an evaluation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from r2s2r.errors import ConfigError
from r2s2r.evaluate.runner import EvalConfig, evaluate
from r2s2r.evaluate.trials import TrialPlan
from r2s2r.policy import flow
from r2s2r.policy.horizon import ChunkEnsemble, inpaint_weights
from tests.test_evaluate import LAB, TinyPolicy, _replayed

pytestmark = pytest.mark.usefixtures("one_torch_thread")

H, A = 8, 3


def two_chunks(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The exact velocity when every chunk is all +1 or all -1 (equal odds): the rows share one mode,
    E[a | x_t] = tanh((1 - t) sum(x_t) / t^2) on every row, v = (x_t - E[a | x_t]) / t."""
    tt = t.reshape(-1, 1, 1)
    mean = torch.tanh((1 - tt) * x.sum(dim=(1, 2), keepdim=True) / tt**2)
    return (x - mean) / tt


def test_zero_weights_sample_exactly_what_the_unguided_sampler_does():
    noise = torch.randn(16, H, A, generator=torch.Generator().manual_seed(0))
    plain = flow.euler_sample(two_chunks, noise, 10)
    free = flow.guided_euler_sample(two_chunks, noise, 10, torch.ones(16, H, A), torch.zeros(H))
    assert torch.equal(plain, free)


def test_guiding_the_first_rows_carries_the_whole_chunk_into_the_targets_mode():
    """Inpainting, not overwriting: the rows without weight follow the mode the guided rows chose."""
    gen = torch.Generator().manual_seed(1)
    noise = torch.randn(400, H, A, generator=gen)
    noise *= torch.where(noise.sum(dim=(1, 2)) < 0, 1.0, -1.0)[:, None, None]  # every draw heads for -1
    plain = flow.euler_sample(two_chunks, noise, 10)
    assert (plain < 0).all()
    weights = torch.from_numpy(inpaint_weights(H, executed=5))  # rows 0-2 guided, 3-7 free
    assert (weights[:3] > 0).all() and (weights[3:] == 0).all()
    guided = flow.guided_euler_sample(two_chunks, noise, 10, torch.ones(400, H, A), weights)
    up = guided.mean(dim=(1, 2)) > 0
    assert up.float().mean() > 0.75  # most draws were moved into the +1 mode (none without guidance)
    sign = torch.where(up, 1.0, -1.0)[:, None, None]
    assert ((guided * sign - 1).abs() < 0.05).all()  # each chunk whole in one mode: free rows follow guided ones


def test_guidance_weight_is_clipped_and_symmetric_in_time():
    assert flow.guidance_weight(1.0, 5.0) == flow.guidance_weight(0.0, 5.0) == 5.0
    assert flow.guidance_weight(0.5, 5.0) == pytest.approx(2.0)  # (1/4 + 1/4) / (1/4)
    assert flow.guidance_weight(0.3, 5.0) == pytest.approx(flow.guidance_weight(0.7, 5.0))
    assert flow.guidance_weight(0.5, 1.0) == 1.0


def test_the_soft_mask_decays_over_the_overlap_and_is_zero_after_it():
    w = inpaint_weights(16, executed=8)
    assert w.shape == (16,) and w.dtype == np.float32
    assert (np.diff(w[:8]) < 0).all() and (w[:8] > 0).all() and (w[8:] == 0).all()
    assert w[0] < 1.0  # no delay: even the first row may move
    d = inpaint_weights(16, executed=4, delay=2)
    assert (d[:2] == 1.0).all() and 0 < d[2] < 1 and (d[12:] == 0).all()
    assert not inpaint_weights(16, executed=16).any()  # nothing of the old chunk is left
    for executed, delay in ((0, 0), (17, 0), (8, 9)):
        with pytest.raises(ConfigError, match="inpainting"):
            inpaint_weights(16, executed, delay)


def test_ahead_gives_the_newest_chunks_rest_and_repeats_its_last_row():
    e = ChunkEnsemble(None)
    with pytest.raises(ConfigError, match="no chunk"):
        e.ahead(0)
    old, new = np.arange(12.0).reshape(4, 3), 100 + np.arange(12.0).reshape(4, 3)
    e.add(0, old)
    e.add(2, new)
    np.testing.assert_array_equal(e.ahead(4), new[[2, 3, 3, 3]])


def test_inpainting_and_ensembling_are_exclusive_and_the_replacing_key_is_unchanged():
    with pytest.raises(ConfigError, match="choose one"):
        EvalConfig(inpaint=True, ensemble=0.01)
    with pytest.raises(ConfigError, match="inpaint"):
        EvalConfig(inpaint=1)
    assert "inpaint" not in EvalConfig().settings()
    assert EvalConfig(inpaint=True).settings()["inpaint"] is True


class GuidedTiny(TinyPolicy):
    """TinyPolicy that takes a guide and records it; its chunk ramps, so the rest of a chunk differs
    from its first rows."""

    def __init__(self) -> None:
        super().__init__()
        self.guides: list = []
        self.chunks: list[np.ndarray] = []

    def predict_chunk(self, obs, rng, guide=None):
        self.guides.append(guide)
        chunk = super().predict_chunk(obs, rng)
        chunk[..., :7] += 0.01 * np.arange(self.action_horizon)[None, :, None]
        if guide is not None:  # pulled halfway to the target where guided
            target, w = guide
            chunk = chunk + 0.5 * w[None, :, None] * (target - chunk)
        self.chunks.append(chunk)
        return chunk


def test_an_inpainting_evaluation_guides_each_replan_by_the_chunk_it_replaces():
    plan = TrialPlan(nominal=2, lighting=0, belt_speed=0, novel_object=0, combined=0)
    config = EvalConfig(plan=plan, batch=2, max_duration=1.0, inpaint=True)
    policy = GuidedTiny()
    res = evaluate(policy, LAB, config)
    assert policy.guides[0] is None  # the first chunk has nothing to continue
    k = policy.execute_steps
    for before, (target, w) in zip(policy.chunks, policy.guides[1:], strict=False):
        np.testing.assert_array_equal(w, inpaint_weights(policy.action_horizon, k))
        rest = before[:, k:]
        np.testing.assert_allclose(target[:, : len(rest[0])], rest, rtol=1e-6)  # the rows still to execute
    two = evaluate(GuidedTiny(), LAB, dataclasses.replace(config, workers=2))
    assert _replayed(res) == _replayed(two)
    plain = evaluate(replacing := GuidedTiny(), LAB, dataclasses.replace(config, inpaint=False))
    assert all(g is None for g in replacing.guides)
    assert [o.trace for o in plain.outcomes] != [o.trace for o in res.outcomes]  # the guide changed the rollouts


def test_a_policy_that_takes_no_guide_cannot_be_inpainted():
    plan = TrialPlan(nominal=1, lighting=0, belt_speed=0, novel_object=0, combined=0)
    with pytest.raises(ConfigError, match="takes a guide"):
        evaluate(TinyPolicy(), LAB, EvalConfig(plan=plan, max_duration=0.5, inpaint=True))


def test_the_receding_horizon_inpaints_each_replan_toward_the_chunk_it_replaces():
    from r2s2r.policy import RecedingHorizon

    policy = GuidedTiny()
    runner = RecedingHorizon(policy, inpaint=True)
    rng = np.random.default_rng(0)
    obs = {"head_left": np.full((2, 16, 16, 3), 100, np.uint8), "proprio": np.zeros((2, 27), np.float32)}
    done = [runner.act(obs, rng) for _ in range(5)]  # re-plans at steps 0, 2, 4
    assert policy.guides[0] is None and len(policy.guides) == 3
    k = policy.execute_steps
    for before, (target, w) in zip(policy.chunks, policy.guides[1:], strict=False):
        np.testing.assert_array_equal(w, inpaint_weights(policy.action_horizon, k))
        np.testing.assert_allclose(target[:, : policy.action_horizon - k], before[:, k:], rtol=1e-6)
    np.testing.assert_allclose(done[2], policy.chunks[1][:, 0], rtol=1e-6)  # the newest chunk is executed
    with pytest.raises(ConfigError, match="choose one"):
        RecedingHorizon(policy, decay=0.1, inpaint=True)
    with pytest.raises(ConfigError, match="takes a guide"):
        RecedingHorizon(TinyPolicy(), inpaint=True)
