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


@pytest.fixture(scope="session", params=(0, 3), ids=lambda s: f"lab{s}")
def lab_calibration(request):
    """The whole world grounding of one lab seed (about 3 minutes), shared by the calibration tests:
    (the lab after calibrating, the ``Calibration``)."""
    from r2s2r.calibrate.run import CalibrationConfig, calibrate_lab
    from r2s2r.lab.twin import LabTwin

    lab = LabTwin(request.param)
    return lab, calibrate_lab(lab, CalibrationConfig(seed=request.param))


@pytest.fixture(scope="session")
def real_demos(tmp_path_factory):
    """Four teleoperated demonstrations on lab twin 3 (small policy images; each keeps its
    first-frame full-resolution head stereo pair): (the lab, the dataset folder). About 30 s."""
    from r2s2r.behavior.demos import DemoConfig, collect_demos
    from r2s2r.lab.twin import LabTwin
    from r2s2r.world.cell import CellConfig

    lab = LabTwin(3, CellConfig(image_size=16, cameras=("head_left",)))
    out = tmp_path_factory.mktemp("real_demos") / "demos"
    collect_demos(lab, out, DemoConfig(n=4, seed=6))  # blue cylinder, red cube, red sphere, red cube
    return lab, out
