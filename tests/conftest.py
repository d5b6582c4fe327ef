"""Shared fixtures. ``import r2s2r`` first: it sets MUJOCO_GL=egl before MuJoCo loads."""

from __future__ import annotations

import numpy as np
import pytest

import r2s2r  # noqa: F401  (sets MUJOCO_GL before mujoco is imported)
from r2s2r.world.params import WorldParams

SMOKE_WORKERS = 2  # the fewest that still run the demos', generation's and evaluation's worker pools


@pytest.fixture(scope="session")
def nominal() -> WorldParams:
    return WorldParams.nominal()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def calibrations():
    """``calibration(lab, seed)``: the whole world grounding of a fresh ``LabTwin(lab)`` with
    ``CalibrationConfig(seed=seed)`` (about 3 minutes), computed once a session: (the lab after
    calibrating, the ``Calibration``). Shared by the calibration tests and the smoke study (lab 0, seed 0:
    the very call its calibrate stage makes)."""
    from r2s2r.calibrate.run import CalibrationConfig, calibrate_lab
    from r2s2r.lab.twin import LabTwin

    done = {}

    def calibration(lab_seed: int, seed: int):
        if (lab_seed, seed) not in done:
            lab = LabTwin(lab_seed)
            done[lab_seed, seed] = lab, calibrate_lab(lab, CalibrationConfig(seed=seed))
        return done[lab_seed, seed]

    return calibration


@pytest.fixture(scope="session", params=(0, 3), ids=lambda s: f"lab{s}")
def lab_calibration(request, calibrations):
    """The whole world grounding of one lab seed, shared by the calibration tests: (the lab after
    calibrating, the ``Calibration``)."""
    return calibrations(request.param, request.param)


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
def smoke(tmp_path_factory, calibrations):
    """The smoke-profile study, uninterrupted, with ``SMOKE_WORKERS`` workers (2-4 minutes on two cores
    after its calibration), shared by the study tests and the chaos test: (its folder, its results).

    Its calibrate stage takes the session's calibration of the same lab and seed instead of computing it
    a second time: ``calibrate_lab`` is pure given a fresh lab and its config, so the stage writes the
    same bytes (its stage times replayed to the progress callback); another lab or config is refused."""
    from rich.console import Console

    from r2s2r.calibrate.run import CalibrationConfig
    from r2s2r.study import PROFILES, run_study

    profile = PROFILES["smoke"]
    want = CalibrationConfig(seed=profile.seed)
    _, cal = calibrations(profile.lab, profile.seed)

    def session_calibration(got_lab, config, on_stage=None):
        assert repr(got_lab) == cal.lab and config == want, (got_lab, config)
        for name, seconds in cal.seconds.items():
            if on_stage is not None:
                on_stage(name, "start", 0.0)
                on_stage(name, "done", seconds)
        return cal

    out = tmp_path_factory.mktemp("study")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("r2s2r.calibrate.run.calibrate_lab", session_calibration)
        results = run_study(out, "smoke", workers=SMOKE_WORKERS, console=Console(stderr=True, quiet=True))
    return out, results
