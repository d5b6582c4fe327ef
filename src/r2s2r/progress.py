"""``progress_bar``: the rich progress bar long commands show (label, bar, n/N, a status field, times)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def progress_bar(label: str, console: Console, field: str = "info", disable: bool = False) -> Progress:
    """A Progress whose tasks show ``label``, a bar, done/total, the task field ``field`` and elapsed/ETA."""
    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(f"{{task.fields[{field}]}}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    return Progress(*columns, console=console, disable=disable)
