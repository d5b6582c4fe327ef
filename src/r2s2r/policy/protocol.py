"""``ChunkPolicy``: what evaluation needs of a policy that predicts chunks of future actions.

Observations come in batches (evaluation runs many trials at once): a dict with one entry per
camera in ``cameras`` (uint8, (B, image_size, image_size, 3)) and ``proprio`` (float32, (B, 27),
joint positions in rad). ``predict_chunk`` returns (B, action_horizon, 27) absolute joint targets
(7 arm + 20 hand, rad) at the control rate; the caller executes the first ``execute_steps`` of each
chunk, then asks again (receding horizon). Every random draw (e.g. a flow-matching sampler's
initial noise) comes from the ``rng`` passed in, so the same seed gives the same actions.

A policy with ``past_frame`` = d > 0 (an optional attribute; 0 when absent) also needs the
observation of d control steps earlier (the trial's first one while fewer than d steps have
passed), under the keys ``past/<camera>`` and ``past/proprio``: one frame alone does not show how
fast the object moves on the belt. Its optional ``past_images`` names the cameras whose earlier frame
it reads (absent: all of ``cameras``); a caller may leave the others out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class ChunkPolicy(Protocol):
    cameras: tuple[str, ...]
    image_size: int
    action_horizon: int  # H: actions per predicted chunk
    execute_steps: int  # k <= H: actions executed from each chunk before predicting again

    def predict_chunk(self, obs: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """(B, action_horizon, 27) joint targets for a batch of observations."""


PAST = "past/"


def past_frame(policy: object) -> int:
    """How many control steps back a policy's second observation is (0: it needs none)."""
    return int(getattr(policy, "past_frame", 0) or 0)


def past_images(policy: object) -> tuple[str, ...]:
    """The cameras whose earlier frame a past-frame policy reads: its ``past_images``, else every camera."""
    chosen = getattr(policy, "past_images", None)
    return tuple(policy.cameras if chosen is None else chosen)


def with_past(obs: Mapping[str, np.ndarray], past: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``obs`` with ``past``'s entries added under ``past/<key>``."""
    return {**obs, **{PAST + k: v for k, v in past.items() if not k.startswith(PAST)}}
