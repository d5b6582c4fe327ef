"""``report.html``: the study report as one self-contained page, rendered from the same blocks as
``report.md`` (``r2s2r.study.report.report_blocks``), so it shows the same numbers.

Everything is inside the one file: figures as base64 PNG, the filmed trials as base64 H.264 MP4
(``data:`` URIs), the style inline; no script and nothing fetched, so the page opens offline, from
anywhere it is copied to. A filmed trial shows the policy, the trial's index, its condition kind and
values, and its outcome under its video.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from r2s2r.errors import R2S2RError
from r2s2r.study.report import report_blocks
from r2s2r.study.sections import Block, Bullets, Clips, Figure, Heading, Table, Text

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; color: #1d1d1f; margin: 0; background: #fafafa; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 64px; background: #fff; }
h1 { font-size: 1.6em; margin-top: 0.2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #d5d5d5; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f3; } tbody tr:nth-child(even) { background: #fafafc; }
code { background: #f0f0f3; padding: 0 3px; border-radius: 3px; font-size: 0.95em; }
figure { margin: 0.8em 0; } img { max-width: 100%; height: auto; }
.clips { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 14px; }
.clip { margin: 0; padding: 8px; border: 1px solid #ddd; border-radius: 6px; background: #fcfcfd; }
.clip video { width: 100%; height: auto; display: block; background: #000; }
.clip figcaption { font-size: 0.86em; margin-top: 6px; }
.success { color: #17702e; font-weight: 600; } .failure { color: #a4262c; font-weight: 600; }
"""

_CODE = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*(.+?)\*\*")


def inline(text: str) -> str:
    """``text`` escaped for HTML, with its inline marks (```code```, ``**strong**``) as elements."""
    out = html.escape(text, quote=False)
    out = _CODE.sub(r"<code>\1</code>", out)
    return _STRONG.sub(r"<strong>\1</strong>", out)


def _data_uri(folder: Path, name: str, mime: str) -> str:
    path = folder / name
    if not path.is_file():
        raise R2S2RError(f"{path}: missing; the report page embeds it (rerun the study to write it)")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _table(t: Table) -> list[str]:
    head = "".join(f"<th>{inline(h)}</th>" for h in t.header)
    rows = ["<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in t.rows]
    return ["<table>", f"<thead><tr>{head}</tr></thead>", "<tbody>", *rows, "</tbody>", "</table>"]


def _clips(c: Clips, folder: Path) -> list[str]:
    out = [f"<h3>{inline(c.policy)}</h3>", '<div class="clips">']
    for x in c.clips:
        cls = "success" if x.outcome.startswith("success") else "failure"
        src = _data_uri(folder, x.video, "video/mp4")
        out += [
            '<figure class="clip">',
            f'<video controls muted loop playsinline preload="metadata" src="{src}"></video>',
            f"<figcaption><strong>{inline(c.policy)}</strong>, trial {x.trial}, {inline(x.kind)}: "
            f'<span class="{cls}">{inline(x.outcome)}</span><br>{inline(x.condition)}</figcaption>',
            "</figure>",
        ]
    return [*out, "</div>"]


def _html_lines(b: Block, folder: Path) -> list[str]:
    match b:
        case Heading(text, level):
            return [f"<h{level}>{inline(text)}</h{level}>"]
        case Text(lines):
            return [f"<p>{inline(' '.join(lines))}</p>"]
        case Bullets(items):
            return ["<ul>", *(f"<li>{inline(t)}</li>" for t in items), "</ul>"]
        case Table():
            return _table(b)
        case Figure(file, alt):
            return [f'<figure><img src="{_data_uri(folder, file, "image/png")}" alt="{html.escape(alt)}"></figure>']
        case Clips():
            return _clips(b, folder)
    raise R2S2RError(f"report: not a block: {b!r}")


def to_html(blocks: Sequence[Block], folder: Path, title: str) -> str:
    """The blocks as one page; figures and videos are read from ``folder`` and embedded."""
    body = [line for b in blocks for line in _html_lines(b, Path(folder))]
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body><main>",
            *body,
            "</main></body>",
            "</html>",
            "",
        ]
    )


def report_html(s: dict[str, Any], header: dict[str, str], folder: Path) -> str:
    """``report.html`` of the study in ``folder`` (its ``results.json`` is ``s``)."""
    blocks = report_blocks(s, header)
    title = next(b.text for b in blocks if isinstance(b, Heading))
    return to_html(blocks, folder, title)
