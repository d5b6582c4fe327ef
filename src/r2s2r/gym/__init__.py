"""Gymnasium environments of the cell; importing this package registers them.

=====================  ==========================================================================
id                     environment
=====================  ==========================================================================
``r2s2r/SimCell-v0``   ``SimCellEnv``: a simulated cell, ``world`` a WorldParams JSON path or None
                       (nominal)
``r2s2r/LabTwin-v0``   ``LabTwinEnv``: the lab twin of seed ``lab``, through ``RealCell`` only
=====================  ==========================================================================

Both are one episode engine (``CellEnv``) over a cell behind the lab's trial interface
(``TrialCell``): the simulated cell runs trials as the lab twin does, every action through the
lab's safety filter, ``human_view`` through the lab's person model. Both take ``condition`` (kind,
default ``"nominal"``), ``cameras`` (default the policy cameras), ``image_size`` (default 48),
``max_duration`` (s, default 25) and ``render_mode`` (None or ``"rgb_array"``). Observations: a
dict of uint8 (H, W, 3) images per camera and ``proprio`` (float32, 27 joint positions); actions:
float32 (27,) absolute joint targets; the reward is sparse (1.0 on success).
``env.unwrapped.station`` is the teleoperator's access (``human_view``), for the scripted operator,
outside the observation. Example: ``examples/gym_scripted.py``.

    import gymnasium, r2s2r.gym
    env = gymnasium.make("r2s2r/LabTwin-v0", lab=0, image_size=48)
"""

import gymnasium

from r2s2r.gym.cell_env import CellEnv
from r2s2r.gym.lab_env import LabTwinEnv
from r2s2r.gym.sim_env import SimCellEnv
from r2s2r.gym.station import TeleopStation

SIM_CELL_ID = "r2s2r/SimCell-v0"
LAB_TWIN_ID = "r2s2r/LabTwin-v0"

gymnasium.register(id=SIM_CELL_ID, entry_point="r2s2r.gym.sim_env:SimCellEnv")
gymnasium.register(id=LAB_TWIN_ID, entry_point="r2s2r.gym.lab_env:LabTwinEnv")

__all__ = ["LAB_TWIN_ID", "SIM_CELL_ID", "CellEnv", "LabTwinEnv", "SimCellEnv", "TeleopStation"]
