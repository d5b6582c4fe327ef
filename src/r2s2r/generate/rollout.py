"""One simulated episode: a behaviour plans in a ``SimCell``, the cell executes, the judge admits.

A ``Behavior`` (MimicGen-style transformation of a real demonstration, or a grasp sampler with a
motion planner) sees the simulated cell openly (it is a simulator: its state is not hidden) and
returns an ``EpisodePlan`` for one condition; ``rollout`` steps the plan at the control rate,
records what a policy will be trained on (the observation at step t paired with the action sent
at step t, as for real demonstrations) and admits the episode only if the judge says the object
was picked and placed in its bin.

Recorded per frame: ``obs/<camera>`` (uint8), ``obs/proprio`` (27 joint positions, rad),
``actions`` (27 joint targets, rad), ``states`` (MuJoCo's full physics state, ``mj_getState`` with
``mjSTATE_FULLPHYSICS``: replaying it reproduces the frame), and MimicGen's ``datagen_info``:
``eef_pose`` (T_world_flange, 4x4), ``object_pose`` (T_world_object, 4x4), plus whatever the plan
adds per frame (``target_pose``, ``subtask_term_signals/<name>``, ``gripper_action``, ...).
Failure reasons: the judge's (``missed``, ``fell_off_belt``, ``dropped``, ``wrong_bin``,
``timeout``) or ``plan:<reason>`` when the behaviour could not produce a plan.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import mujoco
import numpy as np

from r2s2r.behavior.segments import grasp_yaw_symmetry
from r2s2r.data import Episode, Feature, Provenance, standard_features
from r2s2r.data.features import canonical_features
from r2s2r.data.object_state import (
    OBJECT_STATE,
    OBJECT_STATE_DIM,
    OBJECT_STATE_FEATURE,
    POSITION,
    SPEED,
    WHICH,
    YAW,
    one_hot,
    yaw_features,
)
from r2s2r.errors import PlanningFailed, R2S2RError
from r2s2r.geometry import inv_T, make_T
from r2s2r.world.cell import SimCell
from r2s2r.world.conditions import Condition

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
EEF_SITE = "right_flange_site"  # MimicGen's eef pose: T_world_flange


@runtime_checkable
class EpisodePlan(Protocol):
    """What a behaviour will do in one episode, step by step."""

    def act(self, cell: SimCell, step: int) -> np.ndarray | None:
        """The 27-D joint target for control step ``step`` (0-based), or None when the plan is
        finished (the rollout then holds the last action until the judge decides)."""

    def info(self, step: int) -> dict[str, Any]:
        """Per-frame ``datagen_info`` entries of the plan at ``step`` (arrays of a fixed shape
        per key; nested dicts allowed), e.g. ``target_pose`` and ``subtask_term_signals``."""


@runtime_checkable
class Behavior(Protocol):
    """A source of simulated behaviour. ``name`` is the provenance ``behavior`` it records."""

    name: str

    def plan(self, cell: SimCell, condition: Condition, rng: np.random.Generator) -> EpisodePlan:
        """Plan one episode in ``cell`` (already reset to ``condition``); raise ``PlanningFailed``
        when no plan exists. Every random draw comes from ``rng``."""


@dataclass(frozen=True, eq=False)
class RolloutResult:
    """One attempt: its outcome, and the recorded episode (for admitted attempts, or always when
    ``keep_failures``). ``source_demo``: the real demonstration the plan derived from, if any."""

    success: bool
    failure: str | None
    steps: int
    episode: Episode | None
    seconds: dict[str, float] = field(default_factory=dict)  # reset, plan, step (physics + render), record


def sim_features(cell: SimCell) -> tuple[Feature, ...]:
    """The dataset features of episodes recorded in ``cell``."""
    m = cell.engine.model
    feats = standard_features(
        state_dim=mujoco.mj_stateSize(m, STATE_SPEC),
        cameras=cell.config.cameras,
        image_size=(cell.config.image_size,) * 2,
    )
    return canonical_features([*feats, OBJECT_STATE_FEATURE])


def object_state(cell: SimCell, object_name: str) -> np.ndarray:
    """The simulator's truth of ``obs/object_state`` now (``r2s2r.data.object_state``; all known)."""
    c = cell.params.conveyor.pose
    T = inv_T(make_T(c.pos, c.quat)) @ cell.engine.object_pose()
    out = np.empty(OBJECT_STATE_DIM, dtype=np.float32)
    out[POSITION] = T[:3, 3]
    out[YAW] = yaw_features(math.atan2(T[1, 0], T[0, 0]), grasp_yaw_symmetry(object_name))
    out[SPEED] = cell.engine.belt_speed
    out[WHICH] = one_hot(object_name)
    return out


