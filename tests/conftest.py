"""Shared fixtures. ``import r2s2r`` first: it sets MUJOCO_GL=egl before MuJoCo loads."""

from __future__ import annotations

import numpy as np
import pytest

import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco is imported)
from r2s2r.world.params import WorldParams


@pytest.fixture(scope="session")
def nominal() -> WorldParams:
    return WorldParams.nominal()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
