"""Study profiles: the sizes of a study run, one registry of named presets.

- ``paper``: the study's sizes: 100 real demonstrations, 1,500 simulated trajectories per grounding
  configuration, the 50-trial protocol, full 96 px images (the ``gpu`` training preset).
- ``quick`` (default): the 50-trial protocol with 100 DART demonstrations, fewer simulated
  trajectories and the small CPU model; about 2 hours on the 2-core development machine (AMD EPYC,
  AVX2: 115.5 min from an empty folder on 2026-12-07, docs/results/quick-lab0-head; the [M2-2] goal is
  90 minutes; measured stage times are in the report).
- ``smoke``: every stage at toy size (tests, CI).

A profile says *how much*; the design (``r2s2r.study.design``) says *which policies*. Run settings
that never change results (worker processes) are not part of a profile.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from r2s2r.errors import ConfigError, UnknownNameError
from r2s2r.evaluate.trials import TrialPlan
from r2s2r.generate.mix import ConditionMix
from r2s2r.train.presets import get_preset

ANCHORS = ("random", "scripted", "hold")  # what ``StudyProfile.anchors`` may name (``resolve_policy``)
FILM = ("all", "baseline", "none")  # what ``StudyProfile.film`` may be


@dataclass(frozen=True)
class StudyProfile:
    """How large every stage is. The recorded policy images (real and sim) are the training preset's
    own size (``image_size``), which is also what evaluation renders: a policy never sees frames
    resized in training but rendered natively in the lab."""

    summary: str
    lab: int = 0
    seed: int = 0  # seeds every stage's own draws (calibration poses, demos, generation, training, policy)
    n_real: int = 100
    perturb_std: float = 0.0  # DART: rad of noise on the arm targets sent while the operator reaches (0: clean)
    n_sim: int = 1500  # admitted trajectories per grounding configuration
    preset: str = "cpu"
    train_steps: int | None = None  # None: the preset's
    ratio: float = 0.5  # real share of every co-training batch
    trials: TrialPlan = TrialPlan()  # 24 nominal + 7/7/6/6 shifted
    max_duration: float = 25.0  # s per evaluation trial: the demonstrations' own limit (CellConfig's)
    eval_batch: int = 10  # trials in flight at once
    design: str = "grounding"
    mix: ConditionMix = ConditionMix()
    # every policy is also evaluated on the lab's trials in these simulated worlds (sim-vs-lab agreement)
    sim_worlds: tuple[str, ...] = ("grounded", "ungrounded")
    # ... rendered with shadows and anti-aliasing (``r2s2r eval --shadows``): the lighting was fitted on
    # shadowed renders, and a sim evaluation stands in for the lab's cameras; False: the worlds' own lean
    # renders (measured in docs/benchmarks.md, 2026-12-07, ninth session)
    sim_eval_shadows: bool = True
    # the simulated training data rendered the same way (``r2s2r generate --shadows``): the grounded world's
    # policy frames half as far from the lab's, at 2.6 x the generation time; False: the worlds' own lean
    # renders. On lab 0 a policy co-trained 8,000 steps on 200 fully grounded trajectories did 14/50 with
    # shadowed data and 10/50 with lean data (real-only 18/50; docs/benchmarks.md, 2026-12-07, fifteenth session)
    sim_data_shadows: bool = True
    # reference policies (``r2s2r.evaluate.policies``) evaluated in the lab and in each of those worlds for
    # the agreement only, never study policies: SIMPLER's statistics need policies whose success differs
    # (the study's own five span 10-26 % on lab 0); the report gives the agreement with and without them
    anchors: tuple[str, ...] = ("random", "scripted")
    # ... and the design's baseline stopped at these training steps (its run's state there, best held-out
    # checkpoint up to it): policies of the study's own kind at lower skill, also for the agreement only
    anchor_steps: tuple[int, ...] = ()
    # whose chosen lab trials are filmed for the report (each filming re-runs waves with video capture):
    # every policy of the design, its baseline only, or none
    film: str = "all"

    def __post_init__(self) -> None:
        for name in ("n_real", "n_sim"):
            if getattr(self, name) < 1:
                raise ConfigError(f"study profile: {name} expected >= 1, got {getattr(self, name)}")
        if self.train_steps is not None and self.train_steps < 1:
            raise ConfigError(f"study profile: train_steps expected >= 1, got {self.train_steps}")
        if not 0 < self.ratio <= 1:
            raise ConfigError(f"study profile: ratio expected in (0, 1], got {self.ratio}")
        if not 0 <= self.perturb_std < 1:
            raise ConfigError(f"study profile: perturb_std expected in [0, 1) rad, got {self.perturb_std}")
        if self.lab < 0 or self.seed < 0:
            raise ConfigError(f"study profile: lab and seed expected >= 0, got {self.lab}, {self.seed}")
        for w in self.sim_worlds:
            if w not in ("grounded", "ungrounded"):
                raise UnknownNameError("study sim world", w, ("grounded", "ungrounded"))
        if len(set(self.sim_worlds)) != len(self.sim_worlds):
            raise ConfigError(f"study profile: sim_worlds expected distinct worlds, got {self.sim_worlds}")
        for name in ("sim_eval_shadows", "sim_data_shadows"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"study profile: {name} expected true or false, got {getattr(self, name)!r}")
        for a in self.anchors:
            if a not in ANCHORS:
                raise UnknownNameError("study anchor policy", a, ANCHORS)
        if len(set(self.anchors)) != len(self.anchors):
            raise ConfigError(f"study profile: anchors expected distinct policies, got {self.anchors}")
        if self.film not in FILM:
            raise UnknownNameError("study film setting", self.film, FILM)
        get_preset(self.preset)  # a bad name fails here, with a hint
        k = self.anchor_steps
        steps_ok = all(isinstance(s, int) and not isinstance(s, bool) and 1 <= s < self.steps for s in k)
        if not steps_ok or list(k) != sorted(set(k)):
            raise ConfigError(
                f"study profile: anchor_steps expected increasing training steps in [1, {self.steps - 1}], got {k!r}"
            )

    @property
    def image_size(self) -> int:
        return get_preset(self.preset).policy.image_size

    @property
    def steps(self) -> int:
        return self.train_steps or get_preset(self.preset).train.steps

    def replace(self, **changes) -> StudyProfile:
        """A copy with ``changes`` (None values are ignored: the CLI's unset options)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


PROFILES: dict[str, StudyProfile] = {
    "smoke": StudyProfile(
        "every stage at toy size, for tests: 3 real demos, 3 sim trajectories per configuration, "
        "the tiny model for 20 steps, 5 short trials",
        n_real=3,
        n_sim=3,
        preset="tiny",
        train_steps=20,
        trials=TrialPlan(nominal=1, lighting=1, belt_speed=1, novel_object=1, combined=1),
        max_duration=4.0,
        eval_batch=5,
        anchors=("random",),  # one reference anchor and one early stop: each kind once, 3 evaluations each
        anchor_steps=(10,),
        film="baseline",  # the filming stage once (25 s each here, the slowest of the smoke study's stages)
        sim_data_shadows=False,  # the test suite runs this study several times; shadowed generation: test_generate.py
    ),
    "quick": StudyProfile(
        "the 50-trial protocol on a 2-core CPU in about 2 hours: 100 real demos collected with DART "
        "perturbations, 200 sim trajectories per configuration, the cpu model (48 px) for 3000 steps",
        n_real=100,
        perturb_std=0.06,  # lab 0's DART demos: 6-9/24 -> 10-13/24 (docs/benchmarks.md)
        n_sim=200,
        preset="cpu",
        train_steps=3000,  # 11-13/24 nominal on lab 0 in the ladder (12-14 at 4000, 25 % more training)
        anchor_steps=(500, 1000),  # a sixth and a third of the training: between random (0 %) and the study's own
        sim_data_shadows=False,  # lean training renders: shadowed ones would add ~30 min to the two hours
    ),
    "paper": StudyProfile(
        "the study's sizes: 100 real demos, 1,500 sim trajectories per configuration, 96 px, the gpu "
        "model (use a GPU), 50 trials",
        n_real=100,
        n_sim=1500,
        preset="gpu",
    ),
}


def get_profile(name: str) -> StudyProfile:
    """The profile called ``name``; an unknown name raises UnknownNameError with a "did you mean" hint."""
    if name not in PROFILES:
        raise UnknownNameError("study profile", name, tuple(PROFILES))
    return PROFILES[name]
