"""The teleoperator model run in a simulated cell: a person's motion without a person.

A reference behaviour, neither of the study's two: the same human motion model that records the
real demonstrations (``teleop.Operator``: reaction delay, minimum-jerk reaches, varying speed,
tremor, power grasp) drives a ``SimCell``. The person sees the simulated trial exactly (the
simulator is open; there is no human perception error here). Useful to check a world (does the
human strategy work in it?) and as a cheap, always-available behaviour for the generation tests.
Subtask signals: ``grasp`` from the lift on, ``release`` once the hand has opened over the bin.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from r2s2r.behavior.teleop import Operator, OperatorConfig
from r2s2r.geometry import quat_to_mat
from r2s2r.lab.real_cell import HumanView
from r2s2r.world.cell import SimCell
from r2s2r.world.conditions import Condition

_HOLDING = ("lift", "carry", "release", "done")


def sim_view(cell: SimCell) -> HumanView:
    """What a person sees of the simulated trial, exactly (world frame)."""
    eng, params = cell.engine, cell.params
    T = eng.object_pose()
    return HumanView(
        time=cell.time,
        object_name=eng.object_name,
        object_pos=T[:3, 3].copy(),
        object_yaw=float(np.arctan2(T[1, 0], T[0, 0])),
        belt_speed=float(eng.belt_speed),
        belt_dir=quat_to_mat(params.conveyor.pose.quat)[:, 0],
        bin_pos={b.color: np.asarray(b.pose.pos, float) for b in params.bins},
    )


class _Plan:
    def __init__(self, operator: Operator) -> None:
        self.operator = operator

    def act(self, cell: SimCell, step: int) -> np.ndarray | None:
        return self.operator.act(sim_view(cell), cell.time)

    def info(self, step: int) -> dict[str, Any]:
        phase = self.operator.phase
        return {"subtask_term_signals": {"grasp": np.int8(phase in _HOLDING), "release": np.int8(phase == "done")}}


class SimTeleop:
    """``Behavior`` ``teleop``: the operator model on the simulated world's own kinematics."""

    name = "teleop"

    def __init__(self, config: OperatorConfig = OperatorConfig()) -> None:
        self.config = config

    def plan(self, cell: SimCell, condition: Condition, rng: np.random.Generator) -> _Plan:
        op = Operator(cell.params.right_arm, cell.params.right_arm.base, self.config)
        op.start(cell.engine.joint_positions("right")[:7], rng)
        return _Plan(op)
