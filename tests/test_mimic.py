"""MimicGen-style generation from real demonstrations: identity, new pose and belt speed, size
scaling of the pre-shape, admission statistics, the dataset it writes, and ``generate-one``.

The simulated world here is a perfectly grounded one: the lab twin's as-built parameters (test-only
hook) with the simulator's physics step and lean rendering.
"""

from __future__ import annotations

import dataclasses
import pickle

import cv2
import numpy as np
import pytest

from r2s2r.behavior.mimic import MimicBehavior, hand_pose_error, preshape
from r2s2r.behavior.segments import CLOSED, hand_closure, object_frame
from r2s2r.behavior.sources import belt_direction, flange_poses, load_sources
from r2s2r.cli import main
from r2s2r.data import Dataset, DatasetWriter, check_dataset
from r2s2r.data.episode import datagen_leaves
from r2s2r.errors import R2S2RError
from r2s2r.generate import rollout, sim_features
from r2s2r.generate.admission import run_attempts
from r2s2r.generate.attempt import BehaviorInputs, GenerationSpec
from r2s2r.generate.mix import ConditionMix
from r2s2r.generate.one import BEHAVIORS
from r2s2r.generate.run import RunConfig, generate
from r2s2r.geometry import inv_T, make_T
from r2s2r.lab.twin import _hidden_params
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import Condition
from r2s2r.world.hand import hand_open_pose
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import PhysicsParams, RenderParams

CELL = CellConfig(image_size=16, cameras=("head_left",))


@pytest.fixture(scope="module")
def world(real_demos):
    lab, _ = real_demos
    return _hidden_params(lab).replace(physics=PhysicsParams(), render=RenderParams())


@pytest.fixture(scope="module")
def sources(real_demos, world):
    _, path = real_demos
    found, rejected = load_sources(path, world)
    assert not rejected and len(found) == 4
    return found


@pytest.fixture(scope="module")
def cell(world):
    c = SimCell(world, CELL)
    yield c
    c.close()


def _source_condition(world, src, **changes) -> Condition:
    """The condition that puts the source's estimated object where the estimate says, at its speed."""
    c = world.conveyor
    p = inv_T(make_T(c.pose.pos, c.pose.quat)) @ np.r_[src.T_world_object0[:3, 3], 1.0]
    speed = float(np.linalg.norm(src.belt_velocity)) / c.speed_scale
    base = Condition("nominal", src.object_name, speed, float(p[0]), float(p[1]), src.estimate.yaw)
    return dataclasses.replace(base, **changes)


def test_segments_follow_the_hand(sources):
    for s in sources:
        g = s.segments
        assert 0 <= g.approach < g.grasp_start <= g.grasp_end < g.release_start < g.release_end < g.length
        c = hand_closure(s.actions[:, 7:].astype(float))
        assert c[g.grasp_end] >= CLOSED and c[g.grasp_end - 1] < CLOSED
        assert c[g.release_end] < 0.1 and np.all(c[g.grasp_end : g.release_start] > 0.9)
        assert 0.1 < s.lag < 0.8  # the hand trails its target by a few hundred ms on the moving belt


def test_identity_reproduces_the_source(real_demos, world, sources, cell):
    src = sources[1]  # a red cube
    beh = MimicBehavior([src], world)
    cond = _source_condition(world, src)
    res = rollout(cell, beh, cond, np.random.default_rng(0), {"seed": 0}, keep_failures=True)
    cell.reset(cond, np.random.default_rng(0))
    plan = beh.plan(cell, cond, np.random.default_rng(0))
    assert plan.shift == 0 and plan.source_demo == src.index
    n = len(plan.actions)
    assert n == src.segments.length
    pos, rot = hand_pose_error(plan.target_pose, src.T_world_flange)
    print(f"identity: targets within {1000 * pos:.2f} mm, {np.degrees(rot):.2f} deg of the source's")
    assert pos < 0.003 and rot < np.radians(1.0)
    np.testing.assert_allclose(plan.actions[:, 7:], src.actions[:, 7:], atol=1e-6)  # the same hand
    assert res.success, res.failure
    ep = res.episode
    # the simulated hand moves as the lab's hand did in the demonstration (its measured joints)
    with Dataset(real_demos[1]) as ds:
        lab_hand = flange_poses(world, ds.episode(src.index).obs["proprio"][:, :7])
    m = min(len(lab_hand), ep.num_samples)  # the judges may call the end a frame apart
    executed, lab_hand = ep.datagen_info["eef_pose"][:m], lab_hand[:m]
    err = np.linalg.norm(executed[:, :3, 3] - lab_hand[:, :3, 3], axis=1)
    p90 = np.percentile(err, 90)
    print(
        f"executed vs the lab's hand: median {1000 * np.median(err):.1f} mm, 90 % {1000 * p90:.1f} mm, "
        f"max {1000 * err.max():.1f} mm"
    )
    # (the largest gaps are in the fast carry, where the lab's safety filter slowed the real arm)
    assert np.median(err) < 0.002 and p90 < 0.02
    assert ep.provenance.source_demo == src.index and ep.provenance.behavior == "mimic"


