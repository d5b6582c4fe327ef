"""Identify an arm's joint drives (PD gains, viscous damping, dry friction, armature, actuation
delay) from excitation runs executed on the lab, with MuJoCo's system-identification toolbox.

Model: each arm joint is driven by a MuJoCo position actuator, torque
``clamp(kp (u(t - delay) - q) - kv qdot, +-torque_limit)`` plus gravity compensation, and the
joint has passive damping, dry friction (``frictionloss``) and armature (see
``world.scene._add_arm``). The fit runs the SIMULATOR (``PhysicsParams()``, 2 ms steps) on an
arm-only copy of the cell (the arm and its hand: the other bodies share no joints with it, and
excitation stays clear of contacts), built from the spec sheet with the factory kinematics.

Identifiability (measured on lab twins, see tests/test_calibrate_arm.py):
- Below the torque limit a joint obeys ``I q'' = kp (u - q) - (kv + damping) q' - friction``
  (+ weak coupling), which stays the same when kp, kv + damping, friction and the inertia
  ``I = armature + link inertia`` are all scaled together. So kp, kv + damping and friction are
  identified relative to the inertia, and ``kv`` and ``damping`` only as their sum. Joints 1-4
  carry mostly link inertia (1.2-3 kg m^2 at home, known from the drawings within the +-5 % link
  mass spread) and ``kv`` 20-150 times their damping: their kp and kv come out within a few
  percent. The wrist joints (5-7) are armature-dominated (their scale follows the armature's
  spread) and their ``kv`` (~10) is comparable to their damping (0.5-3): kp is weakly and kv is
  not identifiable there; ``kv + damping`` is.
- Only torque saturation (known limits) fixes the scale and splits kv from damping. Optional
  saturating steps (``DriveExcitationConfig.saturation_steps``) free armature and damping, but
  at the simulator's 2 ms step (and 2 ms delay quantisation) the simulator misses those fast
  transients by more than the parameters change them, so the fit drifts; they are off by default.
- The actuation delay acts on a control history sampled every step, so the residual is piecewise
  constant in it and ``mujoco.sysid``'s finite-difference Levenberg-Marquardt cannot move it: it
  comes from matching step-response onsets (``estimate_delay``), a whole number of steps.

Joint values are encoder readings (rad); times in s; torques in N m.
"""

from __future__ import annotations

import dataclasses
import io
import time
from dataclasses import dataclass

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout
from mujoco import sysid

from r2s2r.calibrate.excitation import (
    DriveExcitationConfig,
    DriveRun,
    run_excitation,
    saturation_targets,
    small_signal_targets,
)
from r2s2r.errors import R2S2RError
from r2s2r.lab.real_cell import KinematicCalibration, RealCell
from r2s2r.world import rizon
from r2s2r.world.params import ArmParams, PhysicsParams, WorldParams
from r2s2r.world.scene import arm_joint_names, build_spec

N = rizon.N_JOINTS
_STATE = mujoco.mjtState.mjSTATE_FULLPHYSICS


# --- the simulator model ----------------------------------------------------------------------
def drive_model_spec(params: WorldParams, side: str = "right") -> mujoco.MjSpec:
    """The cell of ``params`` reduced to one arm and its hand, contacts off, with joint-position
    sensors: it moves exactly like that arm in the whole cell while nothing is touched."""
    spec = build_spec(params, params.objects[0].name)
    other = "left" if side == "right" else "right"
    for name in (f"{other}_base", "conveyor", "red_bin", "blue_bin", "object"):
        spec.delete(spec.body(name))
    for a in list(spec.actuators):
        if a.name.startswith(other + "_"):
            spec.delete(a)
    for e in list(spec.excludes):
        if e.bodyname1.startswith(other + "_"):
            spec.delete(e)
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    for name in arm_joint_names(side):
        spec.add_sensor(
            name=name, type=mujoco.mjtSensor.mjSENS_JOINTPOS, objtype=mujoco.mjtObj.mjOBJ_JOINT, objname=name
        )
    return spec


