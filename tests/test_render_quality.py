"""Render quality by render size (``r2s2r.world.rendering``): small renders of an anti-aliased world are
2x2 supersampled with a small shadow map, everything else is drawn as the world's params say."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from r2s2r.lab.twin import LabTwin, _hidden_params
from r2s2r.world.conditions import sample_condition
from r2s2r.world.engine import CellEngine
from r2s2r.world.params import WorldParams
from r2s2r.world.rendering import SMALL_RENDER, SMALL_SHADOW, CellRenderer, RenderQuality, block_mean, render_quality


def test_small_anti_aliased_renders_are_supersampled_and_the_rest_kept():
    assert render_quality(1024, 2, (50, 50)) == RenderQuality(SMALL_SHADOW, 0, 2)
    assert render_quality(1024, 2, (SMALL_RENDER, 40)) == RenderQuality(SMALL_SHADOW, 0, 2)
    assert render_quality(128, 4, (50, 50)) == RenderQuality(128, 0, 2)  # never a larger shadow map
    assert render_quality(1024, 2, (SMALL_RENDER + 1, 40)) == RenderQuality(1024, 2)
    assert render_quality(0, 0, (50, 50)) == RenderQuality(0, 0)  # the simulator's plain renders
    assert render_quality(1024, 2, (50, 50), small=0) == RenderQuality(1024, 2)


@given(arrays(np.uint8, st.tuples(st.integers(1, 6), st.integers(1, 6), st.just(3))), st.integers(1, 3))
def test_block_mean_is_the_rounded_mean_of_each_block(small, k):
    big = np.repeat(np.repeat(small, k, axis=0), k, axis=1)
    assert np.array_equal(block_mean(big, k), small)  # constant blocks are kept exactly
    noisy = big.astype(np.int64)
    noisy[::k, ::k] = 255 - noisy[::k, ::k]  # one changed pixel per block
    want = np.floor(noisy.reshape(small.shape[0], k, small.shape[1], k, 3).mean(axis=(1, 3)) + 0.5)
    assert np.array_equal(block_mean(noisy.astype(np.uint8), k), want.astype(np.uint8))


def _engine(params: WorldParams) -> CellEngine:
    eng = CellEngine(params)
    eng.apply_condition(sample_condition("nominal", np.random.default_rng(0)))
    eng.step_physics(10)
    return eng


def test_a_lab_policy_frame_stays_close_to_its_multisampled_render_and_the_model_is_left_as_it_was():
    lab = _hidden_params(LabTwin(0))
    eng = _engine(lab)
    quality = (eng.model.vis.quality.shadowsize, eng.model.vis.quality.offsamples)
    now = {c: eng.render(c, (48, 48), None) for c in ("head_left", "right_wrist")}
    full = eng.render("head_left", None, None)  # a full sensor image: the params' quality
    assert (eng.model.vis.quality.shadowsize, eng.model.vis.quality.offsamples) == quality
    eng.renderer = CellRenderer(eng.model, lab.cameras, small=0)  # every render drawn as before
    for c, img in now.items():
        before = eng.render(c, (48, 48), None)
        mae = np.abs(img.astype(float) - before).mean()
        assert 0 < mae < 3, (c, mae)  # a different anti-aliasing, the same picture
    assert np.array_equal(eng.render("head_left", None, None), full)
    eng.renderer.close()
    eng.close()


def test_the_simulators_plain_renders_do_not_change():
    sim = WorldParams.nominal()
    assert sim.render.offsamples == 0
    eng = _engine(dataclasses.replace(sim))
    now = eng.render("head_left", (48, 48), None)
    eng.renderer = CellRenderer(eng.model, sim.cameras, small=0)
    assert np.array_equal(eng.render("head_left", (48, 48), None), now)
    eng.renderer.close()
    eng.close()
