"""Atomic file output: write to a temporary name in the same folder, then rename.

A run killed at any moment leaves either the old file or the new one, never half a file; ``folder``
does the same for a whole folder of files (an export).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from r2s2r.errors import R2S2RError
from r2s2r.files import output_dir, output_file

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


@contextlib.contextmanager
def folder(path: str | os.PathLike[str], what: str = "an output folder", option: str | None = None) -> Iterator[Path]:
    """Build a folder atomically: yields a hidden temporary folder beside ``path`` to fill; when the
    block ends normally, its files are synced and it is renamed to ``path`` (which must not exist or
    be an empty folder); when it raises, the temporary folder is removed. A run killed meanwhile
    leaves at most the hidden ``.<name>.*.tmp`` folder, never a half-written ``path``."""
    path = output_dir(path, what, option, create=False)
    name = f"{option} {path}" if option else str(path)
    if path.is_dir() and any(path.iterdir()):
        raise R2S2RError(f"{name}: is not empty; expected a new or empty folder for {what}")
    output_dir(path.parent, what, option)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        os.chmod(tmp, 0o755)
    except OSError as e:
        raise R2S2RError(f"{name}: cannot be written ({e.strerror or e})") from None
    try:
        yield tmp
        for f in sorted(p for p in tmp.rglob("*") if p.is_file()):
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.rename(tmp, path)  # replaces an empty folder; a folder filled meanwhile makes it fail
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise R2S2RError(f"{name}: cannot be written ({e.strerror or e}); expected {what}") from None
        raise


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
