"""The physics of one cell: compiled model per object, belt drive, servo targets, lighting.

Shared by ``SimCell`` (simulated worlds) and the lab twin. Control convention: a command is
the absolute joint-position target of one arm (7) and hand (20); between two commands the
target ramps linearly over ``interp_segments`` pieces of the control period (a first-order
hold, as robot drivers do), and each actuator applies it after its actuation delay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.geometry import axis_angle_quat, make_T, quat_mul, quat_to_mat
from r2s2r.world import rizon
from r2s2r.world.conditions import Condition
from r2s2r.world.hand import hand_open_pose
from r2s2r.world.objects import CATALOG
from r2s2r.world.params import LightingParams, WorldParams
from r2s2r.world.rendering import CellRenderer
from r2s2r.world.scene import BELT_PERIOD, TargetMount, arm_joint_names, build_spec, hand_joint_names

N_ARM, N_HAND = 7, 20
N_SIDE = N_ARM + N_HAND
# The static left arm's pose: its wrist camera looks down at the pick zone (see test_scene).
LEFT_HOLD_Q = (0.68, -0.085, 0.34, 2.638, -0.981, 0.11, -0.326)


@dataclass(frozen=True)
class ControlConfig:
    """Control timing shared by every cell."""

    control_dt: float = 0.1  # s, 10 Hz actions
    interp_segments: int = 5  # first-order hold pieces per control period

    def __post_init__(self) -> None:
        if not 0.01 <= self.control_dt <= 1.0:
            raise ConfigError(f"control_dt: expected a period in [0.01, 1] s, got {self.control_dt}")
        if self.interp_segments < 1:
            raise ConfigError(f"interp_segments: expected >= 1, got {self.interp_segments}")


def home_command() -> np.ndarray:
    """27-D command of the picking arm at its home pose with the hand open."""
    return np.concatenate([rizon.HOME_Q, hand_open_pose()])


def left_hold_command() -> np.ndarray:
    return np.concatenate([LEFT_HOLD_Q, hand_open_pose()])


class CellEngine:
    """Physics state of a cell holding one object at a time."""

    def __init__(
        self, params: WorldParams, control: ControlConfig = ControlConfig(), target: TargetMount | None = None
    ) -> None:
        self.params = params
        self.control = control
        self.target = target
        self._steps_per_segment = control.control_dt / control.interp_segments / params.physics.timestep
        if abs(self._steps_per_segment - round(self._steps_per_segment)) > 1e-6:
            raise ConfigError(
                f"control_dt/interp_segments ({control.control_dt}/{control.interp_segments}) must be a "
                f"multiple of the physics timestep {params.physics.timestep}"
            )
        self._steps_per_segment = int(round(self._steps_per_segment))
        self.model: mujoco.MjModel | None = None
        self.data: mujoco.MjData | None = None
        self.renderer: CellRenderer | None = None
        self.object_name: str | None = None
        self.belt_speed = 0.0  # actual surface speed, m/s
        self._built: dict[tuple, tuple[mujoco.MjModel, mujoco.MjData, CellRenderer]] = {}
        self._cmd: dict[str, np.ndarray] = {}  # each side's current 27-D joint target
        self._obj_rgba0: dict[tuple, dict[int, np.ndarray]] = {}  # the object's geom colours per model

    # --- building -------------------------------------------------------------------------
    def load(self, object_name: str, target: TargetMount | None | str = "keep") -> None:
        """Compile the cell with ``object_name`` (a few ms) and reset the robot to home."""
        if target != "keep":
            self.target = target
        key = (object_name, self.target)
        if key not in self._built:  # compiled models and their GL contexts are kept per object
            model = build_spec(self.params, object_name, self.target).compile()
            self._built[key] = (model, mujoco.MjData(model), CellRenderer(model, self.params.cameras))
            body = model.body("object").id
            self._obj_rgba0[key] = {g: model.geom_rgba[g].copy() for g in np.flatnonzero(model.geom_bodyid == body)}
        self.model, self.data, self.renderer = self._built[key]
        for g, rgba in self._obj_rgba0[key].items():  # models are reused: restore the catalog colours
            self.model.geom_rgba[g] = rgba
        mujoco.mj_resetData(self.model, self.data)
        self.object_name = object_name
        m = self.model
        self._qadr = {
            s: np.array([m.joint(n).qposadr[0] for n in arm_joint_names(s) + hand_joint_names(s)])
            for s in ("right", "left")
        }
        self._vadr = {
            s: np.array([m.joint(n).dofadr[0] for n in arm_joint_names(s) + hand_joint_names(s)])
            for s in ("right", "left")
        }
        self._act = {"right": np.arange(0, N_SIDE), "left": np.arange(N_SIDE, 2 * N_SIDE)}
        self._belt_q = m.joint("belt_slide").qposadr[0]
        self._belt_v = m.joint("belt_slide").dofadr[0]
        self._obj_q = m.joint("object_free").qposadr[0]
        self._obj_v = m.joint("object_free").dofadr[0]
        self._base_lighting(self.params.lighting)
        self.set_robot("right", home_command())
        self.set_robot("left", left_hold_command())

    # --- state ----------------------------------------------------------------------------
    def set_robot(self, side: str, q: np.ndarray) -> None:
        """Teleport one side's joints to ``q`` (27-D encoder values) at rest, targets equal."""
        self.data.qpos[self._qadr[side]] = q
        self.data.qvel[self._vadr[side]] = 0.0
        self.data.ctrl[self._act[side]] = q
        self._cmd[side] = np.array(q, dtype=float)
        m = self.model
        for i, a in enumerate(self._act[side]):  # fill the actuation-delay history with the target
            nsample = int(m.actuator_history[a][0])
            if nsample > 0:
                mujoco.mj_initCtrlHistory(m, self.data, int(a), None, np.full((nsample, 1), float(q[i])))
        mujoco.mj_forward(m, self.data)

    def set_command(self, side: str, q: np.ndarray) -> None:
        """Set one side's 27-D target at once (no ramp); it holds until the next command."""
        self._cmd[side] = np.array(q, dtype=float)
        self.data.ctrl[self._act[side]] = self._cmd[side]

    def joint_positions(self, side: str) -> np.ndarray:
        """Encoder readings (27-D: arm then hand) of one side, rad."""
        return self.data.qpos[self._qadr[side]].copy()

    def joint_velocities(self, side: str) -> np.ndarray:
        return self.data.qvel[self._vadr[side]].copy()

    def command(self, side: str) -> np.ndarray:
        return self._cmd[side].copy()

    def object_pose(self) -> np.ndarray:
        """T_world_object (4x4) of the current object."""
        qp = self.data.qpos[self._obj_q : self._obj_q + 7]
        return make_T(qp[:3], qp[3:])

    def place_object_on_belt(self, start_x: float, lateral: float, yaw: float) -> None:
        """Put the object at rest on the belt surface at belt-frame (x, y), yawed, moving with the belt."""
        c = self.params.conveyor
        cat = CATALOG[self.object_name]
        T_world_belt = make_T(c.pose.pos, c.pose.quat)
        p = T_world_belt @ np.array([start_x, lateral, cat.rest_height + 1e-4, 1.0])
        q = quat_mul(c.pose.quat, axis_angle_quat((0, 0, 1), yaw))
        self.data.qpos[self._obj_q : self._obj_q + 7] = np.concatenate([p[:3], q])
        v = quat_to_mat(c.pose.quat)[:, 0] * self.belt_speed
        self.data.qvel[self._obj_v : self._obj_v + 6] = np.concatenate([v, np.zeros(3)])
        mujoco.mj_forward(self.model, self.data)

    def park_object(self) -> None:
        """Move the object out of the way (on the floor behind the robots), at rest."""
        self.data.qpos[self._obj_q : self._obj_q + 7] = [-0.8, 0.0, CATALOG[self.object_name].rest_height, 1, 0, 0, 0]
        self.data.qvel[self._obj_v : self._obj_v + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def set_belt_speed(self, commanded: float) -> None:
        """Commanded belt speed (m/s); the surface runs at ``commanded * speed_scale``."""
        self.belt_speed = float(commanded) * self.params.conveyor.speed_scale
        self.data.qvel[self._belt_v] = self.belt_speed

    def _base_lighting(self, lighting: LightingParams) -> None:
        # compiled models are reused across loads: the base values live here, never read back
        self._key_dir0 = np.array(lighting.key_dir, float)
        self._key_diffuse0 = lighting.key_diffuse * np.asarray(lighting.key_color, float)
        self._ambient0 = float(lighting.ambient)

    def set_base_lighting(self, lighting: LightingParams) -> None:
        """Replace the cell's lighting (what ``set_lighting`` scales and turns) and apply it as is."""
        self._base_lighting(lighting)
        self.set_lighting(1.0)

    def set_lighting(
        self, scale: float, tint=(1.0, 1.0, 1.0), azimuth: float = 0.0, ambient_scale: float = 1.0
    ) -> None:
        """Key light intensity scale, colour tint and rotation about world z (rad); ambient scale."""
        m = self.model
        light = m.light("key").id
        m.light_diffuse[light] = self._key_diffuse0 * scale * np.asarray(tint)
        ca, sa = math.cos(azimuth), math.sin(azimuth)
        d = self._key_dir0
        m.light_dir[light] = [ca * d[0] - sa * d[1], sa * d[0] + ca * d[1], d[2]]
        m.vis.headlight.ambient[:] = self._ambient0 * ambient_scale
        mujoco.mj_forward(m, self.data)

    def set_object_color(self, rgb_scale) -> None:
        """Scale the current object's colour channels (relative to its catalog colour, clipped to 1)."""
        key = (self.object_name, self.target)
        for g, rgba in self._obj_rgba0[key].items():
            self.model.geom_rgba[g, :3] = np.clip(rgba[:3] * np.asarray(rgb_scale, float), 0.0, 1.0)

    def apply_condition(self, cond: Condition) -> None:
        """Load the condition's object, set belt speed and lighting, place the object upstream."""
        self.load(cond.object)
        self.set_belt_speed(cond.belt_speed)
        self.set_lighting(cond.light_scale, cond.light_tint, cond.light_azimuth)
        self.place_object_on_belt(cond.start_x, cond.lateral, cond.yaw)

    # --- time -----------------------------------------------------------------------------
    def _wrap_belt(self) -> None:
        d = self.data
        d.qvel[self._belt_v] = self.belt_speed
        if d.qpos[self._belt_q] >= BELT_PERIOD:
            d.qpos[self._belt_q] -= BELT_PERIOD * math.floor(d.qpos[self._belt_q] / BELT_PERIOD)

    def step(self, commands: dict[str, np.ndarray], duration: float | None = None) -> None:
        """Advance one control period (or ``duration``, a multiple of it), ramping each side's
        target from its previous command to ``commands[side]`` over the first period."""
        m, d = self.model, self.data
        n_periods = 1 if duration is None else max(1, round(duration / self.control.control_dt))
        start = {s: self._cmd[s] for s in commands}
        k_seg = self.control.interp_segments
        for period in range(n_periods):
            for k in range(k_seg):
                alpha = (k + 1) / k_seg if period == 0 else 1.0
                for side, target in commands.items():
                    d.ctrl[self._act[side]] = start[side] + alpha * (target - start[side])
                self._wrap_belt()
                mujoco.mj_step(m, d, nstep=self._steps_per_segment)
        for side, target in commands.items():
            self._cmd[side] = np.array(target, float)
        self._wrap_belt()

    def step_physics(self, nstep: int = 1) -> None:
        """Advance raw physics steps holding the current actuator targets."""
        self._wrap_belt()
        mujoco.mj_step(self.model, self.data, nstep=nstep)

    def render(self, camera: str, size: tuple[int, int] | None, rng: np.random.Generator | None) -> np.ndarray:
        return self.renderer.render(self.data, camera, size, rng)

    def skip_render(self, camera: str, size: tuple[int, int] | None, rng: np.random.Generator | None) -> None:
        """Advance ``rng`` as ``render`` would, rendering nothing (a frame nobody reads)."""
        self.renderer.skip(camera, size, rng)

    def observation(
        self, cameras: tuple[str, ...], draw: tuple[str, ...], size: int, rng: np.random.Generator | None
    ) -> dict[str, np.ndarray]:
        """The right arm's observation: the ``draw`` cameras' ``size`` square frames and ``proprio``; each of
        ``cameras`` not drawn advances ``rng`` as its frame would, so later frames do not depend on the
        skipped ones."""
        obs = {}
        for cam in cameras:
            if cam in draw:
                obs[cam] = self.render(cam, (size, size), rng)
            else:
                self.skip_render(cam, (size, size), rng)
        obs["proprio"] = self.joint_positions("right")
        return obs

    def close(self) -> None:
        """Release every GL context this engine created."""
        for _model, _data, renderer in self._built.values():
            renderer.close()
        self._built.clear()
        self.renderer = None
