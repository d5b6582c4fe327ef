"""Frozen dataclasses to and from plain JSON values, with errors that name the field."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, TypeVar

from r2s2r.errors import ConfigError, R2S2RError

T = TypeVar("T")


def to_jsonable(obj: Any) -> Any:
    """Plain dict/list/float/str/int tree of a (nested) dataclass value."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (tuple, list)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ConfigError(f"cannot serialise non-finite value {obj!r}")
        return obj
    return obj


def from_jsonable(cls: type[T], data: Any, where: str = "", complete: bool = False) -> T:
    """Build ``cls`` from a JSON tree; unknown, missing or mistyped fields raise ConfigError.

    A field with a default may be left out, unless ``complete``: then every field of every nested
    dataclass must be present (a file that lost a whole section must not quietly become the defaults)."""
    return _convert(cls, data, where or cls.__name__, complete)


def _convert(tp: Any, data: Any, where: str, complete: bool = False) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected an object for {tp.__name__}, got {type(data).__name__}")
        hints = typing.get_type_hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp) if f.init}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {unknown}; expected {sorted(fields)}")
        required = [
            n
            for n, f in fields.items()
            if complete or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        ]
        missing = [n for n in required if n not in data]
        if missing:
            which = "field" if len(missing) == 1 else "fields"
            raise ConfigError(f"{where}: missing {which} {missing}; expected every field of {tp.__name__}")
        kwargs = {}
        for name in fields:
            if name in data:
                kwargs[name] = _convert(hints[name], data[name], f"{where}.{name}", complete)
        try:
            return tp(**kwargs)
        except R2S2RError as e:  # a value check (ConfigError, UnknownNameError): say where it was
            raise ConfigError(f"{where}: {e}") from None
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {type(data).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{where}[{i}]", complete) for i, v in enumerate(data))
        if len(data) != len(args):
            raise ConfigError(f"{where}: expected {len(args)} values, got {len(data)}")
        return tuple(_convert(a, v, f"{where}[{i}]", complete) for i, (a, v) in enumerate(zip(args, data, strict=True)))
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            try:
                return _convert(arg, data, where, complete)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: value {data!r} matches none of {typing.get_args(tp)}")
    if tp is type(None):
        if data is not None:
            raise ConfigError(f"{where}: expected null, got {data!r}")
        return None
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)) or not math.isfinite(data):
            raise ConfigError(f"{where}: expected a finite number, got {data!r}")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise ConfigError(f"{where}: expected an integer, got {data!r}")
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise ConfigError(f"{where}: expected true/false, got {data!r}")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise ConfigError(f"{where}: expected a string, got {data!r}")
        return data
    raise ConfigError(f"{where}: unsupported type {tp!r}")