def _initial_state(model: mujoco.MjModel, run: DriveRun) -> np.ndarray:
    """Full physics state at the run's start: the encoders' position and velocity (a 2 ms forward
    difference: a run starts after a settle, but an arm creeping out of stiction has not quite
    stopped), targets (and their delay history) equal to the first command; the arm is the
    model's first 7 joints and actuators, the hand the next 20."""
    data = mujoco.MjData(model)
    data.qpos[:N] = run.q[0]
    k = min(len(run.t) - 1, max(1, int(round(0.002 / (run.t[1] - run.t[0])))))
    data.qvel[:N] = (run.q[k] - run.q[0]) / (run.t[k] - run.t[0])
    data.qpos[N : N + 20] = run.hand_q
    data.ctrl[:N] = run.q_cmd[0]
    data.ctrl[N : N + 20] = run.hand_q
    for a in range(N):
        nsample = int(model.actuator_history[a][0])
        if nsample > 0:
            mujoco.mj_initCtrlHistory(model, data, a, None, np.full((nsample, 1), float(run.q_cmd[0, a])))
    mujoco.mj_forward(model, data)
    state = np.empty(mujoco.mj_stateSize(model, _STATE))
    mujoco.mj_getState(model, data, state, _STATE)
    return state


def _grid(run: DriveRun, timestep: float) -> np.ndarray:
    """Indices of the run's samples on the simulator's step grid."""
    stride = int(round(timestep / (run.t[1] - run.t[0])))
    if stride < 1 or abs(stride * (run.t[1] - run.t[0]) - timestep) > 1e-9:
        raise R2S2RError(
            f"drive run: the record's sample period {run.t[1] - run.t[0]:.4g} s must divide the "
            f"simulator step {timestep:.4g} s"
        )
    return np.arange(0, len(run.t), stride)


def _controls(model: mujoco.MjModel, run: DriveRun, idx: np.ndarray) -> np.ndarray:
    ctrl = np.zeros((len(idx), model.nu))
    ctrl[:, :N] = run.q_cmd[idx]
    ctrl[:, N : N + 20] = run.hand_q
    return ctrl


def replay(model: mujoco.MjModel, runs: list[DriveRun]) -> list[np.ndarray]:
    """Replay each run's commands in ``model`` (a ``drive_model_spec`` model); the predicted arm
    positions (n, 7) at the run's samples on the simulator's step grid (``_grid``)."""
    out = []
    for run in runs:
        idx = _grid(run, model.opt.timestep)
        ctrl = _controls(model, run, idx)[:-1]
        state, _ = mj_rollout.rollout(model, mujoco.MjData(model), _initial_state(model, run), ctrl)
        out.append(np.vstack([run.q[0], state[0, :, 1 : 1 + N]]))
    return out


# --- identification -----------------------------------------------------------------------------
@dataclass(frozen=True)
class DriveFitConfig:
    """How the drive parameters are fitted. Bounds are multiples of the spec sheet (kp, kv,
    armature) or absolute (damping, friction, N m s/rad and N m). ``delay_span`` s: how far
    around the motion-onset estimate whole-timestep delays are tried."""

    physics: PhysicsParams = PhysicsParams()
    kp_bounds: tuple[float, float] = (0.4, 2.5)
    kv_bounds: tuple[float, float] = (0.2, 4.0)
    armature_bounds: tuple[float, float] = (0.5, 2.0)
    damping_max: float = 10.0
    friction_max: float = 5.0
    delay_span: float = 0.006
    max_iters: int = 12
    fd_eps: float = 1e-6
    xtol: float = 1e-4
    onset_threshold: float = 2e-4  # rad of motion that marks a step's response onset


