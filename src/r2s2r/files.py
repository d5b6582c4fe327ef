"""The one place that opens input files and prepares output locations.

Every path a user gives (a params JSON, a dataset folder, a checkpoint, an ``--out``) goes through
these functions, so a missing file, a folder where a file is expected (or the reverse), an
unreadable or unwritable location and invalid JSON all raise an :class:`R2S2RError` that names the
path (and the option it came from) and says what was expected, never a raw ``OSError`` traceback.

``what`` is a noun phrase read after "expected" ("a WorldParams JSON file", "a dataset folder");
``option`` (e.g. ``"--out"``) is the command-line option the path came from, when there is one.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from r2s2r.errors import ConfigError, R2S2RError

PathLike = str | os.PathLike[str]


def _name(path: Path, option: str | None) -> str:
    return f"{option} {path}" if option else str(path)


def _reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _kind(path: Path, name: str) -> str:
    """``file``, ``dir``, ``missing`` or ``other`` (a device, a socket); a path that cannot even be
    looked at (a parent folder without permission) raises R2S2RError."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as e:
        raise R2S2RError(f"{name}: cannot be accessed ({_reason(e)})") from None
    return "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"


# ---- inputs ----------------------------------------------------------------------------------------


_NOUNS = {"file": "a file", "dir": "a folder", "other": "not a regular file"}


def _existing(path: PathLike, want: str, what: str, option: str | None) -> Path:
    """``path`` if it exists and is of kind ``want`` ("file" or "dir"), else R2S2RError."""
    path = Path(path)
    name = _name(path, option)
    kind = _kind(path, name)
    if kind == "missing":
        raise R2S2RError(f"{name}: does not exist; expected {what}")
    if kind != want:
        is_ = "is not a regular file" if kind == "other" else f"is {_NOUNS[kind]}"
        raise R2S2RError(f"{name}: {is_}; expected {what} ({_NOUNS[want]})")
    return path


def input_file(path: PathLike, what: str, option: str | None = None) -> Path:
    """``path`` as an existing regular file; R2S2RError if it is missing, a folder or special."""
    return _existing(path, "file", what, option)


def input_dir(path: PathLike, what: str, option: str | None = None) -> Path:
    """``path`` as an existing folder; R2S2RError if it is missing or a file."""
    return _existing(path, "dir", what, option)


def read_bytes(path: PathLike, what: str, option: str | None = None) -> bytes:
    """The bytes of input file ``path`` (see ``input_file``); unreadable files raise R2S2RError."""
    path = input_file(path, what, option)
    try:
        return path.read_bytes()
    except OSError as e:
        raise R2S2RError(f"{_name(path, option)}: cannot be read ({_reason(e)}); expected {what}") from None


def read_text(path: PathLike, what: str, option: str | None = None) -> str:
    """The UTF-8 text of input file ``path``; bytes that are not UTF-8 raise ConfigError."""
    data = read_bytes(path, what, option)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{_name(Path(path), option)}: is not UTF-8 text ({e}); expected {what}") from None


_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "true/false"}


def read_json(path: PathLike, what: str, option: str | None = None, expect: type | None = dict) -> Any:
    """The JSON value in input file ``path``. Missing, folder, unreadable, empty or invalid files, and
    (with ``expect``, default ``dict``) a top-level value of another type raise an error naming the
    path and ``what`` was expected: R2S2RError for the file, ConfigError for its contents."""
    text = read_text(path, what, option)
    name = _name(Path(path), option)
    if not text.strip():
        raise ConfigError(f"{name}: is empty; expected {what}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{name}: is not valid JSON ({e}); expected {what}") from None
    except RecursionError:
        raise ConfigError(f"{name}: JSON nested too deeply; expected {what}") from None
    if expect is not None and not isinstance(data, expect):
        got = "null" if data is None else _JSON_TYPES.get(type(data), type(data).__name__)
        raise ConfigError(f"{name}: holds a JSON {got}; expected {what} (a JSON {_JSON_TYPES.get(expect, expect)})")
    return data


# ---- outputs ---------------------------------------------------------------------------------------


def output_dir(path: PathLike, what: str, option: str | None = None, create: bool = True) -> Path:
    """Ready ``path`` as an output folder and return it: created with its parents (``create``), or,
    with ``create=False``, only checked to be creatable. R2S2RError when ``path`` or one of its
    parents is a file, or (probed when not ``create``) the location cannot be written."""
    path = Path(path)
    _ready_dir(path, _name(path, option), what, create, own=True)
    return path


def output_file(
    path: PathLike, what: str, option: str | None = None, suffix: str | None = None, create: bool = True
) -> Path:
    """Ready ``path`` as an output file and return it: ``suffix`` (e.g. ``".png"``) checked, not a
    folder, its parent folder created (``create``) or checked (see ``output_dir``)."""
    path = Path(path)
    name = _name(path, option)
    if suffix is not None and path.suffix.lower() != suffix:
        raise R2S2RError(f"{name}: expected a {suffix} file ({what}), got the suffix {path.suffix or '(none)'!r}")
    if _kind(path, name) == "dir":
        raise R2S2RError(f"{name}: is a folder; expected {what} (a file)")
    _ready_dir(path.parent, name, what, create, own=False)
    return path


def _ready_dir(folder: Path, name: str, what: str, create: bool, own: bool) -> None:
    """Create (or check) ``folder``; ``name`` is the path the user gave (``folder`` itself when
    ``own``, else a file inside it) and ``what`` what it should be."""
    existing = folder
    while _kind(existing, name) == "missing" and existing != existing.parent:
        existing = existing.parent
    if _kind(existing, name) != "dir":
        if own and existing == folder:
            raise R2S2RError(f"{name}: is a file; expected {what} (a folder)")
        raise R2S2RError(f"{name}: {existing} is a file, so {what} cannot be written under it")
    try:
        if create:  # the write that follows fails on its own (atomic, the writers turn that into R2S2RError)
            folder.mkdir(parents=True, exist_ok=True)
        else:
            # the up-front check of a command, before any work: a real probe (permission bits say
            # nothing to root, nor about read-only or special file systems). Not on the hot path: a
            # run killed between mkdtemp and rmdir would leave the probe in a dataset or run folder.
            os.rmdir(tempfile.mkdtemp(prefix=".r2s2r-probe-", dir=existing))
    except OSError as e:
        where = f"{existing} is not writable" if existing != folder or not own else "is not writable"
        raise R2S2RError(f"{name}: {where} ({_reason(e)}); expected a writable location for {what}") from None
