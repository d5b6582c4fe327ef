"""robomimic's ``env_args``: the environment metadata robomimic's dataset tools read from a file.

robomimic stores, on the ``data`` group of every dataset file, ``attrs["env_args"]``: a JSON string
with ``env_name``, ``type`` (a value of ``robomimic.envs.env_base.EnvType``: 1 robosuite, 2 gym,
3 iGibson MOMART) and ``env_kwargs`` (the environment constructor's keyword arguments).
``robomimic.utils.file_utils.get_env_metadata_from_dataset`` returns it, and its scripts
(``get_dataset_info.py``, training) read it before anything else.

Every shard (and staging file) r2s2r writes carries it, with its own type ``ENV_TYPE`` = 100:
an r2s2r cell, which robomimic reads and reports but does not construct (its ``create_env*``
functions know types 1-3 only). The cell is built with r2s2r's Gymnasium environments
(``r2s2r.gym``: ``r2s2r/LabTwin-v0``, ``r2s2r/SimCell-v0``); ``env_kwargs`` holds what the episodes
were recorded with: the control rate, the cameras and their image size, the action size, and the
manifest's ``info`` (the lab or the world, the behaviour, the seed).
"""

from __future__ import annotations

import json
from typing import Any

from r2s2r.data.manifest import Manifest

ENV_NAME = "r2s2r/cell"  # the pick-and-sort cell; env_kwargs["dataset"] says which lab or world
ENV_TYPE = 100  # r2s2r's value in robomimic's EnvType space (robomimic uses 1-3)
ENV_ARGS = "env_args"  # the attribute of the ``data`` group


def env_args(manifest: Manifest) -> dict[str, Any]:
    """robomimic's environment metadata of a dataset with ``manifest``'s features and info."""
    cameras = [f for f in manifest.features if f.is_image]
    actions = next((f for f in manifest.features if f.name == "actions"), None)
    return {
        "env_name": ENV_NAME,
        "type": ENV_TYPE,
        "env_kwargs": {
            "control_rate_hz": manifest.control_rate_hz,
            "cameras": [f.obs_key for f in cameras],
            "image_size": list(cameras[0].shape[:2]) if cameras else None,
            "action_dim": actions.shape[0] if actions is not None else None,
            "dataset": manifest.info,
        },
    }


def env_args_json(manifest: Manifest) -> str:
    """``env_args(manifest)`` as the JSON string robomimic stores (keys sorted: same manifest, same bytes)."""
    return json.dumps(env_args(manifest), sort_keys=True)