def _joint_parameters(
    j: int, side: str, arm: ArmParams, free: tuple[str, ...], cfg: DriveFitConfig
) -> sysid.ParameterDict:
    """sysid parameters of joint ``j``'s drive, starting at ``arm``'s values."""
    jname = aname = arm_joint_names(side)[j]  # joint and actuator share the name
    nom_kp, nom_kv, nom_arm = rizon.KP[j], rizon.KV[j], ArmParams.__dataclass_fields__["armature"].default[j]

    def joint_attr(attr: str):
        return lambda spec, p: setattr(spec.joint(jname), attr, float(p.value[0]))

    def set_damping(spec: mujoco.MjSpec, p: sysid.Parameter) -> None:
        spec.joint(jname).damping[0] = float(p.value[0])  # linear term of MuJoCo's damping polynomial

    pd = sysid.ParameterDict()
    specs = [
        (
            "kp",
            arm.kp[j],
            nom_kp * cfg.kp_bounds[0],
            nom_kp * cfg.kp_bounds[1],
            lambda spec, p: sysid.apply_pgain(spec, aname, float(p.value[0])),
        ),
        (
            "kv",
            arm.kv[j],
            nom_kv * cfg.kv_bounds[0],
            nom_kv * cfg.kv_bounds[1],
            lambda spec, p: sysid.apply_dgain(spec, aname, float(p.value[0])),
        ),
        ("friction", arm.friction[j], 0.0, cfg.friction_max, joint_attr("frictionloss")),
        (
            "armature",
            arm.armature[j],
            nom_arm * cfg.armature_bounds[0],
            nom_arm * cfg.armature_bounds[1],
            joint_attr("armature"),
        ),
        ("damping", arm.damping[j], 0.0, cfg.damping_max, set_damping),
    ]
    for name, value, lo, hi, mod in specs:
        p = sysid.Parameter(
            f"{jname}_{name}", nominal=value, min_value=lo, max_value=hi, modifier=mod, frozen=name not in free
        )
        p.value = np.clip(p.value, lo, hi)
        pd.add(p)
    return pd


def _arm_values(arm: ArmParams, j: int, pd: sysid.ParameterDict, side: str) -> ArmParams:
    """``arm`` with joint ``j``'s drive values taken from ``pd``."""
    jname = arm_joint_names(side)[j]
    changes = {}
    for field in ("kp", "kv", "friction", "armature", "damping"):
        values = list(getattr(arm, field))
        values[j] = float(pd[f"{jname}_{field}"].value[0])
        changes[field] = tuple(values)
    return dataclasses.replace(arm, **changes)


def _fit_joint(
    params: WorldParams, side: str, j: int, runs: list[DriveRun], free: tuple[str, ...], cfg: DriveFitConfig
) -> ArmParams:
    """Fit joint ``j``'s drive to its runs with ``mujoco.sysid`` (Levenberg-Marquardt on the
    joint's position error), the other joints and the delay held at ``params``' values."""
    arm = getattr(params, f"{side}_arm")
    spec = drive_model_spec(params, side)
    model = spec.compile()
    names = [f"{n}_qpos" for n in arm_joint_names(side)]
    init, ctrl, meas = [], [], []
    for run in runs:
        idx = _grid(run, model.opt.timestep)
        ctrl.append(sysid.TimeSeries(run.t[idx], _controls(model, run, idx)))
        meas.append(sysid.TimeSeries.from_names(run.t[idx], run.q[idx], model, names))
        init.append(_initial_state(model, run))
    seqs = sysid.ModelSequences(names[j], spec, [f"{r.kind}{k}" for k, r in enumerate(runs)], init, ctrl, meas)
    residual_fn = sysid.build_residual_fn(
        models_sequences=[seqs],
        resample_true=False,
        enabled_observations=[(names[j], sysid.SignalType.MjStateQPos)],
        n_threads=2,
    )
    pd = _joint_parameters(j, side, arm, free, cfg)
    scale = np.array([rizon.KP[j], rizon.KV[j], 1.0, ArmParams.__dataclass_fields__["armature"].default[j], 1.0])
    free = [k for k, p in enumerate(pd.values()) if not p.frozen]
    fitted, _ = sysid.optimize(
        pd,
        residual_fn,
        optimizer="mujoco",
        verbose=False,
        max_iters=cfg.max_iters,
        eps=cfg.fd_eps,
        xtol=cfg.xtol,
        x_scale=scale[free],
        output=io.StringIO(),  # the mujoco backend prints every iteration otherwise
    )
    return _arm_values(arm, j, fitted, side)


