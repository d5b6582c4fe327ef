"""The command shaping a teleop system applies, and a policy's commands now pass too (``r2s2r.lab.shaping``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from r2s2r.behavior.teleop import Operator, OperatorConfig
from r2s2r.errors import R2S2RError
from r2s2r.lab.real_cell import KinematicCalibration
from r2s2r.lab.safety import SafetyFilter
from r2s2r.lab.shaping import CommandShaper
from r2s2r.world.params import WorldParams

DT = 0.1
SHAPER = CommandShaper(DT)


def _start() -> np.ndarray:
    return (SHAPER.lo + SHAPER.hi) / 2


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.floats(-20, 20), min_size=27, max_size=27), min_size=1, max_size=12))
def test_shaped_commands_stay_in_range_and_within_the_speed_limit(commands):
    prev = _start()
    for c in commands:
        out, _ = SHAPER.shape(prev, np.array(c))
        assert np.all(out >= SHAPER.lo) and np.all(out <= SHAPER.hi)
        assert np.all(np.abs(out[:7] - prev[:7]) <= SHAPER.max_step + 1e-12)
        prev = out


def test_a_command_inside_the_limits_passes_unchanged_and_a_jump_is_cut_to_the_rated_step():
    prev = _start()
    near = prev + 0.5 * np.r_[SHAPER.max_step, np.zeros(20)]
    out, changed = SHAPER.shape(prev, near)
    assert not changed and np.array_equal(out, near)
    jump = prev.copy()
    jump[3] += 1.0
    out, changed = SHAPER.shape(prev, jump)
    assert changed and out[3] == pytest.approx(prev[3] + SHAPER.max_step[3])
    held, changed = SHAPER.shape(prev, np.full(27, np.nan))
    assert changed and np.array_equal(held, prev)


def test_the_safety_filter_leaves_shaped_commands_alone():
    # the shaping is stricter than the filter's speed and range checks: shaped commands are never clipped there
    filt = SafetyFilter(WorldParams.nominal())
    rng = np.random.default_rng(0)
    prev = _start()
    for _ in range(50):
        out, _ = SHAPER.shape(prev, prev + rng.normal(0, 1.0, 27))
        prev = filt.filter("right", prev, out, DT)  # unchanged but for a workspace or collision pull-back
    assert filt.counts["velocity"] == 0 and filt.counts["joint_limit"] == 0


def test_the_teleop_system_sends_within_the_same_limits():
    config = OperatorConfig()
    arm = WorldParams.nominal().right_arm
    op = Operator(KinematicCalibration("right", arm.link_pos, arm.flange_pos, arm.joint_zero), arm.base, config)
    shaper = CommandShaper(config.control_dt, config.speed_fraction)
    assert np.array_equal(op.arm_lo, shaper.lo[:7]) and np.array_equal(op.arm_hi, shaper.hi[:7])
    assert np.array_equal(op.max_step, shaper.max_step)


@pytest.mark.parametrize("kwargs", [dict(control_dt=0.0), dict(control_dt=0.1, speed_fraction=1.5)])
def test_bad_shaping_settings_are_named(kwargs):
    with pytest.raises(R2S2RError, match="command shaping"):
        CommandShaper(**kwargs)


def test_commands_of_another_shape_are_refused():
    with pytest.raises(R2S2RError, match="27-D"):
        SHAPER.shape(np.zeros(27), np.zeros(7))
