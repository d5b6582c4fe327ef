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

Inpainting (real-time chunking, Black, Galliker and Levine 2025) joins chunks without averaging
samples: the new chunk is *sampled* toward the rows of the old one it overlaps (``inpaint_weights``,
guided flow sampling in ``r2s2r.policy.flow``), so a re-plan keeps the old chunk's mode (the same
grasp, the same carry) while its later rows use the newer observation.
"""

from __future__ import annotations

import inspect
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


def takes_guide(policy: ChunkPolicy) -> bool:
    """Whether ``policy.predict_chunk`` takes a ``guide`` (can be inpainted; a checkpoint's ``Policy`` does)."""
    return "guide" in inspect.signature(policy.predict_chunk).parameters


class ChunkEnsemble:
    """The action of each step from the chunks that cover it (one trial)."""

    def __init__(self, decay: float | None) -> None:
        check_decay(decay)
        self.decay = decay
        self._chunks: deque[tuple[int, np.ndarray]] = deque()  # (first step, (H, A) actions), oldest first

    def add(self, step: int, chunk: np.ndarray) -> None:
        """A chunk predicted from the observation of ``step``: its row j is the action of step + j."""
        self._chunks.append((step, np.asarray(chunk)))

    def ahead(self, step: int) -> np.ndarray:
        """The newest chunk's actions from ``step`` on, (H, A), its last row repeated past its end: the
        target a re-plan at ``step`` is inpainted toward (``inpaint_weights`` gives the rows' weights)."""
        if not self._chunks:
            raise ConfigError(f"no chunk to continue at step {step}: predict a chunk first")
        start, chunk = self._chunks[-1]
        rows = np.clip(np.arange(len(chunk)) + step - start, 0, len(chunk) - 1)
        return np.asarray(chunk[rows], dtype=np.float32)

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
    chunks covering it (``decay``, see ``ChunkEnsemble``) or, with ``inpaint``, each re-plan is
    inpainted toward the rest of the chunk it replaces (``inpaint_weights``; the policy's
    ``predict_chunk`` takes a ``guide``); a policy with ``past_frame`` d also gets
    the observation of d steps earlier (the first one before that). ``reset()`` (or a change of
    batch size) starts over."""

    def __init__(self, policy: ChunkPolicy, decay: float | None = None, inpaint: bool = False) -> None:
        check_decay(decay)
        if inpaint and decay is not None:
            raise ConfigError("chunks are joined by inpainting or by ensembling (decay); choose one")
        if inpaint and not takes_guide(policy):
            raise ConfigError(f"inpainting needs a chunk policy that takes a guide (a checkpoint), not {policy!r}")
        self.policy, self.decay, self.inpaint = policy, decay, inpaint
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
            if self.inpaint and self._step > 0:
                ahead = np.stack([e.ahead(self._step) for e in self._ensembles])
                guide = (ahead, inpaint_weights(self.policy.action_horizon, self.policy.execute_steps))
                chunks = self.policy.predict_chunk(given, rng, guide)
            else:
                chunks = self.policy.predict_chunk(given, rng)
            for e, chunk in zip(self._ensembles, chunks, strict=True):
                e.add(self._step, chunk)
        action = np.stack([e.action(self._step) for e in self._ensembles])
        self._step += 1
        return action


def inpaint_weights(horizon: int, executed: int, delay: int = 0) -> np.ndarray:
    """(horizon,) real-time chunking's soft mask (Black et al. 2025) for a chunk predicted after
    ``executed`` actions of the previous one: rows i < ``delay`` (executed while the policy thinks)
    weigh 1, the rest of the previous chunk's overlap (i < horizon - executed) c (e^c - 1) / (e - 1)
    with c = (horizon - executed - i) / (horizon - executed - delay + 1), the rows after it 0."""
    if not 1 <= executed <= horizon or not 0 <= delay <= horizon - executed:
        raise ConfigError(
            f"inpainting: expected 1 <= executed <= {horizon} and 0 <= delay <= horizon - executed, "
            f"got executed {executed!r} and delay {delay!r}"
        )
    i = np.arange(horizon, dtype=np.float64)
    overlap = horizon - executed
    c = (overlap - i) / (overlap - delay + 1)
    w = np.where(i < delay, 1.0, np.where(i < overlap, c * np.expm1(c) / np.expm1(1.0), 0.0))
    return w.astype(np.float32)
