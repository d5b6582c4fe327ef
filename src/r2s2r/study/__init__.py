"""The study: experiment designs, a runner with cached stages, the report."""

from r2s2r.study.stages import StageRecord, Stages, key_hash

__all__ = ["StageRecord", "Stages", "key_hash"]
