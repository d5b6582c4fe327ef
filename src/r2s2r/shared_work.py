"""Work shared by the processes of one run: each result computed once, by whichever claims it first.

The worker processes of a generation run each build the same behaviour from the same inputs (the
MimicGen sources: pose estimation of every real demonstration, half a minute of CPU). With a folder
they can all reach, ``SharedWork.map(names, compute)`` splits that work between them: a result
another process has published is read back; a name nobody holds is claimed (an exclusive
``flock`` on ``<name>.lock``), computed and published (``<name>.pkl``, written under a temporary
name and renamed into place); a name another process holds is skipped and, once every other name is
done, waited for. A process that finishes or dies releases its locks, so a claim never outlives its
claimant: a result still missing when the lock is acquired is computed by the waiter. Every result
is computed by the same code from the same inputs whoever computes it, so what ``map`` returns does
not depend on the number of processes or on which one computed what.

The folder is private to one run (a temporary folder of the run's machine; results are pickles
this run wrote). Without a folder, or with one this machine does not have (a Ray actor on another
node), ``map`` computes everything in this process.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from r2s2r.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class SharedWork:
    """Results computed once among the processes sharing ``folder`` (None, or a folder this machine
    does not have: computed here, unshared)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = Path(folder) if folder is not None and Path(folder).is_dir() else None

    def map(self, names: Sequence[str], compute: Callable[[str], Any]) -> dict[str, Any]:
        """``{name: compute(name)}`` for every name, in the order given; ``compute`` must give the
        same (picklable) result for a name in every process."""
        for name in names:
            if not _NAME.match(name):
                raise ConfigError(f"shared work: a name of letters, digits, '_', '.' and '-' expected, got {name!r}")
        if self.folder is None:
            return {name: compute(name) for name in names}
        out: dict[str, Any] = {}
        held = [name for name in names if not self._take(name, compute, out, wait=False)]
        for name in held:  # claimed by another process: its result, or ours if it died first
            self._take(name, compute, out, wait=True)
        return {name: out[name] for name in names}

    def _take(self, name: str, compute: Callable[[str], Any], out: dict[str, Any], wait: bool) -> bool:
        """Put ``name``'s result in ``out`` (read back, or computed and published under its lock);
        False when another process holds the lock and ``wait`` is False."""
        fd = os.open(self.folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            path = self.folder / f"{name}.pkl"
            if path.exists():
                out[name] = pickle.loads(path.read_bytes())
            else:
                out[name] = compute(name)
                self._publish(path, out[name])
            return True
        finally:
            os.close(fd)  # releases the lock

    @staticmethod
    def _publish(path: Path, value: Any) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)  # others see the whole file or none (no fsync: the folder is scratch)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
