"""The progress bar of long counted work (demonstrations, episodes, trials): a count toward a
total, a free-text status field, elapsed time and ETA, on stderr."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def count_progress(label: str, console: Console, disable: bool = False) -> Progress:
    """``Progress`` with columns: label, bar, done/total, ``{task.fields[status]}``, elapsed, ETA.

    ``disable`` hides it (e.g. on every rank but the first of a distributed run)."""
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        disable=disable,
    )
