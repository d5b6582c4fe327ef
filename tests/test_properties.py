"""Property-based tests (hypothesis): WorldParams validation and the safety filter.

- Any perturbation of a valid WorldParams JSON tree (a value replaced by another JSON value, a key
  removed or added, a number scaled) either loads or raises R2S2RError: never another exception.
- For any commanded joint vector (finite, NaN, inf, huge, wrong length), the safety filter's output
  is inside the joint position limits (less the arm margin), and each arm joint moves at most its
  rated speed x dt from the previous command, over whole sequences of commands.
"""

from __future__ import annotations

import copy
import functools
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from r2s2r.errors import R2S2RError
from r2s2r.lab.safety import SafetyFilter, SafetyLimits
from r2s2r.world import rizon
from r2s2r.world.hand import hand_joint_ranges
from r2s2r.world.params import WorldParams

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

# ---- WorldParams -----------------------------------------------------------------------------------

NOMINAL = WorldParams.nominal().to_dict()

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _paths(node, prefix=()):
    """Every path (tuple of keys / indices) into a JSON tree, the root included."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


PATHS = [p for p in _paths(NOMINAL) if p]
NUMBER_PATHS = [p for p in PATHS if isinstance(functools.reduce(lambda n, k: n[k], p, NOMINAL), float)]


def _parent(tree, path):
    return functools.reduce(lambda n, k: n[k], path[:-1], tree)


@st.composite
def perturbed(draw):
    """The nominal tree with 1-3 random edits: replace, delete, add a key, or scale a number."""
    tree = copy.deepcopy(NOMINAL)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["replace", "delete", "add", "scale"]))
        if kind == "scale":
            path = draw(st.sampled_from(NUMBER_PATHS))
            factor = draw(st.sampled_from([0.0, -1.0, 1e-9, 1.5, 1e9, math.inf, math.nan]))
            try:
                parent = _parent(tree, path)
                parent[path[-1]] = float(parent[path[-1]]) * factor
            except (KeyError, IndexError, TypeError):
                continue  # an earlier edit removed or replaced it
            continue
        path = draw(st.sampled_from(PATHS))
        try:
            parent = _parent(tree, path)
            parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        if kind == "replace":
            parent[path[-1]] = draw(json_values)
        elif kind == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=6))] = draw(json_values)
        else:
            parent.append(draw(json_values))
    return tree


@SETTINGS
@given(perturbed())
def test_perturbed_world_params_load_or_raise_a_named_error(tree):
    try:
        params = WorldParams.from_dict(tree)
    except R2S2RError as e:
        assert str(e)  # a message, whatever was wrong
        return
    assert WorldParams.from_dict(params.to_dict()) == params  # what loads is a round-trippable world


@SETTINGS
@given(perturbed())
def test_perturbed_world_files_load_or_raise_a_named_error(tmp_path_factory, tree):
    path = tmp_path_factory.mktemp("params") / "world.json"
    path.write_text(json.dumps(tree))  # NaN and inf are written as NaN/Infinity: loaders must refuse them
    try:
        WorldParams.load(path)
    except R2S2RError as e:
        assert str(path) in str(e)


@SETTINGS
@given(st.sets(st.sampled_from(sorted(NOMINAL)), min_size=1))
def test_a_world_file_missing_sections_names_them(missing):
    tree = {k: v for k, v in NOMINAL.items() if k not in missing}
    with pytest.raises(R2S2RError, match="missing section") as info:
        WorldParams.from_dict(tree)
    assert all(repr(k) in str(info.value) for k in missing)


# ---- the safety filter -----------------------------------------------------------------------------

LIMITS = SafetyLimits()
RANGES = np.vstack([rizon.JOINT_RANGE, hand_joint_ranges()])
LO = RANGES[:, 0] + np.r_[np.full(7, LIMITS.joint_margin), np.zeros(20)]  # the arm keeps a margin
HI = RANGES[:, 1] - np.r_[np.full(7, LIMITS.joint_margin), np.zeros(20)]
VMAX = np.asarray(rizon.VELOCITY_LIMIT) * LIMITS.speed_scale  # arm joints; the hand has no rated speed
HOME = np.r_[rizon.HOME_Q, np.clip(np.zeros(20), LO[7:], HI[7:])]


@functools.cache
def safety_filter() -> SafetyFilter:
    return SafetyFilter(WorldParams.nominal(), LIMITS)


joint = st.one_of(
    st.floats(-4.0, 4.0),  # around and beyond the joint ranges
    st.floats(allow_nan=True, allow_infinity=True),  # anything, NaN and inf included
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 0.0]),
)
commands = st.one_of(
    hnp.arrays(np.float64, 27, elements=joint),
    hnp.arrays(np.float64, st.sampled_from([0, 7, 26, 28, 54]), elements=st.floats(-1, 1)),  # wrong length
)
dts = st.sampled_from([0.0, 1e-4, 0.01, 0.1, 0.5, 2.0])


def _assert_safe(q: np.ndarray, q_prev: np.ndarray, dt: float) -> None:
    assert q.shape == (27,) and np.all(np.isfinite(q))
    assert np.all(q >= LO - 1e-9) and np.all(q <= HI + 1e-9), "outside the joint position limits"
    step = np.abs(q[:7] - q_prev[:7])
    assert np.all(step <= VMAX * max(dt, 1e-6) + 1e-9), f"arm step {step} over the rated speed x {dt} s"


@SETTINGS
@given(st.lists(st.tuples(commands, dts), min_size=1, max_size=6), st.sampled_from(["right", "left"]))
def test_the_filtered_command_is_always_within_position_and_speed_limits(sequence, side):
    flt = safety_filter()
    q_prev = HOME.copy()
    before = sum(flt.counts.values())
    for cmd, dt in sequence:
        q = flt.filter(side, q_prev, cmd, dt)
        _assert_safe(q, q_prev, dt)
        q_prev = q
    unsafe_in = sum(
        c.shape != (27,) or not np.all(np.isfinite(c)) or np.any(c < LO) or np.any(c > HI) for c, _ in sequence
    )
    assert sum(flt.counts.values()) - before >= unsafe_in  # every out-of-range command was counted


@SETTINGS
@given(hnp.arrays(np.float64, 27, elements=st.floats(0.0, 1.0)), dts)
def test_a_safe_command_from_a_safe_state_is_moved_at_most_to_its_limits(frac, dt):
    """From any in-range previous command (colliding or not), a move home stays within the limits."""
    flt = safety_filter()
    q_prev = LO + frac * (HI - LO)
    q = flt.filter("right", q_prev, HOME, dt)
    _assert_safe(q, q_prev, dt)
