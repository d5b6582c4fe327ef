"""Progress of long work: a bar on a terminal, plain throttled lines in a log."""

from __future__ import annotations

import io

from rich.console import Console

from r2s2r.progress import count_progress


def _run(terminal: bool, every_s: float, n: int = 50) -> str:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=100)
    with count_progress("work", console, every_s=every_s) as bar:
        task = bar.add_task("work", total=n, status="")
        for i in range(n):
            bar.update(task, completed=i + 1, status=f"item {i}")
    return buf.getvalue()


def test_a_log_gets_plain_lines_throttled_and_the_last_one_once():
    lines = [s for s in _run(False, every_s=3600).splitlines() if s.startswith("work:")]
    # the first update, then nothing for an hour, then the final count exactly once
    assert len(lines) == 2, lines
    assert lines[0].startswith("work: 1/50 item 0") and lines[1].startswith("work: 50/50 item 49")
    log = _run(False, every_s=0).splitlines()
    every = [s for s in log if s.startswith("work:")]
    assert len(every) == 50 and every[-1].startswith("work: 50/50")
    assert every == log  # nothing else: not the bar's last frame (cut to the width of a log)


def test_a_terminal_gets_the_bar_and_no_plain_lines():
    out = _run(True, every_s=0)
    assert "work: 1/50" not in out and "50/50" in out


def test_a_disabled_bar_prints_nothing():
    buf = io.StringIO()
    with count_progress("work", Console(file=buf, force_terminal=False), disable=True, every_s=0) as bar:
        bar.update(bar.add_task("work", total=2, status=""), completed=2)
    assert buf.getvalue() == ""
