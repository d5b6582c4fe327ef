"""``LabTwinEnv`` (``r2s2r/LabTwin-v0``): the lab twin (``r2s2r.lab.twin.LabTwin``) as a
Gymnasium environment. The episode contract is ``r2s2r.gym.cell_env``'s.

The environment sees the lab only through its trial interface (``TrialCell``), as evaluation does:
trials (reset to a condition and a trial seed, act, the scorer's verdict), the safety filter's counts
and the operator's station (``human_view``, encoders, the factory calibration file). Every action
passes the lab's safety filter (non-finite commands held, joint limits, rated speed, workspace,
self-collision); ``info["safety"]`` counts what it changed during the episode and
``info["command"]`` is the command as it reached the robot. The lab itself is not exposed.
"""

from __future__ import annotations

from r2s2r.gym.cell_env import CellEnv
from r2s2r.lab.twin import LabTwin
from r2s2r.world.cell import POLICY_CAMERAS


class LabTwinEnv(CellEnv):
    """Trials on lab twin ``lab``; reward 1.0 on success, else 0.0 (sparse).

    ``lab``: the lab twin's seed (which as-built cell); ``condition``: the kind of condition each
    episode draws (``r2s2r.world.conditions.KINDS``); ``cameras``: the observed cameras;
    ``image_size``: their square size in px; ``max_duration``: s of trial time before truncation;
    ``render_mode``: None or ``"rgb_array"``.
    """

    def __init__(
        self,
        lab: int = 0,
        condition: str = "nominal",
        cameras: tuple[str, ...] = POLICY_CAMERAS,
        image_size: int = 48,
        max_duration: float = 25.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(lambda config: LabTwin(lab, config), condition, cameras, image_size, max_duration, render_mode)
        self.lab_seed = int(lab)  # LabTwin checked it: a non-negative integer
