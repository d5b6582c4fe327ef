"""r2s2r: real2sim2real co-training studies for a conveyor pick-and-sort cell."""

import os as _os

# Headless rendering: MuJoCo reads MUJOCO_GL when it is first imported, so set it before any
# submodule imports mujoco. A user's own setting (e.g. "osmesa", "glfw") wins.
_os.environ.setdefault("MUJOCO_GL", "egl")

__version__ = "0.1.0"

from r2s2r.errors import ConfigError, R2S2RError, UnknownNameError  # noqa: E402
from r2s2r.lab import LabTwin, RealCell  # noqa: E402
from r2s2r.world import Condition, SimCell, WorldParams, sample_condition  # noqa: E402

__all__ = [
    "ConfigError",
    "Condition",
    "LabTwin",
    "R2S2RError",
    "RealCell",
    "SimCell",
    "UnknownNameError",
    "WorldParams",
    "sample_condition",
]
