"""Collecting real demonstrations: a teleoperator drives a ``RealCell``; successful attempts are kept.

Attempt ``k`` of a collection with seed ``s`` draws its condition and the operator's variability
from ``(s, k)`` only, so a collection is reproducible and resumes without loss or duplicates:
the dataset stores successful attempts under key ``k``, and a rerun continues after the last one.
Demonstrations only use nominal conditions. Episodes pair the observation at step t with the
action of step t as it reached the robot (``RealCell.last_command``: after the safety filter, which
the teleoperation system's own rate and range limits keep from changing anything). With a
``Perturbation`` (DART, ``r2s2r.behavior.perturb``) the robot is sent the command plus a small
drifting offset and the action recorded is the operator's command: the way back to the path. For real data
``states`` is the proprioception (no simulator state exists).
Each demonstration also keeps its first frame's full-resolution head stereo pair as episode extras
(``STEREO_EXTRAS``: the head cameras' frames captured right after the reset, before any action, or at
the takeover of a ``Takeover`` attempt: ``r2s2r.behavior.takeover``), for estimating the object's
initial pose from images.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from r2s2r.behavior.perturb import ArmPerturber, Perturbation
from r2s2r.behavior.takeover import TAKEOVER_BEHAVIOR, Takeover, drive
from r2s2r.behavior.teleop import Operator, OperatorConfig
from r2s2r.data import DatasetWriter, Episode, Provenance, standard_features
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.lab.real_cell import RealCell
from r2s2r.policy.protocol import ChunkPolicy
from r2s2r.world.cell import CellConfig
from r2s2r.world.conditions import sample_condition
from r2s2r.world.params import WorldParams

HEAD_STEREO = ("head_left", "head_right")
STEREO_EXTRAS = {cam: f"{cam}_full" for cam in HEAD_STEREO}  # camera -> extras key
APPROACH = ("wait", "reach")  # operator phases a perturbation acts in (it fades out from the descent)
_PERTURB_SALT = 0xDA27  # separates the perturbation's draws from the attempt's


@dataclass(frozen=True)
class DemoConfig:
    n: int = 100  # successful demonstrations wanted
    seed: int = 0  # collection seed: attempt k draws from (seed, k)
    max_attempts: int | None = None  # give up after this many attempts (default 4 n)
    workers: int = 1  # lab processes collecting in parallel (each a copy of the same lab twin)
    operator: OperatorConfig = OperatorConfig()
    perturb: Perturbation | None = None  # DART noise on the sent arm targets (None: the clean commands are sent)
    takeover: Takeover | None = None  # a policy drives some attempts first; the operator's correction is kept

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"demos: --n expected >= 1, got {self.n}")
        if self.workers < 1:
            raise ConfigError(f"demos: --workers expected >= 1, got {self.workers}")
        if self.max_attempts is not None and self.max_attempts < self.n:
            raise ConfigError(f"demos: --max-attempts expected >= --n ({self.n}), got {self.max_attempts}")


@dataclass(frozen=True)
class Attempt:
    key: int
    success: bool
    failure: str | None
    steps: int
    episode: Episode | None  # only for successes
    safety: dict[str, int] = dataclasses.field(default_factory=dict)  # safety-filter interventions in it


@dataclass(frozen=True)
class DemoStats:
    demos: int
    attempts: int
    wall_time: float
    failures: dict[str, int]
    safety: dict[str, int] = dataclasses.field(default_factory=dict)  # safety-filter interventions, all attempts

    @property
    def success_rate(self) -> float:
        return self.demos / max(self.attempts, 1)


def run_attempt(
    lab: RealCell,
    operator: Operator,
    seed: int,
    key: int,
    perturb: Perturbation | None = None,
    takeover: tuple[Takeover, ChunkPolicy] | None = None,
) -> Attempt:
    """One teleoperated attempt; records the episode of a success."""
    rng = np.random.default_rng([seed, key])
    cond = sample_condition("nominal", rng)
    trial_seed = int(rng.integers(2**31))
    obs = lab.reset(cond, seed=trial_seed)
    at = None
    if takeover is not None:
        at, policy_rng = takeover[0].draw(seed, key)
        if at is not None:
            obs = drive(lab, takeover[1], obs, at, policy_rng)
            if obs is None:  # the policy ended the trial (e.g. a success) before the operator took over
                return Attempt(key, False, "ended_before_takeover", 0, None)
    stereo = {key: lab.capture(cam) for cam, key in STEREO_EXTRAS.items()}
    operator.start(lab.read_encoders("right")[:7], rng)
    send = None
    if perturb is not None:  # its own stream: the condition and the operator draw as without it
        noise = np.random.default_rng([seed, key, _PERTURB_SALT])
        start = lab.last_command("right")
        send = ArmPerturber(perturb, lab.control_dt, noise, operator.arm_lo, operator.arm_hi, operator.max_step, start)
    filtered = lab.safety_report()
    frames: dict[str, list[np.ndarray]] = {k: [] for k in obs}
    actions = []
    while not lab.verdict().done:
        action = operator.act(lab.human_view(), lab.time).astype(np.float32)
        for k, v in obs.items():
            frames[k].append(v)
        obs = lab.act(action if send is None else send(action, operator.phase in APPROACH))
        # the operator's command as it reached the robot (float32 as sent, so a replay repeats the
        # trial); with a perturbation the robot got it plus the offset, and the label stays the command
        actions.append(lab.last_command("right").astype(np.float32) if send is None else action)
    verdict = lab.verdict()
    after = lab.safety_report()
    safety = {k: after[k] - filtered.get(k, 0) for k in after if after[k] != filtered.get(k, 0)}
    if not verdict.success:
        return Attempt(key, False, verdict.failure, len(actions), None, safety)
    proprio = np.asarray(frames.pop("proprio"), dtype=np.float32)
    episode = Episode(
        obs={**{k: np.asarray(v, dtype=np.uint8) for k, v in frames.items()}, "proprio": proprio},
        actions=np.asarray(actions, dtype=np.float32),
        states=proprio.astype(np.float64),
        provenance=Provenance(
            source="real",
            world_hash=f"real:{lab!r}",
            behavior="teleop" if at is None else TAKEOVER_BEHAVIOR,
            seed=trial_seed,  # the seed the lab trial was reset with: replaying needs it
            condition=dataclasses.asdict(cond),
            key=key,
        ),
        extras=stereo,
    )
    return Attempt(key, True, None, len(actions), episode, safety)


def make_operator(lab: RealCell, config: OperatorConfig) -> Operator:
    """The teleoperator at ``lab``'s station (it maps tracker poses to the robot base with the
    cell's drawing and solves IK on the robot's factory kinematics)."""
    config = dataclasses.replace(config, control_dt=lab.control_dt)
    return Operator(lab.factory_calibration("right"), WorldParams.nominal().right_arm.base, config)


def _takeover_policy(takeover: Takeover | None, lab: RealCell) -> tuple[Takeover, ChunkPolicy] | None:
    """The takeover with its policy loaded (one torch thread: attempts run in parallel processes);
    ConfigError when the policy looks at cameras or an image size ``lab`` does not record."""
    if takeover is None:
        return None
    import torch

    from r2s2r.policy.checkpoint import load_policy

    torch.set_num_threads(1)
    policy = load_policy(takeover.policy)
    if not set(policy.cameras) <= set(lab.policy_cameras) or policy.image_size != lab.image_size:
        raise ConfigError(
            f"takeover policy {takeover.policy}: it sees {policy.cameras} at {policy.image_size} px; "
            f"the collection records {lab.policy_cameras} at {lab.image_size} px (--image-size)"
        )
    return takeover, policy


_WORKER: dict = {}  # per worker process: its own lab and operator (never shared across processes)


def _worker_init(lab_seed: int, cell: CellConfig, config: DemoConfig) -> None:
    from r2s2r.lab.twin import LabTwin
    from r2s2r.orphans import exit_with_parent

    exit_with_parent()

    lab = LabTwin(lab_seed, cell)
    _WORKER["lab"], _WORKER["op"], _WORKER["config"] = lab, make_operator(lab, config.operator), config
    _WORKER["takeover"] = _takeover_policy(config.takeover, lab)


def _worker_attempt(seed: int, key: int) -> Attempt:
    config = _WORKER["config"]
    return run_attempt(_WORKER["lab"], _WORKER["op"], seed, key, config.perturb, _WORKER["takeover"])


def collect_demos(
    lab: RealCell,
    out: Path,
    config: DemoConfig,
    lab_seed: int | None = None,
    on_attempt: Callable[[Attempt, int, int], None] | None = None,
) -> DemoStats:
    """Collect ``config.n`` successful demonstrations into the dataset at ``out`` (resumes).

    With ``workers > 1`` the attempts run in lab-twin processes built from ``lab_seed``; results
    are committed in attempt order, so the dataset is the same whatever the scheduling.
    """
    max_attempts = config.max_attempts or 4 * config.n
    features = standard_features(state_dim=27, cameras=lab.policy_cameras, image_size=(lab.image_size,) * 2)
    info = {"kind": "teleop demonstrations", "lab": repr(lab), "seed": config.seed}
    if config.perturb is not None:
        info["perturb"] = dataclasses.asdict(config.perturb)
    if config.takeover is not None:
        info["takeover"] = {**dataclasses.asdict(config.takeover), "policy": str(config.takeover.policy)}
    takeover = _takeover_policy(config.takeover, lab)  # a bad checkpoint fails here, before any attempt
    t0 = time.perf_counter()
    failures: dict[str, int] = {}
    safety: dict[str, int] = {}
    with DatasetWriter(out, features, control_rate_hz=round(1.0 / lab.control_dt, 6), info=info) as writer:
        done = sorted(writer.keys())
        demos = len(done)
        next_key = done[-1] + 1 if done else 0
        attempts = next_key
        if demos >= config.n:
            return DemoStats(demos, attempts, 0.0, failures, safety)
        last_success = done[-1] if done else -1

        def commit(a: Attempt) -> bool:
            nonlocal demos, attempts, last_success
            attempts += 1
            for k, v in a.safety.items():
                safety[k] = safety.get(k, 0) + v
            if a.success:
                ep = a.episode
                writer.add(
                    dataclasses.replace(
                        ep, provenance=dataclasses.replace(ep.provenance, attempts=a.key - last_success)
                    )
                )
                last_success = a.key
                demos += 1
            else:
                failures[a.failure] = failures.get(a.failure, 0) + 1
            if on_attempt is not None:
                on_attempt(a, demos, attempts)
            return demos >= config.n

        if config.workers == 1:
            operator = make_operator(lab, config.operator)
            for key in range(next_key, max_attempts):
                if commit(run_attempt(lab, operator, config.seed, key, config.perturb, takeover)):
                    break
        else:
            if lab_seed is None:
                raise ConfigError("collect_demos: workers > 1 needs the lab twin's seed to start worker labs")
            cell = CellConfig(image_size=lab.image_size, cameras=lab.policy_cameras)
            ctx = multiprocessing.get_context("spawn")
            init = (lab_seed, cell, config)
            with cf.ProcessPoolExecutor(config.workers, ctx, _worker_init, init) as pool:
                pending: dict[int, cf.Future] = {}
                key, finished = next_key, False
                while not finished and (pending or key < max_attempts):
                    while len(pending) < 2 * config.workers and key < max_attempts:
                        pending[key] = pool.submit(_worker_attempt, config.seed, key)
                        key += 1
                    first = min(pending)
                    finished = commit(pending.pop(first).result())
                for f in pending.values():
                    f.cancel()
    if demos < config.n:
        raise R2S2RError(
            f"demos: only {demos} of {config.n} demonstrations succeeded in {attempts} attempts "
            f"(limit {max_attempts}); check the cell or raise --max-attempts"
        )
    return DemoStats(demos, attempts, time.perf_counter() - t0, failures, safety)
