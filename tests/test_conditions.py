import numpy as np
import pytest

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.world.conditions import FAST_SPEED, KINDS, NOMINAL_SPEED, Condition, sample_condition
from r2s2r.world.objects import CATALOG


@pytest.mark.parametrize("kind", KINDS)
def test_sampled_conditions_are_valid_and_deterministic(kind):
    a = [sample_condition(kind, np.random.default_rng(s)) for s in range(30)]
    b = [sample_condition(kind, np.random.default_rng(s)) for s in range(30)]
    assert a == b
    for c in a:
        assert c.kind == kind
        if kind == "nominal":
            assert not CATALOG[c.object].novel
            assert NOMINAL_SPEED[0] <= c.belt_speed <= NOMINAL_SPEED[1]
            assert c.light_tint == (1.0, 1.0, 1.0)
        if kind == "belt_speed":
            assert FAST_SPEED[0] <= c.belt_speed <= FAST_SPEED[1]
        if kind == "novel_object":
            assert CATALOG[c.object].novel
        if kind == "lighting":
            assert c.light_scale < 0.7 or c.light_scale > 1.4


def test_combined_conditions_combine_at_least_two_shifts():
    for s in range(30):
        c = sample_condition("combined", np.random.default_rng(s))
        shifts = [CATALOG[c.object].novel, c.belt_speed > NOMINAL_SPEED[1], c.light_scale < 0.7 or c.light_scale > 1.4]
        assert sum(shifts) >= 2


def test_out_of_range_conditions_are_rejected():
    good = dict(kind="nominal", object="red_cube", belt_speed=0.08, start_x=-0.2, lateral=0.0, yaw=0.0)
    Condition(**good)
    with pytest.raises(ConfigError, match="belt_speed"):
        Condition(**good | {"belt_speed": 0.9})
    with pytest.raises(ConfigError, match="lateral"):
        Condition(**good | {"lateral": 0.3})
    with pytest.raises(ConfigError, match="nominal trial uses a known object"):
        Condition(**good | {"object": "blue_bar"})
    with pytest.raises(R2S2RError, match="Did you mean 'lighting'"):
        Condition(**good | {"kind": "lightning"})
    with pytest.raises(R2S2RError, match="unknown object"):
        Condition(**good | {"object": "green_cube"})
