"""The progress bar of long counted work (demonstrations, episodes, training steps, trials): a count
toward a total, a free-text status field, elapsed time and ETA, on stderr.

Where stderr is not a terminal (a log file, CI, ``nohup``) no bar is drawn; the same information is
printed as plain lines instead, at most one every ``every_s`` seconds and once when the work is done,
so a log shows how far a long run got and how fast it went.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

PLAIN_EVERY_S = 30.0


class CountProgress(Progress):
    """``Progress`` that also writes plain lines where its console is not a terminal."""

    def __init__(self, label: str, console: Console, disable: bool, every_s: float) -> None:
        plain = not disable and not console.is_terminal
        super().__init__(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            disable=disable or plain,  # a log gets the plain lines only, not the bar's last frame too
        )
        self.label, self.every_s = label, every_s
        self._plain = plain
        self._last: dict[TaskID, float] = {}

    def update(self, task_id: TaskID, **changes: Any) -> None:
        super().update(task_id, **changes)
        if self._plain:
            self._line(task_id)

    def _line(self, task_id: TaskID) -> None:
        task = self._tasks[task_id]
        last = self._last.get(task_id)
        if last == float("inf"):  # the final line is already out
            return
        now = time.monotonic()
        done = task.total is not None and task.completed >= task.total
        if last is not None and now - last < self.every_s and not done:
            return
        self._last[task_id] = float("inf") if done else now
        total = "?" if task.total is None else f"{task.total:.0f}"
        parts = [f"{self.label}: {task.completed:.0f}/{total}", str(task.fields.get("status") or "")]
        elapsed = task.elapsed or 0.0
        rate = f", {task.completed / elapsed:.2f}/s" if elapsed and task.completed else ""
        parts.append(f"({elapsed:.0f} s{rate})")
        self.console.print(" ".join(p for p in parts if p), soft_wrap=True, highlight=False)


def count_progress(label: str, console: Console, disable: bool = False, every_s: float = PLAIN_EVERY_S) -> Progress:
    """``Progress`` with columns: label, bar, done/total, ``{task.fields[status]}``, elapsed, ETA.

    ``disable`` hides it (e.g. on every rank but the first of a distributed run); ``every_s``: the
    interval of the plain lines written instead of the bar where the console is not a terminal."""
    return CountProgress(label, console, disable, every_s)
