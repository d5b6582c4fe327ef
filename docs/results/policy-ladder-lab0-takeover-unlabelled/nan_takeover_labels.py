"""One-off: the takeover dataset with the object-state labels of every takeover episode unknown (NaN)."""

import dataclasses
from pathlib import Path

import numpy as np

from r2s2r.data.derive import derive_dataset
from r2s2r.data.object_state import OBJECT_STATE


def make(i, ep):
    if ep.provenance.behavior != "teleop-takeover":
        return ep
    obs = dict(ep.obs)
    obs[OBJECT_STATE] = np.full_like(obs[OBJECT_STATE], np.nan)
    return dataclasses.replace(ep, obs=obs)


derive_dataset(
    Path("/work/runs/demos-lab0-takeover-labelled"),
    Path("/work/runs/demos-lab0-takeover-nanlabels"),
    lambda src: list(src.features.values()),
    make,
    {"kind": "takeover labels unknown (one-off)"},
)
print("done")
