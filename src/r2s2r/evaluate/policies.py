"""What evaluation can run: batched chunk policies and per-trial controllers.

Two kinds of policy are evaluable:

- a ``ChunkPolicy`` (``r2s2r.policy.protocol``): sees only the policy cameras and proprio, and is
  run batched across every running trial (one ``predict_chunk`` per control step for all trials
  that need a new chunk), in the evaluating process;
- a ``TrialPolicy``: any callable policy. ``begin(lab, rng)`` returns the trial's step function
  ``obs -> action`` (27 joint targets), which runs next to the lab (in the lab's worker process,
  so a ``TrialPolicy`` must pickle). The teleop operator is one: ``ScriptedOperator`` drives the
  lab as a person does, from ``RealCell.human_view`` — a scripted reference, not a learned policy.

``resolve_policy`` turns the CLI's ``--policy`` into one of them: ``scripted``, ``random`` or a
checkpoint directory (loaded with ``r2s2r.policy.load_policy``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.lab.real_cell import TrialCell
from r2s2r.policy.protocol import ChunkPolicy
from r2s2r.world import rizon
from r2s2r.world.cell import POLICY_CAMERAS
from r2s2r.world.hand import hand_joint_ranges

if TYPE_CHECKING:  # the operator (and its IK, mink) loads only when a scripted trial begins
    from r2s2r.behavior.teleop import OperatorConfig

StepFn = Callable[[Mapping[str, np.ndarray]], np.ndarray]


@runtime_checkable
class TrialPolicy(Protocol):
    """A policy that runs one trial at a time next to the lab."""

    cameras: tuple[str, ...]  # policy cameras the lab should observe (may be empty)
    image_size: int

    def begin(self, lab: TrialCell, rng: np.random.Generator) -> StepFn:
        """Start a trial on ``lab`` (just reset; the lab twin or a simulated cell behind the lab's
        interface); returns the function giving each step's action."""


@dataclass(frozen=True)
class ScriptedOperator:
    """The teleop operator (``r2s2r.behavior.teleop.Operator``) as a policy: it watches the cell as a
    person does and needs no policy camera."""

    config: OperatorConfig | None = None  # None: the default ``OperatorConfig``
    cameras: tuple[str, ...] = ()
    image_size: int = 96

    def begin(self, lab: TrialCell, rng: np.random.Generator) -> StepFn:
        from r2s2r.behavior.demos import make_operator
        from r2s2r.behavior.teleop import OperatorConfig

        operator = make_operator(lab, self.config or OperatorConfig())
        operator.start(lab.read_encoders("right")[:7], rng)

        def step(_obs: Mapping[str, np.ndarray]) -> np.ndarray:
            view = lab.human_view()
            return operator.act(view, view.time).astype(np.float32)  # as demonstrations are sent

        return step


def joint_target_ranges() -> np.ndarray:
    """(27, 2) ranges of a right-side action: 7 arm joints then 20 hand joints, rad."""
    return np.vstack([rizon.JOINT_RANGE, hand_joint_ranges()])


@dataclass(frozen=True)
class RandomPolicy:
    """Uniformly random joint targets (arm and hand), independently per action: the chance floor.
    It looks at the standard policy cameras (like a trained policy would) and ignores them."""

    cameras: tuple[str, ...] = POLICY_CAMERAS
    image_size: int = 96
    action_horizon: int = 8
    execute_steps: int = 8

    def predict_chunk(self, obs: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        batch = len(obs["proprio"])
        lo, hi = joint_target_ranges().T
        return rng.uniform(lo, hi, size=(batch, self.action_horizon, len(lo))).astype(np.float32)


@dataclass(frozen=True)
class HoldStill:
    """Holds the joints where they are (every action repeats the current joint positions): the
    baseline a learned policy's open-loop error is measured against, run in closed loop. It looks at
    one small camera (the lab renders it, as it would for a policy) and ignores it."""

    cameras: tuple[str, ...] = POLICY_CAMERAS[:1]
    image_size: int = 16
    action_horizon: int = 8
    execute_steps: int = 8

    def predict_chunk(self, obs: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        q = np.asarray(obs["proprio"], dtype=np.float32)
        return np.repeat(q[:, None], self.action_horizon, axis=1)


Policy = ChunkPolicy | TrialPolicy


def policy_kind(policy: object) -> str:
    """``"chunk"`` for a ``ChunkPolicy``, ``"trial"`` for a ``TrialPolicy``; anything else raises."""
    if isinstance(policy, ChunkPolicy):
        h, k = policy.action_horizon, policy.execute_steps
        if not (isinstance(h, int) and isinstance(k, int) and 1 <= k <= h):
            raise ConfigError(f"policy {policy!r}: expected 1 <= execute_steps <= action_horizon, got {k}, {h}")
        return "chunk"
    if isinstance(policy, TrialPolicy):
        return "trial"
    raise ConfigError(
        f"policy: expected a ChunkPolicy (predict_chunk) or a TrialPolicy (begin), got {type(policy).__name__}"
    )


def resolve_policy(spec: str) -> Policy:
    """``scripted`` (the teleop operator), ``random``, ``hold`` (hold still), or a checkpoint directory."""
    if spec == "scripted":
        return ScriptedOperator()
    if spec == "random":
        return RandomPolicy()
    if spec == "hold":
        return HoldStill()
    path = Path(spec)
    if not path.is_dir():
        raise R2S2RError(f"--policy: expected 'scripted', 'random', 'hold' or a checkpoint directory, got {spec!r}")
    from r2s2r.policy import load_policy

    return load_policy(path)
