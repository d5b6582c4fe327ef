"""SimCell and the physics engine: stability, determinism, observations, the judge."""

import dataclasses

import mujoco
import numpy as np
import pytest

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.lab.twin import LabTwin, _hidden_params
from r2s2r.world import rizon
from r2s2r.world.camera import ImageEffects
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import Condition, sample_condition
from r2s2r.world.engine import CellEngine, home_command
from r2s2r.world.hand import hand_joint_ranges


def random_walk_actions(rng: np.random.Generator, n: int, step: float = 0.06) -> np.ndarray:
    lo = np.r_[rizon.JOINT_RANGE[:, 0], hand_joint_ranges()[:, 0]]
    hi = np.r_[rizon.JOINT_RANGE[:, 1], hand_joint_ranges()[:, 1]]
    q = home_command()
    out = []
    for _ in range(n):
        q = np.clip(q + rng.normal(0, step, 27) * np.r_[np.ones(7), 4 * np.ones(20)], lo, hi)
        out.append(q.copy())
    return np.array(out)


@pytest.mark.parametrize("world", ["nominal", "lab"])
def test_ten_seconds_of_random_actions_stay_stable(nominal, world, rng):
    params = nominal if world == "nominal" else _hidden_params(LabTwin(5))
    engine = CellEngine(params)
    cond = sample_condition("belt_speed", rng)
    engine.apply_condition(cond)
    for action in random_walk_actions(rng, 100):
        engine.step({"right": action})
        assert np.all(np.isfinite(engine.data.qpos)) and np.all(np.isfinite(engine.data.qvel))
    assert engine.data.time == pytest.approx(10.0)
    assert engine.data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0
    engine.close()


def test_same_seed_gives_the_same_observation_bytes(nominal):
    noisy = nominal.replace(
        cameras=tuple(dataclasses.replace(c, effects=ImageEffects(noise_std=2.0)) for c in nominal.cameras)
    )
    cond = sample_condition("lighting", np.random.default_rng(3))
    actions = random_walk_actions(np.random.default_rng(4), 5)
    runs = []
    for _ in range(2):
        cell = SimCell(noisy)
        obs = [cell.reset(cond, np.random.default_rng(7))]
        obs += [cell.step(a)[0] for a in actions]
        runs.append(obs)
        cell.close()
    for a, b in zip(*runs, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].tobytes() == b[k].tobytes()
    other = SimCell(noisy)
    first = other.reset(cond, np.random.default_rng(8))
    assert first["head_left"].tobytes() != runs[0][0]["head_left"].tobytes()  # the noise follows the rng
    other.close()


def test_observations_have_the_documented_layout(nominal, rng):
    cell = SimCell(nominal, CellConfig(image_size=64))
    obs = cell.reset(sample_condition("nominal", rng), rng)
    assert set(obs) == {"head_left", "right_wrist", "left_wrist", "proprio"}
    for cam in ("head_left", "right_wrist", "left_wrist"):
        assert obs[cam].shape == (64, 64, 3) and obs[cam].dtype == np.uint8
        assert obs[cam].std() > 5  # a real picture, not a blank frame
    np.testing.assert_allclose(obs["proprio"], home_command(), atol=1e-9)
    with pytest.raises(ConfigError, match=r"action: expected shape \(27,\)"):
        cell.step(np.zeros(7))
    with pytest.raises(R2S2RError, match="unknown camera 'head_centre'"):
        SimCell(nominal, CellConfig(cameras=("head_centre",)))
    with pytest.raises(R2S2RError, match="unknown camera"):
        cell.render("top")
    cell.close()


def _trial(nominal, **changes) -> tuple[SimCell, Condition]:
    base = dict(kind="nominal", object="red_cube", belt_speed=0.08, start_x=-0.2, lateral=0.0, yaw=0.3)
    cond = Condition(**(base | changes))
    cell = SimCell(nominal, CellConfig(image_size=32, max_duration=12.0))
    cell.reset(cond, np.random.default_rng(0))
    return cell, cond


def _drop_into(cell: SimCell, color: str) -> None:
    """Carry the object 'by hand' (a teleport, as a person would) above a bin and let go."""
    b = cell.params.bin(color)
    eng = cell.engine
    adr = eng.model.joint("object_free").qposadr[0]
    eng.data.qpos[adr : adr + 3] = np.asarray(b.pose.pos) + [0, 0, 0.08]
    eng.data.qvel[eng.model.joint("object_free").dofadr[0] :][:6] = 0
    cell._judge.lifted = True  # it was lifted by the carry


def test_judge_success_wrong_bin_and_fall(nominal):
    hold = home_command()
    cell, _ = _trial(nominal)
    _drop_into(cell, "red")
    for _ in range(20):
        _, verdict = cell.step(hold)
        if verdict.done:
            break
    assert verdict.done and verdict.success and verdict.failure is None
    cell, _ = _trial(nominal)
    _drop_into(cell, "blue")
    for _ in range(20):
        _, verdict = cell.step(hold)
    assert verdict.done and not verdict.success and verdict.failure == "wrong_bin"
    cell, _ = _trial(nominal, belt_speed=0.10)  # nobody picks: it rides off the end of the belt
    for _ in range(120):
        _, verdict = cell.step(hold)
        if verdict.done:
            break
    assert verdict.failure == "fell_off_belt" and not verdict.lifted
    cell, _ = _trial(nominal, belt_speed=0.0, kind="belt_speed")  # a stopped belt: missed at the time limit
    for _ in range(120):
        _, verdict = cell.step(hold)
    assert verdict.failure == "missed"


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
def test_objects_ride_the_belt_at_its_speed(nominal, seed):
    """In every lab the belt carries objects at the commanded speed times its scale (it must slide
    freely past the as-built bins and frame, whatever their placement errors)."""
    from r2s2r.geometry import quat_to_mat

    params = nominal if seed is None else _hidden_params(LabTwin(seed))
    engine = CellEngine(params)
    engine.apply_condition(Condition("nominal", "red_cube", 0.08, start_x=-0.3, lateral=0.0, yaw=0.0))
    engine.step({"right": home_command()}, duration=0.5)
    p0 = engine.object_pose()[:3, 3]
    engine.step({"right": home_command()}, duration=2.0)
    velocity = (engine.object_pose()[:3, 3] - p0) / 2.0
    along = velocity @ quat_to_mat(params.conveyor.pose.quat)[:, 0]
    assert along == pytest.approx(0.08 * params.conveyor.speed_scale, abs=0.002)
    engine.close()