def _onset_lags(
    runs: list[DriveRun], preds: list[np.ndarray] | None, timestep: float, cfg: DriveFitConfig
) -> np.ndarray:
    """Time from each command jump of an excited joint at rest to the first motion that departs
    from its pre-jump trend by ``cfg.onset_threshold`` rad (measured, or in ``preds``)."""
    lags = []
    for k, run in enumerate(runs):
        idx = _grid(run, timestep) if preds is not None else np.arange(len(run.t))
        t, c = run.t[idx], run.q_cmd[idx, run.joint]
        q = preds[k][:, run.joint] if preds is not None else run.q[:, run.joint]
        n = max(1, int(round(0.01 / (t[1] - t[0]))))
        for i in np.flatnonzero(np.abs(np.diff(c)) > 0.02) + 1:
            if i <= n:
                continue
            v = (q[i - 1] - q[i - 1 - n]) / n
            if abs(v) > 1e-3 * (t[1] - t[0]):  # still moving (faster than 1 mrad/s): no clean onset
                continue
            dev = np.abs(q[i - 1 :] - q[i - 1] - v * np.arange(len(q) - i + 1))
            moved = np.flatnonzero(dev > cfg.onset_threshold)
            if len(moved):
                lags.append(t[i - 1 + moved[0]] - t[i])
    return np.asarray(lags)


def estimate_delay(params: WorldParams, side: str, runs: list[DriveRun], cfg: DriveFitConfig) -> float:
    """Actuation delay (a whole number of simulator steps) under which the simulator's step
    responses start when the lab's do: the median onset lag of the records, matched against a
    replay at a reference delay."""
    lab_lags = _onset_lags(runs, None, 0.0, cfg)
    if len(lab_lags) < 3:
        raise R2S2RError(
            f"{side} arm drive records: {len(lab_lags)} step responses start from rest; at least 3 are needed"
        )
    ts = params.physics.timestep
    ref = 0.03
    arm = dataclasses.replace(getattr(params, f"{side}_arm"), delay=ref)
    model = drive_model_spec(params.replace(**{f"{side}_arm": arm}), side).compile()
    sim_lags = _onset_lags(runs, replay(model, runs), ts, cfg)
    delay = ref + float(np.median(lab_lags) - np.median(sim_lags))
    return float(np.clip(round(delay / ts) * ts, 0.0, 0.09))


# --- results ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArmDynamics:
    """Identified drive of one arm, per joint: PD gains ``kp`` (N m/rad) and ``kv`` (N m s/rad),
    passive ``damping`` (N m s/rad), dry ``friction`` (N m), ``armature`` (kg m^2); one actuation
    ``delay`` (s, a whole number of simulator steps)."""

    side: str
    kp: tuple[float, ...]
    kv: tuple[float, ...]
    damping: tuple[float, ...]
    friction: tuple[float, ...]
    armature: tuple[float, ...]
    delay: float

    @classmethod
    def of(cls, side: str, arm: ArmParams) -> ArmDynamics:
        return cls(side, arm.kp, arm.kv, arm.damping, arm.friction, arm.armature, arm.delay)

    def apply_to(self, params: WorldParams) -> WorldParams:
        """``params`` with this arm's drive fields replaced (kinematics and the other arm kept)."""
        arm = getattr(params, f"{self.side}_arm")
        fields = ("kp", "kv", "damping", "friction", "armature", "delay")
        return params.replace(**{f"{self.side}_arm": dataclasses.replace(arm, **{f: getattr(self, f) for f in fields})})


def tracking_rmse(params: WorldParams, records: list[DriveRun] | tuple[DriveRun, ...]) -> float:
    """Joint-tracking RMSE (rad, all 7 joints, every simulator step) of a simulator built from
    ``params`` (at its own physics settings) replaying the records' commands, against the lab's
    encoder readings."""
    if not records:
        raise R2S2RError("tracking_rmse: no drive records given; expected at least one DriveRun")
    side = records[0].side
    model = drive_model_spec(params, side).compile()
    preds = replay(model, list(records))
    err = np.concatenate([(p - r.q[_grid(r, model.opt.timestep)]).ravel() for p, r in zip(preds, records, strict=True)])
    return float(np.sqrt(np.mean(err**2)))


