"""Grasp proposals: closure geometry, refinement against the surface, symmetry, rejection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from r2s2r.behavior.grasps import GraspConfig, GraspSampler, symmetry_order
from r2s2r.errors import ConfigError
from r2s2r.world.hand import FINGERS, hand_grasp_pose


@pytest.fixture(scope="module")
def sampler() -> GraspSampler:
    return GraspSampler()


def test_a_cube_gets_a_power_grasp_from_above_with_every_finger_on_it(sampler):
    grasps = sampler.grasps("red_cube")
    assert grasps and all(a.score >= b.score for a, b in zip(grasps[:-1], grasps[1:], strict=True))
    best = grasps[0]
    assert (best.kind, best.approach) == ("power", "top")
    assert best.fingers >= 4 and best.antipodal > 0 and best.lift > 0.5
    assert 0.0 < best.palm_gap <= sampler.config.max_palm_gap  # the palm rests on the top
    assert best.T_object_hand.shape == (4, 4)
    np.testing.assert_allclose(best.approach_dir, [0, 0, -1], atol=1e-9)  # palm normal straight down
    np.testing.assert_allclose(best.T_object_hand[:3, :3].T @ best.T_object_hand[:3, :3], np.eye(3), atol=1e-9)
    assert {g.kind for g in grasps} == {"power", "pinch"}
    for g in grasps:
        assert g.antipodal > 0 and g.clearance >= -sampler.config.max_press
        assert g.fingers >= (2 if g.kind == "pinch" else 3)


def test_refinement_brings_the_fingertips_onto_the_surface(sampler):
    """Each closing finger of a refined grasp stops on the surface: closing it further would
    push into the object, stopping it sooner leaves a gap."""
    g = sampler.grasps("red_cylinder")[0]
    probe = sampler._probe("red_cylinder")
    closures, contacts, _, _ = sampler._close(probe, g.T_object_hand, g.kind)
    assert closures == g.closures and len(contacts) == g.fingers
    for i, f in enumerate(FINGERS):
        if f not in contacts:
            continue
        gap = []
        for s in (closures[i] - 0.03, closures[i]):
            probe.set(g.T_object_hand, hand_grasp_pose(g.kind, max(s, 0.0)))
            gap.append(min(probe.dist(k) for k in probe.finger_geoms[f]))
        assert gap[0] > 0.0 and gap[1] <= sampler.config.contact_tol + 1e-9, (f, gap)


def test_symmetric_turns_score_the_same(sampler):
    g = sampler.grasps("red_cube")[0]
    assert symmetry_order("red_cube") == 4 and symmetry_order("red_sphere") == 0 and symmetry_order("blue_bar") == 2
    turned = sampler.evaluate("red_cube", g.about_z(math.pi / 2).T_object_hand, g.kind)
    assert turned is not None and turned.score == pytest.approx(g.score, abs=1e-6)
    assert len(g.equivalent_angles(0.1)) == 4 and len(sampler.grasps("red_sphere")[0].equivalent_angles(0.1)) == 63


def test_a_flat_object_is_pinched_and_bad_poses_are_rejected(sampler):
    puck = sampler.grasps("blue_puck")
    assert puck and puck[0].kind == "pinch"  # too flat for the palm and fingers to wrap it
    inside = np.eye(4)
    inside[:3, :3] = np.diag([1.0, -1.0, -1.0])  # palm down with the hand root at the centre
    assert sampler.evaluate("red_cube", inside, "power") is None  # the hand penetrates the cube
    far = np.eye(4)
    far[:3, :3] = inside[:3, :3]
    far[2, 3] = 0.5
    assert sampler.evaluate("red_cube", far, "power") is None  # nothing to close on


def test_bad_grasp_config_is_rejected():
    with pytest.raises(ConfigError, match="kinds"):
        GraspConfig(kinds=("claw",))
    with pytest.raises(ConfigError, match="approaches"):
        GraspConfig(approaches=("below",))
    with pytest.raises(ConfigError, match="unknown object"):
        GraspSampler().grasps("teapot")


def _fields(g) -> tuple:
    return (g.T_object_hand.tobytes(), g.kind, g.approach, g.score, g.fingers, g.closures, g.lift, g.symmetry)


def test_grasps_shared_through_a_folder_are_sampled_once_and_the_same(tmp_path, monkeypatch):
    want = [_fields(g) for g in GraspSampler().grasps("blue_puck")]
    assert [_fields(g) for g in GraspSampler(shared=tmp_path).grasps("blue_puck")] == want
    assert len(list(tmp_path.glob("grasps-*-blue_puck.pkl"))) == 1
    again = GraspSampler(shared=tmp_path)
    monkeypatch.setattr(again, "_propose", lambda name: pytest.fail(f"{name} sampled again"))
    assert [_fields(g) for g in again.grasps("blue_puck")] == want  # read back
