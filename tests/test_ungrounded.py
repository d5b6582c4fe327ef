import numpy as np
import pytest

from r2s2r.calibrate.ungrounded import ungrounded_world
from r2s2r.errors import R2S2RError
from r2s2r.geometry import quat_to_mat, rotation_angle


def test_ungrounded_world_is_the_spec_sheet_with_tape_measured_poses(nominal):
    a, b = ungrounded_world(1), ungrounded_world(1)
    assert a == b and a != ungrounded_world(2)
    assert a.right_arm == nominal.right_arm and a.physics == nominal.physics and a.objects == nominal.objects
    parts = [(x.pose, y.pose) for x, y in zip(a.cameras, nominal.cameras, strict=True)]
    parts += [(a.conveyor.pose, nominal.conveyor.pose)] + [
        (x.pose, y.pose) for x, y in zip(a.bins, nominal.bins, strict=True)
    ]
    for got, spec in parts:
        err = np.linalg.norm(np.subtract(got.pos, spec.pos))
        ang = np.degrees(rotation_angle(quat_to_mat(got.quat), quat_to_mat(spec.quat)))
        assert 0 < err <= 0.02 * np.sqrt(3) + 1e-9 and 0 < ang <= 2.0 + 1e-9
    for cam, spec in zip(a.cameras, nominal.cameras, strict=True):
        assert cam.lens == spec.lens and cam.effects == spec.effects  # ideal cameras


def test_ungrounded_world_rejects_a_bad_seed():
    with pytest.raises(R2S2RError, match="seed"):
        ungrounded_world(-3)
