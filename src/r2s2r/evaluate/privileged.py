"""The privileged-state diagnostic: the study's flow-matching chunk policy fed the object's state, not images.

A rung of the diagnosis ladder (``benchmarks/policy_learning.py``), **never a study policy**: it reads
``RealCell.human_view`` (what the teleoperator sees: the object's pose to about a centimetre, the belt
speed to about ten percent, which object it is), the way the scripted operator does. It answers one
question: given the object's state, do the flow head, its action representation and the receding
horizon do the task? If they do, what the image policy misses is perception.

- ``state_features``: a ``HumanView`` as a vector (``STATE_DIM``).
- ``write_state_dataset``: the real demonstrations with that vector appended to each frame's proprio
  and no cameras. The features are recovered by *replaying* each demonstration on the lab it was
  recorded on: the lab is reset with the episode's condition and seed and driven by its recorded
  commands (the ones that reached the robot), and the operator's view is read at every step as it was
  during the collection. The replay is checked against the recorded proprioception.
- ``STATE_PRESET``: the ``cpu`` preset's transformer and training without cameras.
- ``PrivilegedPolicy``: a trial policy running a trained state policy next to the lab.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from r2s2r.data import Episode, standard_features
from r2s2r.data.derive import derive_dataset
from r2s2r.errors import R2S2RError
from r2s2r.lab.real_cell import HumanView, RealCell
from r2s2r.lab.shaping import CommandShaper
from r2s2r.policy.config import PolicyConfig
from r2s2r.train.config import Preset
from r2s2r.train.presets import get_preset
from r2s2r.world.conditions import Condition
from r2s2r.world.objects import KNOWN_OBJECTS

# object position (3, world, m), yaw as cos/sin, belt speed (m/s), which known object (one-hot)
STATE_DIM = 3 + 2 + 1 + len(KNOWN_OBJECTS)
PROPRIO_DIM = 27
REPLAY_TOLERANCE = 1e-4  # rad: largest difference between replayed and recorded joint positions


def state_features(view: HumanView) -> np.ndarray:
    """(STATE_DIM,) float32: what the operator sees of the trial."""
    which = np.zeros(len(KNOWN_OBJECTS), dtype=np.float32)
    if view.object_name in KNOWN_OBJECTS:  # a novel object: all zeros
        which[KNOWN_OBJECTS.index(view.object_name)] = 1.0
    yaw = np.array([np.cos(view.object_yaw), np.sin(view.object_yaw)])
    return np.concatenate([view.object_pos, yaw, [view.belt_speed], which]).astype(np.float32)


def _state_config() -> PolicyConfig:
    cpu = get_preset("cpu").policy
    return dataclasses.replace(
        cpu,
        cameras=(),
        proprio_dim=PROPRIO_DIM + STATE_DIM,
        past_frame=0,
        past_cameras=None,
        keypoints=0,
        object_state=0.0,
    )


# 18,000 steps (20 min on 2 cores): lab 0's 48 nominal trials 29/48 at 3,000 steps, 32/48 at 9,000,
# 40/48 at 18,000, while the held-out error hardly moved (0.053 -> 0.047 rad; docs/benchmarks.md, 2026-12-06
# sixth session): closed-loop success keeps improving long after the open-loop error flattens
STATE_STEPS = 18000
STATE_PRESET = Preset(
    _state_config(),
    dataclasses.replace(get_preset("cpu").train, steps=STATE_STEPS),
    "diagnostic: object state + proprio, no cameras",
)


def replay_states(lab: RealCell, episode: Episode, where: str) -> np.ndarray:
    """(T, STATE_DIM) operator views of ``episode``, replayed on ``lab`` (reset with its condition and
    seed, driven by its recorded commands). Raises R2S2RError when the replay departs from the
    recorded joint positions (another lab, or not a teleoperated demonstration)."""
    prov = episode.provenance
    if not prov.condition:
        raise R2S2RError(f"{where}: no trial condition in its provenance; only lab demonstrations can be replayed")
    cond = dict(prov.condition)
    cond["light_tint"] = tuple(cond.get("light_tint", (1.0, 1.0, 1.0)))
    obs = lab.reset(Condition(**cond), seed=prov.seed)
    recorded = np.asarray(episode.obs["proprio"])
    states = []
    for t, action in enumerate(np.asarray(episode.actions)):
        gap = float(np.abs(obs["proprio"] - recorded[t]).max())
        if gap > REPLAY_TOLERANCE:
            raise R2S2RError(
                f"{where}: the replay on {lab!r} departs from the recorded joints by {gap:.2g} rad at step {t} "
                f"(expected <= {REPLAY_TOLERANCE}); was it recorded on this lab?"
            )
        states.append(state_features(lab.human_view()))
        obs = lab.act(action)
    return np.asarray(states, dtype=np.float32)


def write_state_dataset(
    demos: Path, out: Path, lab: RealCell, on_episode: Callable[[int, int], None] | None = None
) -> Path:
    """The demonstrations at ``demos`` with the operator's view appended to proprio, into ``out``
    (resumes: episodes already there are kept). ``lab`` must observe no camera."""
    if lab.policy_cameras:
        raise R2S2RError(f"write_state_dataset: the replay lab renders {lab.policy_cameras}; give it no cameras")
    features = standard_features(state_dim=PROPRIO_DIM, cameras=(), proprio_dim=PROPRIO_DIM + STATE_DIM)

    def with_states(i: int, ep: Episode) -> Episode:
        states = replay_states(lab, ep, f"{demos} episode {i}")
        proprio = np.concatenate([ep.obs["proprio"], states], axis=1).astype(np.float32)
        return Episode({"proprio": proprio}, ep.actions, ep.states, ep.provenance)

    info = {"kind": "privileged-state diagnostic", "demos": str(demos), "lab": repr(lab)}
    return derive_dataset(demos, out, lambda _: features, with_states, info, on_episode)


@dataclass(frozen=True)
class PrivilegedPolicy:
    """A trained state policy (``STATE_PRESET``) as a trial policy: every ``execute_steps`` steps it
    predicts a chunk from the joints and the operator's view of the lab."""

    run: Path  # a training run folder (its best checkpoint) or a checkpoint folder
    cameras: tuple[str, ...] = ()
    image_size: int = 48  # unused: the lab renders no camera for it
    execute_steps: int | None = None  # actions run per chunk before re-planning (None: the trained policy's)
    _policy: list = dataclasses.field(default_factory=list, compare=False, repr=False)  # loaded once per process

    def begin(self, lab: RealCell, rng: np.random.Generator) -> Callable[[Mapping[str, np.ndarray]], np.ndarray]:
        from r2s2r.policy.checkpoint import load_policy

        if not self._policy:
            loaded = load_policy(self.run)
            self._policy.append(loaded if self.execute_steps is None else loaded.replanning_every(self.execute_steps))
        policy = self._policy[0]
        if policy.config.proprio_dim != PROPRIO_DIM + STATE_DIM or policy.cameras:
            raise R2S2RError(f"{self.run}: not a privileged-state policy (train it with STATE_PRESET)")
        k, step, chunk = policy.execute_steps, 0, None
        shaper = CommandShaper(lab.control_dt)  # as evaluation shapes an image policy's commands

        def act(obs: Mapping[str, np.ndarray]) -> np.ndarray:
            nonlocal step, chunk
            if step % k == 0:
                x = np.concatenate([obs["proprio"], state_features(lab.human_view())]).astype(np.float32)
                chunk = policy.predict_chunk({"proprio": x[None]}, rng)[0]
            action, _ = shaper.shape(lab.last_command("right"), chunk[step % k])
            step += 1
            return action

        return act
