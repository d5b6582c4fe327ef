"""``report.html``: the same numbers as ``report.md`` (one set of blocks, two renderings), every figure
and filmed trial embedded, the trials chosen by the rule; the smoke study's page renders in headless
Chromium (not blank, every image and video loaded, no console error)."""

from __future__ import annotations

import html
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from r2s2r.errors import R2S2RError
from r2s2r.evaluate.agreement_report import agreement_figure
from r2s2r.evaluate.results import EvalResults, TrialOutcome
from r2s2r.study.clips import choose_clips
from r2s2r.study.figures import success_figure, training_figure
from r2s2r.study.html import report_html
from r2s2r.study.report import fmt_rate, report_markdown
from r2s2r.video import VideoWriter
from r2s2r.world.conditions import KINDS

from .chromium import chromium_path, open_page

ROOT = Path(__file__).resolve().parents[1]
HEADER = {"command": "`r2s2r study run --profile quick`", "machine": "x86_64, 2 cores"}


class _Page(HTMLParser):
    """The text of every table cell (by table and row), figure caption, and the media sources."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.captions: list[str] = []
        self.sources: list[tuple[str, str]] = []
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "figcaption":
            self._caption = []
        elif tag in ("img", "video"):
            self.sources.append((tag, a["src"]))

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "figcaption":
            self.captions.append("".join(self._caption))
            self._caption = None

    def handle_data(self, data):
        for buf in (self._cell, self._caption):
            if buf is not None:
                buf.append(data)


def _markdown_tables(text: str) -> list[list[list[str]]]:
    """Every markdown table's cells (rule rows dropped), its inline marks removed as the page renders them."""
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("| "):
            cells = [c.replace("`", "").replace("**", "") for c in line[2:-2].split(" | ")]
            if current is None:
                current = []
                tables.append(current)
            if set("".join(cells)) != {"-"}:
                current.append(cells)
        else:
            current = None
    return tables


def _study_folder(tmp_path: Path) -> dict:
    """The committed quick study's results, given what it predates (the plan's estimates, the filmed
    trials: two small videos), with its figures, in ``tmp_path``."""
    s = json.loads((ROOT / "docs/results/quick-lab0/results.json").read_text())
    for st in s["stages"]:
        st["expected_s"] = round(1.2 * st["seconds"], 1)
    (tmp_path / "success.png").write_bytes(success_figure(s))
    (tmp_path / "training.png").write_bytes(training_figure(s))
    if s.get("agreement") is not None:
        (tmp_path / "agreement.png").write_bytes(agreement_figure(s["agreement"]))
    clips = []
    for i, success in ((3, True), (30, False)):
        video = f"stages/videos-real-only-0/videos/trial_{i:03d}.mp4"
        with VideoWriter(tmp_path / video, 10.0) as w:
            for t in range(12):
                w.write(np.full((24, 64, 3), 20 * t, np.uint8))
        condition = {"kind": "lighting", "object": "red_cube", "belt_speed": 0.071, "start_x": -0.18, "lateral": 0.03,
                     "yaw": 1.2, "light_scale": 0.45, "light_tint": [1.2, 0.9, 0.8], "light_azimuth": 0.9}  # fmt: skip
        clips.append({"trial": i, "kind": "lighting", "condition": condition, "success": success,
                      "failure": None if success else "fell_off_belt", "duration": 8.3, "video": video})  # fmt: skip
    s["videos"] = {"rule": "a rule", "policies": {"real-only": clips}}
    return s


def test_page_shows_the_same_numbers_as_report_md(tmp_path):
    s = _study_folder(tmp_path)
    md = report_markdown(s, HEADER)
    page = _Page()
    page.feed(report_html(s, HEADER, tmp_path))
    md_tables = _markdown_tables(md)
    clip_table = next(t for t in md_tables if t[0] == ["trial", "condition", "values", "outcome", "video"])
    # every table of report.md is on the page, cell for cell (the filmed trials are captioned videos there)
    assert [t for t in md_tables if t is not clip_table] == page.tables and len(page.tables) >= 8
    success = {row[0]: row for row in page.tables[0]}
    real = s["policies"]["real-only"]
    want = ["real-only", "none", *(fmt_rate(real[k]) for k in ("overall", "nominal", "shifted"))]
    assert success["real-only"] == want  # docs/results/quick-lab0/report.md's row
    for row, caption in zip(clip_table[1:], page.captions[-2:], strict=True):
        trial, kind, values, outcome, _ = row
        assert caption == f"real-only, trial {trial}, {kind}: {outcome}{values}"
    assert "success, ended at 8.3 s" in page.captions[-2] and "failure: fell_off_belt" in page.captions[-1]
    assert "light x0.45 (tint 1.20/0.90/0.80" in page.captions[-1]
    # figures and videos are inside the page, byte for byte
    kinds = [(tag, src.split(";")[0]) for tag, src in page.sources]
    png, mp4 = ("img", "data:image/png"), ("video", "data:video/mp4")
    assert kinds == [png, mp4, mp4, *([png] if s.get("agreement") else []), png]  # success, clips, agreement, training
    import base64

    videos = [base64.b64decode(src.split(",", 1)[1]) for tag, src in page.sources if tag == "video"]
    assert videos[0] == (tmp_path / s["videos"]["policies"]["real-only"][0]["video"]).read_bytes()
    assert base64.b64decode(page.sources[0][1].split(",", 1)[1]) == (tmp_path / "success.png").read_bytes()
    # text is escaped; the inline marks become elements
    out = report_html({**s, "design": {**s["design"], "name": "<b>x</b>"}}, HEADER, tmp_path)
    assert "&lt;b&gt;x&lt;/b&gt;" in out and "<b>x</b>" not in out
    assert "<code>r2s2r study run --profile quick</code>" in out
    (tmp_path / "training.png").unlink()
    with pytest.raises(R2S2RError, match="training.png: missing"):
        report_html(s, HEADER, tmp_path)


