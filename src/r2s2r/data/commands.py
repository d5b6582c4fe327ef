"""``data_check``, ``data_show`` and ``data_export``: the ``r2s2r data`` subcommands (wired in ``r2s2r.cli``)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from r2s2r import atomic
from r2s2r.data.check import check_dataset, span
from r2s2r.data.dataset import Dataset
from r2s2r.data.manifest import Manifest
from r2s2r.errors import R2S2RError, UnknownNameError
from r2s2r.files import input_dir, output_dir, output_file

SHOW_EPISODES = 4
EXPORT_FORMATS = ("lerobot",)


def data_check(path: Path, *, console: Console | None = None) -> None:
    """Verify the dataset at ``path`` and print the report; raises R2S2RError if any shard is bad."""
    console = console or Console()
    report = check_dataset(path, raise_on_error=False)
    table = Table(title=f"{path}  (schema {report.schema_version})")
    for col in ("shard", "episodes", "frames", "MiB", "status"):
        table.add_column(col, justify="right" if col in ("frames", "MiB") else "left")
    for s in report.shards:
        status = "[green]ok[/]" if s.problem is None else f"[red]{s.problem}[/]"
        table.add_row(s.name, span(list(s.episodes)), str(s.num_frames), f"{s.num_bytes / 2**20:.2f}", status)
    console.print(table)
    console.print(f"{report.num_episodes} episodes, {report.num_frames} frames, {len(report.shards)} shard files")
    if report.orphans:
        console.print(f"[yellow]unreferenced files (a writer removes them on reopen): {list(report.orphans)}[/]")
    if not report.ok:
        raise R2S2RError(f"{path}: dataset check failed:\n  " + "\n  ".join(report.problems))
    console.print("[green]dataset OK[/]")


def _counts_table(title: str, counts: Counter, header: str) -> Table:
    table = Table(title=title)
    table.add_column(header)
    table.add_column("episodes", justify="right")
    for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        table.add_row(str(name), str(n))
    return table


def _frame_grid(ds: Dataset, out: Path) -> Path | None:
    """PNG grid: rows = a few episodes, columns = camera x (first, middle, last frame)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cams = [f for f in ds.manifest.features if f.is_image]
    if not cams or len(ds) == 0:
        return None
    rows = sorted({int(i) for i in np.linspace(0, len(ds) - 1, min(SHOW_EPISODES, len(ds)))})
    cols = [(c, which) for c in cams for which in ("first", "middle", "last")]
    fig = Figure(figsize=(1.3 * len(cols), 1.45 * len(rows)), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(rows), len(cols), squeeze=False)
    for r, i in enumerate(rows):
        g, n = ds.group(i), ds.num_samples(i)
        for c, (cam, which) in enumerate(cols):
            t = {"first": 0, "middle": n // 2, "last": n - 1}[which]
            ax = axes[r, c]
            ax.imshow(g[cam.name][t])
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"{cam.obs_key}\n{which}", fontsize=7)
            if c == 0:
                ax.set_ylabel(f"ep {i}", fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return atomic.write_bytes(out, buf.getvalue())


def data_show(path: Path, out: Path | None = None, *, console: Console | None = None) -> None:
    """Print a summary of the dataset at ``path`` (episodes, frames, conditions, outcomes, provenance)
    and write a PNG grid of sample frames to ``out`` (default ``<path>/samples.png``)."""
    console = console or Console()
    path = Path(path)
    if out is not None:
        output_file(out, "a PNG of sample frames", "--out", suffix=".png", create=False)
    with Dataset(path) as ds:
        provs = [ds.provenance(i) for i in range(len(ds))]
        secs = ds.num_frames / ds.control_rate_hz
        console.print(
            f"[bold]{path}[/]: {len(ds)} episodes, {ds.num_frames} frames "
            f"({secs / 60:.1f} min at {ds.control_rate_hz:g} Hz), {len(ds.manifest.shards)} shard files"
        )
        feats = Table(title="features")
        for col in ("name", "shape", "dtype", "unit"):
            feats.add_column(col)
        for f in ds.manifest.features:
            feats.add_row(f.name, str(f.shape), f.dtype, f.unit)
        console.print(feats)
        if ds.info:
            console.print(f"info: {ds.info}")
        console.print(_counts_table("conditions", Counter(p.condition.get("kind", "-") for p in provs), "kind"))
        outcome = Counter("success" if p.success else f"failure: {p.failure or 'unknown'}" for p in provs)
        console.print(_counts_table("outcomes", outcome, "outcome"))
        console.print(
            _counts_table("provenance", Counter(f"{p.source}/{p.behavior}" for p in provs), "source/behavior")
        )
        written = _frame_grid(ds, Path(out) if out is not None else path / "samples.png")
    if written is not None:
        console.print(f"sample frames: {written}")


def data_export(
    path: Path,
    format: str,
    out: Path,
    crf: int | None = None,
    task: str | None = None,
    *,
    console: Console | None = None,
) -> None:
    """Export the dataset at ``path`` in ``format`` (one of ``EXPORT_FORMATS``) to the new folder ``out``;
    ``crf``: lossy video at that H.264 rate factor instead of lossless; ``task``: the task string."""
    from r2s2r.data.lerobot import TASK, LeRobotExport, export_lerobot
    from r2s2r.progress import count_progress
    from r2s2r.video import VideoEncoding

    console = console or Console(stderr=True)
    if format not in EXPORT_FORMATS:
        raise UnknownNameError("export format", format, EXPORT_FORMATS)
    Manifest.load(input_dir(path, "an r2s2r dataset folder", "DIR"))  # a bad DIR fails before the progress bar
    out = output_dir(out, "a LeRobot dataset folder", "--out", create=False)
    if out.is_dir() and any(out.iterdir()):
        raise R2S2RError(f"--out {out}: is not empty; expected a new or empty folder (an export never overwrites)")
    config = LeRobotExport(task=TASK if task is None else task, video=VideoEncoding(crf=crf, gop=2))
    with count_progress("export", console) as bar:
        job = bar.add_task("export", total=None, status="")
        report = export_lerobot(
            path, out, config, on_episode=lambda done, total: bar.update(job, completed=done, total=total)
        )
    video = "lossless video" if crf is None else f"video at CRF {crf}"
    console.print(
        f"{report.episodes} episodes, {report.frames} frames -> {out} "
        f"(LeRobot v3.0, {video}, {report.size_bytes / 2**20:.1f} MiB)"
    )
