"""``RecedingHorizon``: one action per control step from a ``ChunkPolicy`` (execute k, then re-plan)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from r2s2r.policy.protocol import ChunkPolicy


class RecedingHorizon:
    """Feeds a batch of trials one action per control step: the policy predicts a chunk of H actions,
    the first ``execute_steps`` are executed one per ``act`` call, then it predicts again from the
    observation of that step. ``reset()`` (or a change of batch size) starts a new chunk."""

    def __init__(self, policy: ChunkPolicy) -> None:
        self.policy = policy
        self._chunk: np.ndarray | None = None
        self._next = 0

    def reset(self) -> None:
        self._chunk, self._next = None, 0

    def act(self, obs: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """(B, 27) joint targets for this control step."""
        batch = len(obs["proprio"])
        if self._chunk is None or self._next >= self.policy.execute_steps or len(self._chunk) != batch:
            self._chunk, self._next = self.policy.predict_chunk(obs, rng), 0
        action = self._chunk[:, self._next]
        self._next += 1
        return action