def test_new_pose_and_faster_belt(world, sources, cell):
    src = sources[1]
    beh = MimicBehavior(sources, world)
    cond = _source_condition(world, src, kind="belt_speed", belt_speed=0.15, start_x=-0.22, lateral=-0.04, yaw=0.6)
    res = rollout(cell, beh, cond, np.random.default_rng(1), {"seed": 1}, keep_failures=True)
    assert res.success, res.failure
    cell.reset(cond, np.random.default_rng(1))
    plan = beh.plan(cell, cond, np.random.default_rng(1))
    assert plan.shift != 0  # re-timed: the faster object reaches the grasp place at another time
    used = sources[plan.source_demo]
    assert CATALOG[used.object_name].shape == "box"
    # at the grasp, the hand sits where it sat on the source's object, in the moving object frame
    # (plus the extra lead the controller's lag needs at the faster belt)
    g = used.segments.grasp_end
    step = g + plan.shift
    dt = CELL.control.control_dt
    T_obj = cell.engine.object_pose()
    v = belt_direction(world) * cell.engine.belt_speed
    O_new = object_frame(world, cond.object, T_obj, v, step * dt, yaw=beh.frame_yaw(used, cond.object, T_obj))
    O_src = object_frame(world, used.object_name, used.T_world_object0, used.belt_velocity, g * dt)
    want = O_new @ inv_T(O_src) @ used.T_world_flange[g]
    want[:3, 3] += (v - used.belt_velocity) * used.lag
    pos, rot = hand_pose_error(plan.target_pose[step][None], want[None])
    assert pos < 0.002 and rot < np.radians(1.0)
    assert np.linalg.norm(want[:3, 3] - used.T_world_flange[g][:3, 3]) > 0.03  # and that is somewhere else


def test_sizes_beyond_the_sources_scale_the_pre_shape(world, sources, cell):
    cubes = [s for s in sources if s.object_name == "red_cube"]  # 5 cm: the only box size demonstrated
    beh = MimicBehavior(cubes, world)
    hand = cubes[0].actions[:, 7:].astype(float)
    pre = int(np.argmin(np.abs(hand_closure(hand) - 0.1)))  # a pre-shaped, still open frame
    flex = {r: float(np.abs(preshape(hand, r)[pre] - hand_open_pose()).sum()) for r in (5 / 7, 1.0, 5 / 4.5)}
    assert flex[5 / 7] < flex[1.0] < flex[5 / 4.5]  # a larger object: a wider (less flexed) pre-shape
    closed = cubes[0].segments.grasp_end + 2
    np.testing.assert_allclose(preshape(hand, 5 / 7)[closed], hand[closed], atol=0.03)  # the grasp closes the same
    cond = _source_condition(world, cubes[0], object="red_cube_large", lateral=0.03)
    res = rollout(cell, beh, cond, np.random.default_rng(2), {"seed": 2}, keep_failures=True)
    ep = res.episode
    first = int(np.flatnonzero(ep.datagen_info["subtask"] == 1)[0])
    src_frame = int(ep.datagen_info["source_frame"][first + 5])
    got = np.abs(ep.actions[first + 5, 7:] - hand_open_pose()).sum()
    want = np.abs(cubes[0].actions[src_frame, 7:] - hand_open_pose()).sum()
    assert got < want  # the recorded pre-shape is wider than the source's
    assert res.success, res.failure


def test_admission_is_counted_and_admitted_episodes_are_stored(world, sources, tmp_path):
    beh = MimicBehavior(sources, world)
    out = tmp_path / "sim"
    cell = SimCell(world, dataclasses.replace(CELL, max_duration=11.5))  # short trials: some plans do not fit
    try:
        cell.reset(_source_condition(world, sources[0]), np.random.default_rng(0))  # compiles the model
        with DatasetWriter(out, sim_features(cell), control_rate_hz=10.0) as writer:
            stats = run_attempts(cell, beh, "nominal", 4, seed=3, writer=writer)
    finally:
        cell.close()
    print(stats.summary())
    assert stats.attempts == 4 and stats.admitted + sum(stats.failures.values()) == 4
    assert stats.admitted >= 1 and stats.failures.get("plan:too_long", 0) >= 1
    check_dataset(out)
    with Dataset(out) as ds:
        assert len(ds) == stats.admitted
        ep = ds.episode(0)
        p = ep.provenance
        assert p.success and p.behavior == "mimic" and p.source_demo in {s.index for s in sources}
        info = ep.datagen_info
        assert (
            info["target_pose"].shape == (ep.num_samples, 4, 4) and info["eef_pose"].shape == info["target_pose"].shape
        )
        assert set(info["subtask_term_signals"]) == {"grasp", "release"}
        assert info["subtask_term_signals"]["grasp"][-1] == 1 and info["subtask_term_signals"]["grasp"][0] == 0


