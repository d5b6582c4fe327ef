"""Simulated data: run a behaviour in a simulated world, admit successes, record episodes."""

from r2s2r.generate.rollout import Behavior, EpisodePlan, PlanningFailed, RolloutResult, rollout, sim_features

__all__ = ["Behavior", "EpisodePlan", "PlanningFailed", "RolloutResult", "rollout", "sim_features"]