def _outcomes(spec: str, per_kind: int) -> list[TrialOutcome]:
    """One outcome per letter (S success, F failure); the kinds in blocks of ``per_kind``, in order."""
    return [
        TrialOutcome(
            i, KINDS[i // per_kind], c == "S", None if c == "S" else "missed", 1, 0.1, False, False, {}, "", 0.0, 0.0
        )  # fmt: skip
        for i, c in enumerate(spec)
    ]


def test_clips_are_a_success_and_a_failure_per_kind_in_the_fewest_waves():
    # 5 kinds x 4 trials in waves of 4 (a kind per wave): the lowest-indexed success and failure of each
    out = _outcomes("FSFS" + "SSFF" + "FFFF" + "SSSS" + "FFSF", 4)
    assert choose_clips(out, 4) == [0, 1, 4, 6, 8, 12, 16, 18]
    # nominal FFSF, lighting SSSF in waves of 2: waves 1 and 3 hold all four groups; the lowest
    # indices (0, 2, 4, 7) would take four waves
    out = _outcomes("FFSF" + "SSSF", 4)
    assert choose_clips(out, 2) == [2, 3, 6, 7]
    assert choose_clips(out, 8) == [0, 2, 4, 7]  # one wave: the lowest indices
    assert choose_clips(out[:1], 3) == [0]  # a group that does not occur is not filmed
    with pytest.raises(R2S2RError, match="trial order"):
        choose_clips(out[::-1], 4)


def _pixel_std(png: bytes) -> float:
    import matplotlib.image

    return float(np.asarray(matplotlib.image.imread(io.BytesIO(png), format="png"))[..., :3].std())


@pytest.mark.slow
def test_smoke_study_films_a_success_and_a_failure_per_kind(smoke):
    out, results = smoke
    for name, clips in results["videos"]["policies"].items():
        res = EvalResults.load(results["policies"][name]["eval_dir"])
        want = {(o.kind, o.success) for o in res.outcomes}
        assert {(c["kind"], c["success"]) for c in clips} == want and len(clips) == len(want), name
        for c in clips:
            o = res.outcomes[c["trial"]]
            assert (c["kind"], c["success"], c["failure"], c["duration"]) == (o.kind, o.success, o.failure, o.duration)
            assert (out / c["video"]).is_file() and (out / c["video"]).stat().st_size > 1000
    page = (out / "report.html").read_text()
    assert len(re.findall(r"<video ", page)) == sum(len(c) for c in results["videos"]["policies"].values())


@pytest.mark.slow
@pytest.mark.skipif(chromium_path() is None, reason="needs Debian's chromium (.ci/run and scripts/setup.sh install it)")
def test_smoke_study_page_renders_in_headless_chromium(smoke):
    out, results = smoke
    path = out / "report.html"
    with open_page(path) as page:
        media = page.evaluate(
            """(async () => {
                const videos = [...document.querySelectorAll('video')];
                await Promise.all(videos.map(v => v.readyState >= 1 ? null : new Promise(done => {
                    v.addEventListener('loadedmetadata', done); v.addEventListener('error', done);
                })));
                await Promise.all([...document.images].map(i => i.decode().catch(() => null)));
                return {
                    images: [...document.images].map(i => ({w: i.naturalWidth, h: i.naturalHeight, ok: i.complete})),
                    videos: videos.map(v => ({state: v.readyState, duration: v.duration, w: v.videoWidth,
                                              error: v.error && v.error.message})),
                    title: document.title, tables: document.querySelectorAll('table').length,
                };
            })()"""
        )
        shot = page.screenshot()
        errors = page.errors()
    assert errors == []
    figures = 2 + (results["agreement"] is not None)  # success, training (and the sim-vs-lab scatter)
    assert len(media["images"]) == figures and all(i["ok"] and i["w"] > 100 and i["h"] > 100 for i in media["images"])
    n_clips = sum(len(c) for c in results["videos"]["policies"].values())
    assert len(media["videos"]) == n_clips >= len(results["videos"]["policies"]) >= 1  # a clip per filmed policy
    for v in media["videos"]:
        assert v["error"] is None and v["state"] >= 1 and v["duration"] > 0 and v["w"] == 640, v
    assert media["title"].startswith("r2s2r study: grounding design, smoke profile") and media["tables"] >= 7
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and _pixel_std(shot) > 0.05  # not a blank page
    assert html.unescape(media["title"]) in path.read_text()
