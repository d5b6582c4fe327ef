"""A scripted pick off the belt and a fast carry to the bin, in the simulated cell and the lab twin.

The script knows the object's true pose (it is a test): it checks that the cell's arm, hand and
contacts can pick, hold through a fast carry, and release into the bin, and that the judge agrees.
"""

import numpy as np
import pytest

from r2s2r.behavior.ik import ArmIK
from r2s2r.geometry import inv_T, make_T, min_jerk
from r2s2r.lab.twin import LabTwin, _hidden_params
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.conditions import Condition
from r2s2r.world.hand import PALM_CENTER, hand_grasp_pose, hand_open_pose
from r2s2r.world.params import WorldParams

DOWN = np.diag([1.0, -1.0, -1.0])  # palm normal down, fingers along world +x


class Script:
    """Drives the right arm through palm-centre waypoints (world frame) with min-jerk segments."""

    def __init__(self, cell: SimCell, params: WorldParams) -> None:
        self.cell, self.dt = cell, cell.config.control.control_dt
        T_flange_palm = make_T(PALM_CENTER, (1, 0, 0, 0))
        self.ik = ArmIK.from_kinematics(params.right_arm, T_flange_palm)
        base = params.right_arm.base
        self.T_base_world = inv_T(make_T(base.pos, base.quat))
        self.q = cell.engine.joint_positions("right")[:7]
        self.hand = hand_open_pose()
        self.palm = (make_T(base.pos, base.quat) @ self.ik.forward(self.q))[:3, 3]
        self.trace: list[np.ndarray] = []

    def move(self, target: np.ndarray, duration: float, hand: np.ndarray | None = None) -> None:
        start, hand0 = self.palm.copy(), self.hand.copy()
        hand1 = self.hand if hand is None else hand
        n = max(1, int(round(duration / self.dt)))
        for k in range(1, n + 1):
            s = min_jerk(k / n)
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = DOWN, start + s * (np.asarray(target) - start)
            res = self.ik.solve(self.T_base_world @ T, self.q)
            assert res.ok, f"IK failed at {T[:3, 3]}"
            self.q = res.q
            self.hand = hand0 + s * (hand1 - hand0)
            _, verdict = self.cell.step(np.concatenate([self.q, self.hand]))
            self.trace.append(self.object_in_palm())
        self.palm = np.asarray(target, float)

    def object_in_palm(self) -> np.ndarray:
        """The object's centre in the palm-centre frame, m."""
        m, d = self.cell.engine.model, self.cell.engine.data
        site = m.site("right_palm_center").id
        R = d.site_xmat[site].reshape(3, 3)
        return R.T @ (self.cell.engine.object_pose()[:3, 3] - d.site_xpos[site])


@pytest.mark.parametrize("world", ["nominal", "lab"])
@pytest.mark.parametrize("obj", ["red_cube", "blue_cylinder", "red_sphere"])
def test_scripted_pick_fast_carry_and_release(world, obj):
    params = WorldParams.nominal() if world == "nominal" else _hidden_params(LabTwin(7))
    cell = SimCell(params, CellConfig(image_size=32, max_duration=30.0))
    cond = Condition(kind="belt_speed", object=obj, belt_speed=0.0, start_x=0.1, lateral=0.02, yaw=0.4)
    cell.reset(cond, np.random.default_rng(0))
    script = Script(cell, WorldParams.nominal())  # the script plans on the spec sheet, as a robot would
    centre = cell.engine.object_pose()[:3, 3]
    script.move(centre + [0, 0, 0.12], 2.0, hand_grasp_pose("power", 0.0))
    script.move(centre + [0, 0, 0.005], 1.0)
    script.move(centre + [0, 0, 0.005], 0.6, hand_grasp_pose("power", 1.0))
    script.move(centre + [0, 0, 0.17], 0.6)
    held = script.object_in_palm()
    assert np.linalg.norm(held) < 0.04, "the object is not in the hand after the lift"
    start = len(script.trace)
    bin_top = np.asarray(params.bin(cell.condition.color).pose.pos) + [0, 0, 0.22]
    script.move(bin_top, 0.8)  # fast carry: ~0.7 m in 0.8 s (peak ~6.5 m/s^2)
    script.move(bin_top, 0.5)  # stop and hold
    drift = np.linalg.norm(np.array(script.trace[start:]) - held, axis=1)
    assert drift.max() < 0.025, f"object moved {drift.max():.3f} m in the palm frame during the carry"
    script.move(bin_top, 0.4, hand_open_pose())
    for _ in range(20):
        _, verdict = cell.step(np.concatenate([script.q, script.hand]))
        if verdict.done:
            break
    assert verdict.success, verdict
    cell.close()