def drive_model_params(factory: KinematicCalibration, physics: PhysicsParams = PhysicsParams()) -> WorldParams:
    """The spec sheet with the factory kinematics of ``factory.side``'s arm, at ``physics``."""
    nominal = WorldParams.nominal()
    arm = getattr(nominal, f"{factory.side}_arm")
    arm = dataclasses.replace(
        arm, link_pos=factory.link_pos, flange_pos=factory.flange_pos, joint_zero=factory.joint_zero
    )
    return nominal.replace(**{f"{factory.side}_arm": arm, "physics": physics})


def fit_arm_dynamics(
    runs: list[DriveRun] | tuple[DriveRun, ...], factory: KinematicCalibration, cfg: DriveFitConfig = DriveFitConfig()
) -> ArmDynamics:
    """Fit the drive of ``factory.side``'s arm to excitation records (plain arrays: this also
    re-fits saved records). The delay comes from step-response onsets (``estimate_delay``);
    then each joint is fitted on its own runs with ``mujoco.sysid``, the others held: kp, kv
    and friction always; armature and damping only for joints with a saturating run, else their
    spec-sheet values (see the module docstring).
    """
    side = factory.side
    if not runs or any(r.side != side for r in runs):
        raise R2S2RError(f"{side} arm drive records: expected runs of the {side} arm, got {[r.side for r in runs]}")
    base = drive_model_params(factory, cfg.physics)
    arm = getattr(base, f"{side}_arm")
    arm = dataclasses.replace(arm, delay=estimate_delay(base, side, [r for r in runs if r.kind == "small"], cfg))
    for j in range(N):
        mine = [r for r in runs if r.joint == j]
        if not mine:
            raise R2S2RError(f"{side} arm drive records: no run excites joint {j + 1}; one per joint is needed")
        saturated = any(r.kind == "saturation" for r in mine)
        free = ("kp", "kv", "friction") + (("armature", "damping") if saturated else ())
        arm = _fit_joint(base.replace(**{f"{side}_arm": arm}), side, j, mine, free, cfg)
    return ArmDynamics.of(side, arm)


@dataclass(frozen=True)
class ArmCalibration:
    """Result of ``calibrate_arm``: the identified drive, the raw lab records it came from, and
    the joint-tracking RMSE (rad) on those records of the spec-sheet simulator
    (``WorldParams.nominal()``) and of the grounded one (``dynamics.apply_to`` the spec sheet with
    the factory kinematics)."""

    dynamics: ArmDynamics
    runs: tuple[DriveRun, ...]
    rmse_nominal: float
    rmse_grounded: float
    seconds: float


def calibrate_arm(
    lab: RealCell,
    side: str = "right",
    excitation: DriveExcitationConfig = DriveExcitationConfig(),
    fit: DriveFitConfig = DriveFitConfig(),
) -> ArmCalibration:
    """Excite each joint of ``side``'s arm on the lab (``excitation``), identify its drive
    (``fit_arm_dynamics``) and return the arm to ``excitation.pose``."""
    start = time.perf_counter()
    factory = lab.factory_calibration(side)
    runs = [run_excitation(lab, side, j, "small", *small_signal_targets(j, excitation), excitation) for j in range(N)]
    for j, step in excitation.saturation_steps:
        runs.append(run_excitation(lab, side, j, "saturation", *saturation_targets(step, excitation), excitation))
    lab.move_to(side, np.asarray(excitation.pose, float), 1.0)
    dyn = fit_arm_dynamics(runs, factory, fit)
    grounded = dyn.apply_to(drive_model_params(factory, fit.physics))
    return ArmCalibration(
        dynamics=dyn,
        runs=tuple(runs),
        rmse_nominal=tracking_rmse(WorldParams.nominal(), runs),
        rmse_grounded=tracking_rmse(grounded, runs),
        seconds=time.perf_counter() - start,
    )
