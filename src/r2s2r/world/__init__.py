"""The simulated cell: parameters, scene assembly, cameras, control, the judge and ``SimCell``."""

from r2s2r.world.cell import POLICY_CAMERAS, CellConfig, SimCell
from r2s2r.world.conditions import KINDS, Condition, sample_condition
from r2s2r.world.engine import CellEngine, ControlConfig, home_command
from r2s2r.world.judge import FAILURES, Verdict
from r2s2r.world.objects import CATALOG, KNOWN_OBJECTS, NOVEL_OBJECTS, CatalogObject
from r2s2r.world.params import (
    SHADOWED_RENDER,
    ArmParams,
    BinParams,
    CameraParams,
    ConveyorParams,
    LightingParams,
    ObjectParams,
    PhysicsParams,
    Pose,
    RenderParams,
    WorldParams,
)
from r2s2r.world.scene import TargetMount, build_spec
from r2s2r.world.target import Checkerboard

__all__ = [
    "CATALOG",
    "FAILURES",
    "KINDS",
    "KNOWN_OBJECTS",
    "NOVEL_OBJECTS",
    "POLICY_CAMERAS",
    "SHADOWED_RENDER",
    "ArmParams",
    "BinParams",
    "CameraParams",
    "CatalogObject",
    "CellConfig",
    "CellEngine",
    "Checkerboard",
    "Condition",
    "ControlConfig",
    "ConveyorParams",
    "LightingParams",
    "ObjectParams",
    "PhysicsParams",
    "Pose",
    "RenderParams",
    "SimCell",
    "TargetMount",
    "Verdict",
    "WorldParams",
    "build_spec",
    "home_command",
    "sample_condition",
]
