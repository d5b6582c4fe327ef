"""Executing action chunks: re-plan every k steps, and join overlapping chunks smoothly.

A chunk policy predicts H actions from the observation at step s (for steps s..s+H-1) and is
asked again every ``execute_steps`` = k steps, so with k < H several chunks cover each step.
``ChunkEnsemble`` executes their weighted mean, as ACT's temporal ensembling does: weights
exp(-m i), with i = 0 the *oldest* chunk covering the step (ACT's convention; m = ``decay`` > 0
favours older predictions, m < 0 newer, m = 0 is the plain mean). A new chunk then enters with its
share of the weight instead of replacing the old one outright, which shrinks the jump at a re-plan.
``decay=None`` executes the newest chunk alone (plain receding horizon). Evaluation defaults to
None: a flow policy *samples* its chunks, and averaging samples of different modes (grasp now,
grasp later) gave fewer successes on the lab than executing one (docs/benchmarks.md, "policy
learning"); with smooth demonstrations the plain re-plan jumps stay small.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.policy.protocol import ChunkPolicy, past_frame, with_past


def check_decay(decay: float | None) -> None:
    bad = isinstance(decay, bool) or not isinstance(decay, int | float) or not math.isfinite(decay)
    if decay is not None and bad:
        raise ConfigError(f"chunk ensembling decay: expected a finite number or None, got {decay!r}")


class ChunkEnsemble:
    """The action of each step from the chunks that cover it (one trial)."""

    def __init__(self, decay: float | None) -> None:
        check_decay(decay)
        self.decay = decay
        self._chunks: deque[tuple[int, np.ndarray]] = deque()  # (first step, (H, A) actions), oldest first

    def add(self, step: int, chunk: np.ndarray) -> None:
        """A chunk predicted from the observation of ``step``: its row j is the action of step + j."""
        self._chunks.append((step, np.asarray(chunk)))

    def action(self, step: int) -> np.ndarray:
        """The action to execute at ``step`` (float32); chunks that no longer cover it are dropped."""
        while self._chunks and step - self._chunks[0][0] >= len(self._chunks[0][1]):
            self._chunks.popleft()
        live = [c[step - s] for s, c in self._chunks if 0 <= step - s < len(c)]
        if not live:
            raise ConfigError(f"no chunk covers step {step}: predict a new chunk first")
        if self.decay is None or len(live) == 1:
            return np.asarray(live[-1], dtype=np.float32)
        w = np.exp(-self.decay * np.arange(len(live)))
        return (np.tensordot(w / w.sum(), np.stack(live).astype(np.float64), axes=1)).astype(np.float32)


class RecedingHorizon:
    """Feeds a batch of trials one action per control step: the policy predicts a chunk of H actions
    from the observation of every ``execute_steps``-th step; each step executes the ensemble of the
    chunks covering it (``decay``, see ``ChunkEnsemble``); a policy with ``past_frame`` d also gets
    the observation of d steps earlier (the first one before that). ``reset()`` (or a change of
    batch size) starts over."""

    def __init__(self, policy: ChunkPolicy, decay: float | None = None) -> None:
        check_decay(decay)
        self.policy, self.decay = policy, decay
        self.reset()

    def reset(self) -> None:
        self._ensembles: list[ChunkEnsemble] = []
        self._step = 0
        self._seen: dict[int, Mapping[str, np.ndarray]] = {}

    def act(self, obs: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """(B, 27) joint targets for this control step."""
        batch = len(obs["proprio"])
        if len(self._ensembles) != batch:
            self.reset()
            self._ensembles = [ChunkEnsemble(self.decay) for _ in range(batch)]
        d = past_frame(self.policy)
        if d:
            self._seen[self._step] = obs
            self._seen = {t: o for t, o in self._seen.items() if t >= self._step - d or t == 0}
        if self._step % self.policy.execute_steps == 0:
            given = with_past(obs, self._seen[max(self._step - d, 0)]) if d else obs
            for e, chunk in zip(self._ensembles, self.policy.predict_chunk(given, rng), strict=True):
                e.add(self._step, chunk)
        action = np.stack([e.action(self._step) for e in self._ensembles])
        self._step += 1
        return action