def test_generate_one_writes_a_video(real_demos, world, tmp_path, capsys):
    _, demos = real_demos
    path = tmp_path / "world.json"
    world.save(path)
    video = tmp_path / "one.mp4"
    argv = ["generate-one", "--behavior", "mimic", "--world", str(path), "--demos", str(demos), "--seed", "4"]
    assert main([*argv, "--video", str(video)]) == 0
    assert "mimic episode, seed 4" in capsys.readouterr().err
    cap = cv2.VideoCapture(str(video))
    ok, img = cap.read()
    assert ok and img.shape == (240, 640, 3) and int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) > 40
    assert main(argv[:5]) == 2
    assert "--demos DIR" in capsys.readouterr().err


def test_demonstrations_without_a_stereo_pair_are_rejected(real_demos, world, tmp_path):
    _, demos = real_demos
    with Dataset(demos) as ds:
        episodes = [ds.episode(i) for i in range(2)]
        features, rate = tuple(ds.manifest.features), ds.control_rate_hz
    bare = tmp_path / "bare"
    with DatasetWriter(bare, features, rate) as w:
        for ep in episodes:
            w.add(dataclasses.replace(ep, extras={}))
    with pytest.raises(R2S2RError, match="no first-frame stereo pair"):
        load_sources(bare, world)


def _same_source(a, b) -> bool:
    arrays = ("T_world_object0", "belt_velocity", "actions", "T_world_flange")
    return (
        (a.index, a.segments, a.lag, a.control_dt) == (b.index, b.segments, b.lag, b.control_dt)
        and all(getattr(a, k).tobytes() == getattr(b, k).tobytes() for k in arrays)
        and (a.estimate.object_name, a.estimate.x, a.estimate.y, a.estimate.yaw, a.estimate.scores)
        == (b.estimate.object_name, b.estimate.x, b.estimate.y, b.estimate.yaw, b.estimate.scores)
    )


def test_sources_shared_through_a_folder_are_prepared_once_and_the_same(real_demos, world, sources, tmp_path):
    _, path = real_demos
    found, rejected = load_sources(path, world, shared=tmp_path)
    assert not rejected and len(found) == len(sources)
    assert all(_same_source(a, b) for a, b in zip(found, sources, strict=True))
    published = sorted(tmp_path.glob("source-*.pkl"))
    assert len(published) == len(sources)
    spoiled = tmp_path / f"{published[0].name.rsplit('-', 1)[0]}-{sources[0].index}.pkl"
    spoiled.write_bytes(pickle.dumps("spoiled"))  # read back, not prepared again: the spoiled result comes back
    again, rejected = load_sources(path, world, shared=tmp_path)
    assert rejected == {sources[0].index: "spoiled"}
    assert all(_same_source(a, b) for a, b in zip(again, sources[1:], strict=True))
    found, _ = load_sources(path, world, shared=tmp_path / "elsewhere")  # a folder this machine lacks: ignored
    assert all(_same_source(a, b) for a, b in zip(found, sources, strict=True))


def _episodes(path) -> list[tuple]:
    """Every episode's provenance and arrays, as bytes."""
    out = []
    with Dataset(path) as ds:
        for ep in ds.episodes():
            arrays = ep.arrays() | datagen_leaves(ep.datagen_info)
            out.append((ep.provenance.dumps(), [(k, arrays[k].tobytes()) for k in sorted(arrays)]))
    return out


def test_two_workers_sharing_the_sources_generate_the_serial_run_s_bytes(real_demos, world, tmp_path):
    _, demos = real_demos
    mix = ConditionMix(nominal=1.0, lighting=0.0, belt_speed=0.0, novel_object=0.0, combined=0.0)
    spec = GenerationSpec(BehaviorInputs(world, demos), BEHAVIORS["mimic"], CELL, mix, seed=2)
    generate(tmp_path / "serial", spec, RunConfig(n=2), {"test": "mimic"})
    generate(tmp_path / "pool", spec, RunConfig(n=2, workers=2), {"test": "mimic"})
    assert _episodes(tmp_path / "pool") == _episodes(tmp_path / "serial")
