"""The blocks a study report is made of, and their markdown: the one description both ``report.md``
and ``report.html`` are rendered from (``r2s2r.study.report`` builds the blocks from ``results.json``;
``r2s2r.study.html`` renders the same blocks as a page).

Text in a block may hold two inline marks, as markdown writes them: ```code``` and ``**strong**``.
Files (figures, videos) are named relative to the study folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from r2s2r.errors import R2S2RError
from r2s2r.evaluate.tables import markdown_table


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2  # 1: the title


@dataclass(frozen=True)
class Text:
    """A paragraph; its lines are kept as lines in markdown and run together on the page."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        bad = [i for i, r in enumerate(self.rows) if len(r) != len(self.header)]
        if bad:
            raise R2S2RError(f"report table {self.header}: rows {bad} do not have {len(self.header)} cells")


@dataclass(frozen=True)
class Figure:
    file: str  # a PNG in the study folder
    alt: str


@dataclass(frozen=True)
class Clip:
    """One filmed lab trial of a policy."""

    trial: int
    kind: str  # the condition kind's label
    condition: str  # its values, in words
    outcome: str  # "success" or "failure: <mode>", and the trial's duration
    video: str  # an MP4 in the study folder


@dataclass(frozen=True)
class Clips:
    """The filmed trials of one policy."""

    policy: str
    clips: tuple[Clip, ...]


Block = Heading | Text | Bullets | Table | Figure | Clips


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> Table:
    """A ``Table`` of the cells' text."""
    return Table(tuple(header), tuple(tuple(str(c) for c in r) for r in rows))


def clips_table(c: Clips) -> Table:
    """The filmed trials as a table (markdown shows them so; the page shows the videos themselves)."""
    return table(
        ["trial", "condition", "values", "outcome", "video"],
        [[x.trial, x.kind, x.condition, x.outcome, f"[{x.video.rsplit('/', 1)[-1]}]({x.video})"] for x in c.clips],
    )


def _markdown_lines(b: Block) -> list[str]:
    match b:
        case Heading(text, level):
            return [f"{'#' * level} {text}"]
        case Text(lines):
            return list(lines)
        case Bullets(items):
            return [f"- {t}" for t in items]
        case Table(header, rows):
            return markdown_table(header, rows)
        case Figure(file, alt):
            return [f"![{alt}]({file})"]
        case Clips():
            return [f"Filmed trials of `{b.policy}`:", "", *_markdown_lines(clips_table(b))]
    raise R2S2RError(f"report: not a block: {b!r}")


def to_markdown(blocks: Sequence[Block]) -> str:
    """The blocks as markdown: each followed by an empty line."""
    lines: list[str] = []
    for b in blocks:
        lines += [*_markdown_lines(b), ""]
    return "\n".join(lines) + "\n"
