"""The one exception hierarchy of r2s2r.

Every error caused by bad input (a config value, a file, a dataset, a checkpoint,
a CLI argument) is an :class:`R2S2RError` whose message names what was wrong and
what was expected.
"""

from __future__ import annotations


class R2S2RError(Exception):
    """Base class of every error r2s2r raises on purpose."""


class ConfigError(R2S2RError):
    """A configuration value or parameter file is invalid."""


class UnknownNameError(R2S2RError):
    """A name (camera, object, preset, condition) is not one of the known names."""

    def __init__(self, kind: str, name: str, known: list[str] | tuple[str, ...]) -> None:
        import difflib

        close = difflib.get_close_matches(name, list(known), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        super().__init__(f"unknown {kind} {name!r}; expected one of {sorted(known)}.{hint}")
        self.kind, self.name, self.known = kind, name, tuple(known)


class SafetyError(R2S2RError):
    """A command could not be made safe (e.g. it is not finite)."""


class PlanningFailed(R2S2RError):
    """A behaviour found no plan for an episode; ``reason`` is a short token (``no_grasp``,
    ``unreachable``, ``collision``, ...) that the generation statistics count. It lives here (not in
    ``generate``) so behaviours raise it without importing the later stage."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"planning failed ({reason}){': ' + detail if detail else ''}")
        self.reason = reason
