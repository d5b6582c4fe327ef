"""Held-out real demonstrations and the open-loop action error: how training is judged and checkpoints picked.

The flow-matching loss is no progress signal (it plateaus while the sampled actions still improve or
worsen), so a run keeps some real demonstrations out of training (``split_episodes``) and, at every
checkpoint, samples action chunks for a fixed set of their frames (``OpenLoopProbe``): the mean
absolute error (rad) of the first ``steps`` actions against the recorded ones, for the arm (7
joints) and the hand (20), beside the same error of *holding still* (repeating the current joint
positions), the baseline any useful policy must beat. The latest checkpoint whose held-out arm error
is within ``TrainConfig.best_tolerance`` of the lowest is the run's ``best`` (``r2s2r.policy.checkpoint``).
Padded actions past an episode's end are left out. The probe's frames and its sampling noise are fixed by the
run's seed.

The ratio to holding still comes with a 95 % bootstrap interval over the held-out *episodes* (frames of
one demonstration are not independent draws): ten held-out demonstrations leave it wide. Measured on
lab 3's policy (docs/benchmarks.md, 2026-12-07, twelfth session): 0.46 x on its 10 held-out demos, 0.44
x [0.40, 0.49] on 40 fresh ones; single demonstrations range from 0.24 to 0.95 x.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from r2s2r.data.dataset import Dataset
from r2s2r.data.object_state import OBJECT_STATE, POSITION
from r2s2r.data.sampler import WindowSampler
from r2s2r.errors import ConfigError
from r2s2r.policy.config import PolicyConfig
from r2s2r.policy.model import FlowTransformer
from r2s2r.policy.normalize import Normalizer, decode_actions
from r2s2r.policy.policy import model_inputs
from r2s2r.policy.protocol import PAST
from r2s2r.train.frames import FrameReader

ARM = slice(0, 7)
HAND = slice(7, 27)
RATIO_CI_KEYS = ("val_arm_ratio_lo", "val_arm_ratio_hi")  # a record's interval of val_arm_ratio


def split_episodes(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(training, held-out) episode indices of a dataset of ``n``: round(fraction n) held out, at
    least one when fraction > 0 and n > 1, drawn by ``seed``; both sorted."""
    if not 0 <= fraction < 1:
        raise ConfigError(f"held-out fraction: expected a value in [0, 1), got {fraction!r}")
    k = 0 if fraction == 0 or n < 2 else min(n - 1, max(1, round(fraction * n)))
    held = np.sort(np.random.default_rng([seed, 0x4E1D]).permutation(n)[:k])
    return np.setdiff1d(np.arange(n), held), held


@dataclass(frozen=True)
class OpenLoopError:
    """Mean absolute errors (rad) of the first ``steps`` predicted actions, and of holding still."""

    arm: float
    hand: float
    hold_arm: float
    hold_hand: float
    samples: int
    object_cm: float | None = None  # median error (cm) of the predicted object position, where labelled
    # 95 % bootstrap interval of ``arm_ratio`` over the held-out episodes (None: fewer than two)
    arm_ratio_ci: tuple[float, float] | None = None

    @property
    def arm_ratio(self) -> float:
        """Arm error relative to holding still (< 1: better than not moving)."""
        return self.arm / self.hold_arm if self.hold_arm > 0 else float("inf")

    def record(self) -> dict[str, float]:
        return {
            "val_arm": self.arm,
            "val_hand": self.hand,
            "val_hold_arm": self.hold_arm,
            "val_hold_hand": self.hold_hand,
            "val_arm_ratio": self.arm_ratio,
            **({} if self.arm_ratio_ci is None else dict(zip(RATIO_CI_KEYS, self.arm_ratio_ci, strict=True))),
            **({} if self.object_cm is None else {"val_object_cm": self.object_cm}),
        }


def ratio_interval(
    err: np.ndarray, hold: np.ndarray, groups: np.ndarray, seed: int, resamples: int = 2000
) -> tuple[float, float] | None:
    """95 % percentile-bootstrap interval of ``err.sum() / hold.sum()`` resampling whole ``groups`` (an
    id per entry: the held-out episode of each error) with replacement; None with fewer than two groups."""
    ids, inverse = np.unique(groups, return_inverse=True)
    if len(ids) < 2:
        return None
    e, h = np.bincount(inverse, weights=err, minlength=len(ids)), np.bincount(inverse, weights=hold, minlength=len(ids))
    pick = np.random.default_rng([seed, 0xB007]).integers(0, len(ids), size=(resamples, len(ids)))
    den = h[pick].sum(axis=1)
    ratios = np.where(den > 0, e[pick].sum(axis=1) / np.where(den > 0, den, 1.0), np.inf)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def lowdim_keys(ds: Dataset, config: PolicyConfig) -> tuple[str, ...]:
    """The non-image observation keys a sampler of ``ds`` reads for ``config``'s training: the
    proprio, and the object-state labels where the policy learns them and ``ds`` has them."""
    labelled = config.object_state and f"obs/{OBJECT_STATE}" in ds.features
    return ("proprio", OBJECT_STATE) if labelled else ("proprio",)


