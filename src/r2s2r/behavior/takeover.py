"""Takeover demonstrations (HG-DAgger, Kelly et al. 2019): the operator corrects where a policy goes wrong.

DART (``r2s2r.behavior.perturb``) shows the way back from off-path states that noise makes; a
trained policy, closed loop, drifts into states of its own (measured on lab 0: its hand falls 4-12
cm behind the object on the belt by the grasp). Here a trained policy drives each takeover attempt
from the trial's start; at a time drawn in ``window`` the operator takes over from wherever the
policy left the arm and finishes the trial as a person at the controls would. The demonstration is
the operator's part: frames and commands from the takeover on (its stereo pair captured at the
takeover), so the data holds the policy's own mistakes labelled with the operator's correction.

The policy's draws (its sampler noise and the takeover time) come from their own stream of the
attempt's key, so a collection with takeovers stays reproducible and resumable. A takeover episode
starts mid-trial: it cannot be replayed from the trial's reset (the privileged-state diagnostic
replays clean demonstrations only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from r2s2r.errors import ConfigError
from r2s2r.lab.real_cell import RealCell
from r2s2r.policy.protocol import ChunkPolicy, past_frame, with_past

_TAKEOVER_SALT = 0x7A6E  # separates the takeover's draws from the attempt's
TAKEOVER_BEHAVIOR = "teleop-takeover"  # Provenance.behavior of a takeover episode


@dataclass(frozen=True)
class Takeover:
    """Which attempts a policy drives first, and until when."""

    policy: Path  # a training run folder (its best checkpoint) or a step_* folder
    share: float = 0.5  # fraction of attempts that are takeovers (drawn per attempt)
    window: tuple[float, float] = (2.0, 5.0)  # s of trial time the takeover is drawn in, uniformly

    def __post_init__(self) -> None:
        if not (isinstance(self.share, int | float) and 0 < self.share <= 1):
            raise ConfigError(f"takeover share: expected a fraction in (0, 1], got {self.share!r}")
        lo, hi = self.window
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
            raise ConfigError(f"takeover window: expected 0 <= start <= end seconds, got {self.window!r}")

    def draw(self, seed: int, key: int) -> tuple[float | None, np.random.Generator]:
        """Attempt ``key``'s takeover time (None: the operator drives it all) and the policy's stream."""
        rng = np.random.default_rng([seed, key, _TAKEOVER_SALT])
        if rng.uniform() >= self.share:
            return None, rng
        return float(rng.uniform(*self.window)), rng


def drive(
    lab: RealCell, policy: ChunkPolicy, first: dict[str, np.ndarray], until: float, rng: np.random.Generator
) -> dict[str, np.ndarray] | None:
    """Run ``policy`` on ``lab`` (reset, first observation ``first``) as an evaluation does, until the
    trial time reaches ``until``; the observation then, or None when the trial ended before it."""
    k, d = policy.execute_steps, past_frame(policy)
    seen = {0: first}
    obs, step, chunk = first, 0, None
    while lab.time < until - 1e-9:
        if step % k == 0:
            now = obs if not d else with_past(obs, seen[max(step - d, 0)])
            batch = {key: np.asarray(v)[None] for key, v in now.items()}
            chunk = np.asarray(policy.predict_chunk(batch, rng))[0]
        obs = lab.act(chunk[step % k])
        step += 1
        seen[step] = obs
        seen = {t: o for t, o in seen.items() if t >= step - d or t == 0}
        if lab.verdict().done:
            return None
    return obs
