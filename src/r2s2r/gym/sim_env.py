"""``SimCellEnv`` (``r2s2r/SimCell-v0``): a simulated world behind the lab's trial interface
(``r2s2r.lab.simulated_cell.SimulatedCell``) as a Gymnasium environment. The episode contract is
``r2s2r.gym.cell_env``'s, the same as the lab twin's.

The world is a ``WorldParams`` JSON file (grounded or ungrounded, as ``calibrate`` writes it) or
the nominal spec sheet. The simulated cell runs trials the way the lab does: every action passes
the lab's safety filter (non-finite commands held, joint limits, rated speed, workspace,
self-collision), built from the world's own robot model; ``info["safety"]`` counts what the filter
changed during the episode and ``info["command"]`` is the command as it reached the robot. The
station's ``human_view`` shows the trial to the lab's person model (``r2s2r.lab.person``), so the
scripted operator misjudges here as it does in the lab; its calibration file is the world's own
kinematics. The simulator is open: ``env.unwrapped.cell`` is the ``SimCell``.
"""

from __future__ import annotations

from pathlib import Path

from r2s2r.errors import ConfigError
from r2s2r.gym.cell_env import CellEnv
from r2s2r.lab.simulated_cell import SimulatedCell
from r2s2r.world.cell import POLICY_CAMERAS, SimCell
from r2s2r.world.params import WorldParams


def load_world(world: str | Path | WorldParams | None) -> WorldParams:
    """The world of ``world``: a WorldParams JSON file, a ``WorldParams`` value, or None (nominal)."""
    if world is None:
        return WorldParams.nominal()
    if isinstance(world, WorldParams):
        return world
    if isinstance(world, str | Path):
        return WorldParams.load(world, "world")
    raise ConfigError(f"world: expected a WorldParams JSON path, a WorldParams or None, got {type(world).__name__}")


class SimCellEnv(CellEnv):
    """A simulated pick-and-sort cell; reward 1.0 on success, else 0.0 (sparse).

    ``world``: a WorldParams JSON path (or value), None for the nominal world; ``condition``: the
    kind of condition each episode draws (``r2s2r.world.conditions.KINDS``); ``cameras``: the
    observed cameras; ``image_size``: their square size in px; ``max_duration``: s of trial time
    before truncation; ``render_mode``: None or ``"rgb_array"``.
    """

    def __init__(
        self,
        world: str | Path | WorldParams | None = None,
        condition: str = "nominal",
        cameras: tuple[str, ...] = POLICY_CAMERAS,
        image_size: int = 48,
        max_duration: float = 25.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            lambda config: SimulatedCell(load_world(world), config),
            condition,
            cameras,
            image_size,
            max_duration,
            render_mode,
        )
        self.cell: SimCell = self._cell.sim
