"""``LabTwin``: the embedded default ``RealCell``, a MuJoCo cell whose as-built parameters are
hidden behind sensors.

The hidden parameters are held in name-mangled private attributes and reachable through no
public attribute or method; only the twin itself, its trial judge and tests (through
``_hidden_params``) read them. Everything the rest of r2s2r learns about the lab comes from
images, encoders, the scale, the factory calibration file and commanded motions.
"""

from __future__ import annotations

import mujoco
import numpy as np

from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.geometry import min_jerk, quat_to_mat
from r2s2r.lab.asbuilt import draw_as_built, factory_file
from r2s2r.lab.person import PersonBias, person_view
from r2s2r.lab.real_cell import EncoderRecord, GuardedMoveResult, HumanView, KinematicCalibration
from r2s2r.lab.safety import SafetyFilter, SafetyLimits
from r2s2r.world.cell import CellConfig, Observe, check_action, drawn
from r2s2r.world.conditions import Condition
from r2s2r.world.engine import CellEngine
from r2s2r.world.judge import Judge, Verdict
from r2s2r.world.objects import CATALOG, KNOWN_OBJECTS
from r2s2r.world.params import WorldParams
from r2s2r.world.scene import TargetMount

SIDES = ("right", "left")
_SALT = 0x5A11AB  # separates the lab's random streams from any other use of the same seed


def _check_side(side: str) -> str:
    if side not in SIDES:
        raise UnknownNameError("arm side", side, SIDES)
    return side


