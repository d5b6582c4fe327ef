"""Policies: the ``ChunkPolicy`` interface every evaluated policy implements."""

from r2s2r.policy.protocol import ChunkPolicy

__all__ = ["ChunkPolicy"]