def _frame_info(cell: SimCell) -> dict[str, np.ndarray]:
    eng = cell.engine
    d = eng.data
    sid = eng.model.site(EEF_SITE).id
    T = np.eye(4)
    T[:3, :3] = d.site_xmat[sid].reshape(3, 3)
    T[:3, 3] = d.site_xpos[sid]
    return {"eef_pose": T, "object_pose": eng.object_pose()}


def _stack(frames: list[dict[str, Any]]) -> dict[str, Any]:
    """List of per-frame (nested) dicts -> dict of stacked arrays (T, ...)."""
    out: dict[str, Any] = {}
    for k in frames[0]:
        v = frames[0][k]
        if isinstance(v, dict):
            out[k] = _stack([f[k] for f in frames])
        else:
            out[k] = np.asarray([f[k] for f in frames])
    return out


def rollout(
    cell: SimCell,
    behavior: Behavior,
    condition: Condition,
    rng: np.random.Generator,
    provenance: dict[str, Any],
    keep_failures: bool = False,
    on_frame=None,
) -> RolloutResult:
    """Reset ``cell`` to ``condition``, plan with ``behavior`` and execute until the judge decides.

    ``rng`` drives the plan and the cell's sensor noise (separate streams spawned from it).
    ``provenance``: fields for the episode's ``Provenance`` besides those the rollout knows
    (``source``, ``behavior``, ``world_hash``, ``condition``, ``success``, ``failure``); typically
    ``seed`` and ``key``, and ``source_demo`` for behaviours that derive from a demonstration
    (a plan may also expose ``source_demo``). ``on_frame(cell, step)`` is called after each
    observation (e.g. to render a video frame).
    """
    plan_rng, noise_rng = (np.random.default_rng(s) for s in rng.bit_generator.seed_seq.spawn(2))
    times = {"reset": 0.0, "plan": 0.0, "step": 0.0, "record": 0.0}
    t0 = time.perf_counter()
    obs = cell.reset(condition, noise_rng)
    t1 = time.perf_counter()
    times["reset"] = t1 - t0
    try:
        plan = behavior.plan(cell, condition, plan_rng)
    except PlanningFailed as e:
        times["plan"] = time.perf_counter() - t1
        return RolloutResult(False, f"plan:{e.reason}", 0, None, times)
    times["plan"] = time.perf_counter() - t1
    m = cell.engine.model
    state = np.empty(mujoco.mj_stateSize(m, STATE_SPEC))
    frames: dict[str, list[np.ndarray]] = {k: [] for k in obs}
    actions, states, infos, objects = [], [], [], []
    action, step, verdict = None, 0, cell.verdict
    while not verdict.done:
        t1 = time.perf_counter()
        nxt = plan.act(cell, step)
        if nxt is not None:
            action = np.asarray(nxt, dtype=np.float32)  # stored as sent: replays repeat the episode
        elif action is None:
            raise R2S2RError(f"{behavior.name}: the plan gave no first action")
        for k, v in obs.items():
            frames[k].append(v)
        mujoco.mj_getState(m, cell.engine.data, state, STATE_SPEC)
        states.append(state.copy())
        infos.append(_frame_info(cell) | plan.info(step))
        objects.append(object_state(cell, condition.object))
        actions.append(action)
        t2 = time.perf_counter()
        obs, verdict = cell.step(action)
        t3 = time.perf_counter()
        if on_frame is not None:
            on_frame(cell, step)
        times["record"] += t2 - t1
        times["step"] += t3 - t2
        step += 1
    episode = None
    if verdict.success or keep_failures:
        t4 = time.perf_counter()
        proprio = np.asarray(frames.pop("proprio"), dtype=np.float32)
        extra = dict(provenance)
        if "source_demo" not in extra and getattr(plan, "source_demo", None) is not None:
            extra["source_demo"] = int(plan.source_demo)
        episode = Episode(
            obs={
                **{k: np.asarray(v, dtype=np.uint8) for k, v in frames.items()},
                "proprio": proprio,
                OBJECT_STATE: np.asarray(objects, dtype=np.float32),
            },
            actions=np.asarray(actions, dtype=np.float32),
            states=np.asarray(states, dtype=np.float64),
            provenance=Provenance(
                source="sim",
                world_hash=cell.params.content_hash(),
                behavior=behavior.name,
                condition=dataclasses.asdict(condition),
                success=verdict.success,
                failure=verdict.failure,
                **extra,
            ),
            datagen_info=_stack(infos),
        )
        times["record"] += time.perf_counter() - t4
    return RolloutResult(verdict.success, verdict.failure, step, episode, times)
