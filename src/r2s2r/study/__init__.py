"""The study: experiment designs and profiles, a runner with cached stages, the report.

``run_study(out, profile_name)`` runs a whole study (``r2s2r study run``); ``DESIGNS`` and
``PROFILES`` are the registries of named designs (which policies) and profiles (how large).
Names are imported on first use, so that the CLI starts without importing every stage.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "DESIGNS": "design",
    "Design": "design",
    "PolicySpec": "design",
    "SimConfig": "design",
    "get_design": "design",
    "PROFILES": "profiles",
    "StudyProfile": "profiles",
    "get_profile": "profiles",
    "run_study": "run",
    "StageRecord": "stages",
    "Stages": "stages",
    "key_hash": "stages",
}

__all__ = [
    "DESIGNS",
    "PROFILES",
    "Design",
    "PolicySpec",
    "SimConfig",
    "StageRecord",
    "Stages",
    "StudyProfile",
    "get_design",
    "get_profile",
    "key_hash",
    "run_study",
]

if TYPE_CHECKING:
    from r2s2r.study.design import DESIGNS, Design, PolicySpec, SimConfig, get_design
    from r2s2r.study.profiles import PROFILES, StudyProfile, get_profile
    from r2s2r.study.run import run_study
    from r2s2r.study.stages import StageRecord, Stages, key_hash


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'r2s2r.study' has no attribute {name!r}")
    return getattr(importlib.import_module(f"r2s2r.study.{_LAZY[name]}"), name)
