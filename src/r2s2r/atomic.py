"""Atomic file output: write to a temporary name in the same folder, then rename.

A run killed at any moment leaves either the old file or the new one, never half a file.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from r2s2r.errors import R2S2RError
from r2s2r.files import output_file

# ``temp_beside``'s names: ``.<name>.`` + mkstemp's 8 random characters + ``.tmp``
_TEMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def temp_beside(path: Path) -> tuple[int, str]:
    """An open temporary file ``.<name>.*.tmp`` in ``path``'s folder, readable like any output
    (mode 0644, where ``mkstemp`` alone gives 0600). Returns (fd, name)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o644)
    return fd, tmp


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (fsync, then rename); returns the path. Its folder is
    created (``files.output_file``); a location that cannot be written raises R2S2RError."""
    path = output_file(path, "an output file")
    try:
        fd, tmp = temp_beside(path)
    except OSError as e:
        raise R2S2RError(f"{path}: cannot be written ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise R2S2RError(f"{path}: cannot be written ({e.strerror or e})") from None
        raise
    return path


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented, key-sorted JSON atomically."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def remove_stale_temps(folder: str | os.PathLike[str], recursive: bool = True) -> list[Path]:
    """Remove the temporary files of ``temp_beside`` that runs killed mid-write left in ``folder`` (and,
    with ``recursive``, in its subfolders); returns them. Call it only on a folder no other process is
    writing into: a live writer's temporary file is removed too."""
    folder = Path(folder)
    found = folder.rglob(".*.tmp") if recursive else folder.glob(".*.tmp")
    stale = sorted(p for p in found if _TEMP.match(p.name) and p.is_file() and not p.is_symlink())
    for p in stale:
        p.unlink(missing_ok=True)
    return stale