class OpenLoopProbe:
    """A fixed batch of held-out frames of ``dataset`` (episodes ``episodes``) and their action chunks."""

    def __init__(
        self,
        dataset: Dataset,
        episodes: np.ndarray,
        config: PolicyConfig,
        seed: int,
        samples: int = 256,
        steps: int = 8,
    ) -> None:
        if len(episodes) == 0:
            raise ConfigError("open-loop probe: no held-out episodes")
        self.config, self.steps = config, min(steps, config.action_horizon)
        sampler = WindowSampler(dataset, config.action_horizon, lowdim_keys(dataset, config), episodes=episodes)
        rng = np.random.default_rng([seed, 0x9B0E])
        idx = np.sort(rng.choice(len(sampler), size=min(samples, len(sampler)), replace=False))
        part = sampler.sample(idx)
        frames = FrameReader({"real": dataset}, config.cameras, config.image_size, 0)
        self.obs = {c: torch.from_numpy(x) for c, x in frames.read("real", part["episode"], part["t"]).items()}
        self.obs["proprio"] = self.proprio = torch.from_numpy(part["obs/proprio"].astype(np.float32))
        if config.past_frame:
            past = sampler.sample(idx - np.minimum(part["t"], config.past_frame))
            for c, x in frames.read("real", past["episode"], past["t"]).items():
                if c in config.past_images:
                    self.obs[PAST + c] = torch.from_numpy(x)
            self.obs[PAST + "proprio"] = torch.from_numpy(past["obs/proprio"].astype(np.float32))
        self.object_state = part.get(f"obs/{OBJECT_STATE}")  # labels, where the policy learns them
        self.episode, self.seed = part["episode"], seed
        self.actions = part["actions"][:, : self.steps].astype(np.float64)
        self.valid = ~part["action_pad_mask"][:, : self.steps]
        gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        self.noise = torch.randn((len(idx), config.action_horizon, config.action_dim), generator=gen)

    def _errors(self, pred: np.ndarray, part: slice) -> np.ndarray:
        """(frames, steps) mean absolute error over the joints of ``part``; padded steps are 0."""
        return np.abs(pred[:, :, part] - self.actions[:, :, part]).mean(axis=2) * self.valid

    def _mae(self, pred: np.ndarray, part: slice) -> float:
        return float(self._errors(pred, part)[self.valid].mean())  # (x 1 on the valid steps: exact)

    @torch.inference_mode()
    def evaluate(self, model: FlowTransformer, normalizer: Normalizer, batch: int = 128) -> OpenLoopError:
        """The open-loop error of ``model`` (its current weights; switched to eval mode and back)."""
        dev = next(model.parameters()).device
        was_training = model.training
        model.eval()
        preds, objects = [], []
        try:
            for i in range(0, len(self.proprio), batch):
                sl = slice(i, i + batch)
                obs = {k: x[sl].to(dev) for k, x in self.obs.items()}
                tokens = model.encode(*model_inputs(self.config, normalizer, obs))
                x = model.sample(tokens, self.noise[sl].to(dev))
                chunk = decode_actions(self.config, normalizer, x, obs["proprio"])
                preds.append(chunk[:, : self.steps].double().cpu().numpy())
                if self.object_state is not None:
                    objects.append(model.object_state(tokens)[:, POSITION].double().cpu().numpy())
        finally:
            model.train(was_training)
        pred = np.concatenate(preds)
        hold = np.repeat(self.proprio.double().numpy()[:, None], self.steps, axis=1)
        per_frame = [self._errors(x, ARM).sum(axis=1) for x in (pred, hold)]
        return OpenLoopError(
            arm=self._mae(pred, ARM),
            hand=self._mae(pred, HAND),
            hold_arm=self._mae(hold, ARM),
            hold_hand=self._mae(hold, HAND),
            samples=int(self.valid.sum()),
            object_cm=self._object_cm(np.concatenate(objects)) if objects else None,
            arm_ratio_ci=ratio_interval(*per_frame, self.episode, self.seed),
        )

    def _object_cm(self, pred: np.ndarray) -> float | None:
        true = self.object_state[:, POSITION].astype(np.float64)
        known = np.isfinite(true).all(axis=1)
        if not known.any():
            return None
        return float(np.median(np.linalg.norm(pred[known] - true[known], axis=1)) * 100.0)