class LabTwin:
    """A lab cell drawn from ``seed``: same seed, same cell, same measurements."""

    def __init__(self, seed: int, config: CellConfig = CellConfig(), safety: SafetyLimits = SafetyLimits()) -> None:
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ConfigError(f"lab seed: expected a non-negative integer, got {seed!r}")
        self.seed = int(seed)
        streams = np.random.SeedSequence([_SALT, self.seed]).spawn(3)
        draw, factory, meas = (np.random.default_rng(s) for s in streams)
        nominal = WorldParams.nominal()
        truth = draw_as_built(nominal, draw)
        self.__truth = truth
        self.__factory = {s: factory_file(getattr(truth, f"{s}_arm"), s, factory) for s in SIDES}
        robot_model = nominal.replace(
            **{
                f"{s}_arm": getattr(nominal, f"{s}_arm").__class__(
                    base=getattr(nominal, f"{s}_arm").base,
                    link_pos=self.__factory[s].link_pos,
                    flange_pos=self.__factory[s].flange_pos,
                    joint_zero=self.__factory[s].joint_zero,
                )
                for s in SIDES
            }
        )
        self.__safety = SafetyFilter(robot_model, safety)
        self.__meas_rng = meas
        self.__trial_rng = meas
        self.__engine = CellEngine(truth, config.control)
        self.__engine.load(KNOWN_OBJECTS[0])
        self.__engine.park_object()
        self.__judge: Judge | None = None
        self.__verdict = Verdict(done=False)
        self.__time = 0.0
        self.__config = config
        self.cameras: tuple[str, ...] = tuple(c.name for c in truth.cameras)
        self.policy_cameras: tuple[str, ...] = config.cameras
        self.image_size: int = config.image_size
        self.control_dt: float = config.control.control_dt
        for cam in config.cameras:
            if cam not in self.cameras:
                raise UnknownNameError("camera", cam, self.cameras)

    # --- internals ------------------------------------------------------------------------
    def __safe(self, side: str, q: np.ndarray, dt: float) -> np.ndarray:
        eng = self.__engine
        other = "left" if side == "right" else "right"
        return self.__safety.filter(side, eng.command(side), q, dt, other={other: eng.command(other)})

    def __reload(self, object_name: str, target: TargetMount | None | str = "keep") -> None:
        """Rebuild the cell (new object or target) keeping both robots where they are."""
        eng = self.__engine
        state = {s: (eng.joint_positions(s), eng.command(s)) for s in SIDES}
        belt = eng.belt_speed / self.__truth.conveyor.speed_scale
        eng.load(object_name, target)
        for s, (q, _cmd) in state.items():
            eng.set_robot(s, q)
        eng.set_belt_speed(belt)

    # --- trials ---------------------------------------------------------------------------
    def reset(self, condition: Condition, seed: int) -> dict[str, np.ndarray]:
        if not isinstance(condition, Condition):
            raise ConfigError(f"reset: expected a Condition, got {type(condition).__name__}")
        self.__engine.apply_condition(condition)
        self.__judge = Judge(self.__engine.model, self.__truth, condition.object)
        self.__verdict = Verdict(done=False)
        self.__trial_rng = np.random.default_rng([_SALT, self.seed, int(seed)])
        self.__person_rng = np.random.default_rng([_SALT, self.seed, int(seed), 1])
        # Captures during a trial draw their sensor noise from the trial's own stream, so a trial's
        # full-resolution images do not depend on what the lab measured before it.
        self.__meas_rng = np.random.default_rng([_SALT, self.seed, int(seed), 2])
        self.__person_bias = PersonBias.draw(self.__person_rng)
        self.__time = 0.0
        return self.observe()

    def observe(self) -> dict[str, np.ndarray]:
        return self.__frames(self.policy_cameras)

    def __frames(self, draw: tuple[str, ...]) -> dict[str, np.ndarray]:
        """``observe`` drawing only the cameras in ``draw``: a skipped frame advances the camera noise
        stream as if it were taken, so the frames a trial does observe do not depend on which ones it
        skipped."""
        return self.__engine.observation(self.policy_cameras, draw, self.image_size, self.__trial_rng)

    def act(self, action: np.ndarray, observe: Observe = True) -> dict[str, np.ndarray]:
        if self.__judge is None:
            raise ConfigError("act called before reset")
        draw = drawn(self.policy_cameras, observe)
        safe = self.__safe("right", check_action(action), self.control_dt)
        self.__engine.step({"right": safe})
        self.__time += self.control_dt
        if not self.__verdict.done:
            self.__verdict = self.__judge.update(self.__engine.data)
            if not self.__verdict.done and self.__time >= self.__config.max_duration - 1e-9:
                self.__verdict = self.__judge.finish()
        return self.__frames(draw)

    def last_command(self, side: str) -> np.ndarray:
        return self.__engine.command(_check_side(side)).copy()

    def verdict(self) -> Verdict:
        return self.__verdict

    def human_view(self) -> HumanView:
        if self.__judge is None:
            raise ConfigError("human_view called before reset")
        eng, truth = self.__engine, self.__truth
        return person_view(
            self.__time,
            eng.object_name,
            eng.object_pose(),
            eng.belt_speed,
            quat_to_mat(truth.conveyor.pose.quat)[:, 0],
            {b.color: b.pose.pos for b in truth.bins},
            self.__person_bias,
            self.__person_rng,
        )

    @property
    def time(self) -> float:
        """Seconds since the current trial started."""
        return self.__time

    # --- measurements ---------------------------------------------------------------------
    def capture(self, camera: str, size: tuple[int, int] | None = None) -> np.ndarray:
        if camera not in self.cameras:
            raise UnknownNameError("camera", camera, self.cameras)
        return self.__engine.render(camera, size, self.__meas_rng)

    def read_encoders(self, side: str) -> np.ndarray:
        return self.__engine.joint_positions(_check_side(side))

    def execute_trajectory(self, side: str, t: np.ndarray, q: np.ndarray) -> EncoderRecord:
        _check_side(side)
        t = np.asarray(t, dtype=float)
        q = np.asarray(q, dtype=float)
        if t.ndim != 1 or len(t) < 1 or q.shape not in ((len(t), 7), (len(t), 27)):
            raise ConfigError(f"trajectory: expected t (N,) and q (N, 7) or (N, 27), got {t.shape} and {q.shape}")
        if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0) or t[0] < 0:
            raise ConfigError("trajectory: times must be finite, non-negative and increasing")
        eng = self.__engine
        dt = eng.model.opt.timestep
        n = int(round(t[-1] / dt)) + 1
        rec_t, rec_cmd, rec_q = np.empty(n), np.empty((n, 7)), np.empty((n, 7))
        k, last_t = -1, 0.0
        for i in range(n):
            now = i * dt
            while k + 1 < len(t) and t[k + 1] <= now + 1e-9:
                k += 1
                full = eng.command(side)
                full[: q.shape[1]] = q[k]
                safe = self.__safe(side, full, max(t[k] - last_t, dt))
                last_t = t[k]
                eng.set_command(side, safe)
            rec_t[i], rec_cmd[i], rec_q[i] = now, eng.command(side)[:7], eng.joint_positions(side)[:7]
            eng.step_physics(1)
        return EncoderRecord(side=side, t=rec_t, q_cmd=rec_cmd, q=rec_q)

    def move_to(self, side: str, q: np.ndarray, duration: float) -> EncoderRecord:
        _check_side(side)
        q = np.asarray(q, dtype=float)
        if q.shape not in ((7,), (27,)) or duration <= 0:
            raise ConfigError(f"move_to: expected q (7,) or (27,) and a positive duration, got {q.shape}, {duration}")
        start = self.__engine.command(side)[: q.shape[0]]
        steps = max(2, int(round(duration / 0.01)))  # stream at 100 Hz
        s = min_jerk(np.linspace(0, 1, steps + 1))[1:]
        t = np.linspace(0, duration, steps + 1)[1:]
        return self.execute_trajectory(side, t, start + s[:, None] * (q - start))

    def guarded_move(
        self, side: str, q_target: np.ndarray, duration: float, force_threshold: float = 2.0
    ) -> GuardedMoveResult:
        _check_side(side)
        q_target = np.asarray(q_target, dtype=float)
        if q_target.shape != (7,) or duration <= 0 or force_threshold <= 0:
            raise ConfigError("guarded_move: expected q_target (7,), a positive duration and force threshold")
        eng = self.__engine
        m, d = eng.model, eng.data
        probe = set(np.flatnonzero(m.geom_bodyid == m.site_bodyid[m.site(f"{side}_index_tip").id]).tolist())
        start = eng.command(side)[:7]
        seg = max(1, int(round(0.01 / m.opt.timestep)))  # stream targets at 100 Hz
        n_seg = max(1, int(round(duration / 0.01)))
        force = np.zeros(6)
        for k in range(1, n_seg + 1):
            full = eng.command(side)
            full[:7] = start + (k / n_seg) * (q_target - start)
            eng.set_command(side, self.__safe(side, full, 0.01))
            for _ in range(seg):
                eng.step_physics(1)
                total = 0.0
                for j in range(d.ncon):
                    c = d.contact[j]
                    if c.geom1 in probe or c.geom2 in probe:
                        mujoco.mj_contactForce(m, d, j, force)
                        total += abs(force[0])
                if total > force_threshold:
                    q_stop = eng.joint_positions(side)[:7]
                    hold = eng.command(side)
                    hold[:7] = q_stop
                    eng.set_command(side, hold)
                    eng.step_physics(int(round(0.1 / m.opt.timestep)))
                    return GuardedMoveResult(contact=True, q=q_stop, force=float(total))
        return GuardedMoveResult(contact=False, q=eng.joint_positions(side)[:7], force=0.0)

    def weigh(self, object_name: str) -> float:
        if object_name not in CATALOG:
            raise UnknownNameError("object", object_name, tuple(CATALOG))
        reading = self.__truth.object(object_name).mass + self.__meas_rng.normal(0.0, 2e-4)
        return round(float(reading), 4)  # the scale shows 0.1 g

    def mount_target(self, mount: TargetMount | None) -> None:
        if mount is not None and not isinstance(mount, TargetMount):
            raise ConfigError(f"mount_target: expected a TargetMount or None, got {type(mount).__name__}")
        self.__reload(self.__engine.object_name, mount)

    def factory_calibration(self, side: str) -> KinematicCalibration:
        return self.__factory[_check_side(side)]

    def set_lighting(self, scale: float, tint=(1.0, 1.0, 1.0), azimuth: float = 0.0) -> None:
        Condition("lighting", KNOWN_OBJECTS[0], 0.0, -0.2, 0.0, 0.0, scale, tuple(tint), azimuth)  # validates
        self.__engine.set_lighting(scale, tint, azimuth)

    def set_belt_speed(self, speed: float) -> None:
        if not 0.0 <= speed <= 0.25:
            raise ConfigError(f"belt speed: expected 0..0.25 m/s, got {speed}")
        self.__engine.set_belt_speed(speed)

    def place_object(self, object_name: str, start_x: float, lateral: float, yaw: float) -> None:
        # A condition of a kind that admits any catalog object validates the name and the ranges.
        Condition("novel_object", object_name, 0.0, start_x, lateral, yaw)
        if object_name != self.__engine.object_name:
            self.__reload(object_name)
        self.__engine.place_object_on_belt(start_x, lateral, yaw)

    def hold(self, duration: float) -> None:
        if duration < 0:
            raise ConfigError(f"hold: expected a non-negative duration, got {duration}")
        n = int(round(duration / self.__engine.model.opt.timestep))
        if n:
            self.__engine.step_physics(n)

    def safety_report(self) -> dict[str, int]:
        return dict(self.__safety.counts)

    def close(self) -> None:
        """Release the GL contexts of the lab's renderers (the next ``reset`` builds them again)."""
        self.__engine.close()

    def __repr__(self) -> str:
        return f"LabTwin(seed={self.seed})"


def _hidden_params(lab: LabTwin) -> WorldParams:
    """Test-only hook: the lab twin's hidden as-built parameters. Never call it from r2s2r."""
    return lab._LabTwin__truth
