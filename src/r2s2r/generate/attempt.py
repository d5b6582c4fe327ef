"""One generation attempt, run by a worker: a condition from the mix, a behaviour's plan, a rollout.

Attempt ``key`` of a run with seed ``s`` draws everything (condition, plan, sensor noise) from
``numpy.random.default_rng([s, key])`` only: the episode does not depend on which worker ran it,
on what that worker ran before, or on the executor. A ``GenerationSpec`` is what a worker needs to
build its own simulated cell and behaviour; it is plain data (picklable) so process pools and Ray
actors can receive it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from r2s2r.data import Episode
from r2s2r.generate.mix import ConditionMix
from r2s2r.generate.rollout import Behavior, rollout
from r2s2r.world.cell import CellConfig, SimCell
from r2s2r.world.params import WorldParams


@dataclass(frozen=True)
class BehaviorInputs:
    """What a behaviour factory may use: the simulated world and the real demonstrations; ``shared``,
    a folder the run's workers share to prepare what they all need once (``r2s2r.shared_work``)."""

    world: WorldParams
    demos: Path | None = None  # dataset folder of the real demonstrations
    shared: Path | None = None  # set by ``generate`` for its workers; None: each worker prepares its own


@dataclass(frozen=True)
class GenerationSpec:
    """Everything a worker needs: the world, the behaviour factory, the cell config, the mix."""

    inputs: BehaviorInputs
    factory: Callable[[BehaviorInputs], Behavior]  # a module-level function (picklable)
    cell: CellConfig = CellConfig()
    mix: ConditionMix = ConditionMix()
    seed: int = 0


@dataclass(frozen=True, eq=False)
class AttemptRecord:
    """The outcome of attempt ``key``; ``episode`` only for admitted attempts."""

    key: int
    success: bool
    failure: str | None
    steps: int
    seconds: dict[str, float] = field(default_factory=dict)  # reset, plan, step (physics + render), record
    episode: Episode | None = None
    worker: int = 0  # pid of the process that ran it (for the statistics, not the data)

    def log_entry(self) -> dict:
        """The attempt's line in ``attempts.jsonl`` (no episode data)."""
        return {
            "key": self.key,
            "success": self.success,
            "failure": self.failure,
            "steps": self.steps,
            "seconds": {k: round(v, 6) for k, v in self.seconds.items()},
            "worker": self.worker,
        }


class Worker:
    """A simulated cell and a behaviour, built once per worker and reused for every attempt."""

    def __init__(self, spec: GenerationSpec) -> None:
        self.spec = spec
        self.behavior = spec.factory(spec.inputs)
        self.cell = SimCell(spec.inputs.world, spec.cell)

    def run(self, key: int) -> AttemptRecord:
        rng = np.random.default_rng([self.spec.seed, key])
        cond_rng, run_rng = (np.random.default_rng(s) for s in rng.bit_generator.seed_seq.spawn(2))
        condition = self.spec.mix.sample(cond_rng)
        res = rollout(self.cell, self.behavior, condition, run_rng, {"seed": self.spec.seed, "key": key})
        return AttemptRecord(key, res.success, res.failure, res.steps, res.seconds, res.episode, os.getpid())

    def close(self) -> None:
        self.cell.close()
