"""Evaluation on the lab: trial protocol, batched rollouts, honest statistics."""
