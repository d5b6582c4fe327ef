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


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread while a test module runs: small models train faster on one thread than on two
    cores shared with other processes (OpenMP threads spin waiting for each other)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def small_cell():
    """A nominal ``SimCell`` with one 16-px camera (cheap control steps), per test module."""
    from r2s2r.world.cell import CellConfig, SimCell

    cell = SimCell(WorldParams.nominal(), CellConfig(image_size=16, cameras=("head_left",)))
    yield cell
    cell.close()


@pytest.fixture(scope="module")
def planner():
    """A ``MotionPlanner`` (it keeps grasps per object: shared within a test module)."""
    from r2s2r.behavior.planner import MotionPlanner

    return MotionPlanner()


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


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """The smoke-profile study, run once per session (a few minutes): (its folder, its results)."""
    from rich.console import Console

    from r2s2r.study import run_study

    out = tmp_path_factory.mktemp("study")
    return out, run_study(out, "smoke", workers=2, console=Console(stderr=True, quiet=True))
