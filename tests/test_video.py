"""The shared VideoWriter: H.264 MP4s that read back with PyAV, written atomically."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.video import LOSSLESS, PREVIEW, VideoEncoding, VideoWriter, side_by_side


def _frames(n: int, h: int, w: int, seed: int = 0) -> np.ndarray:
    """Smooth gradients with a moving block: content a video codec can keep close to the source."""
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((n, h, w, 3), dtype=np.uint8)
    for t in range(n):
        out[t] = np.stack([xx * 255 // w, yy * 255 // h, np.full_like(xx, 40 + 10 * t)], -1)
        out[t, 5:15, 3 * t : 3 * t + 10] = (220, 30, 30)
    return out


def _read(path: Path) -> tuple[np.ndarray, list[float], dict]:
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        info = {"codec": s.codec_context.name, "pix_fmt": s.pix_fmt, "size": (s.width, s.height), "fps": s.average_rate}
        decoded = list(c.decode(s))
    return np.stack([f.to_ndarray(format="rgb24") for f in decoded]), [f.time for f in decoded], info


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".")]


def test_preview_is_h264_at_the_given_fps_and_pads_odd_sizes(tmp_path):
    src = _frames(12, 33, 47)
    with VideoWriter(tmp_path / "a.mp4", 10.0) as w:
        for f in src:
            w.write(f)
    frames, times, info = _read(tmp_path / "a.mp4")
    assert info == {"codec": "h264", "pix_fmt": "yuv420p", "size": (48, 34), "fps": 10}
    assert len(frames) == w.frames == 12
    np.testing.assert_allclose(times, np.arange(12) / 10, atol=1e-6)
    # lossy: 4.2 levels of mean error measured on these steep gradients (96 px renders: 2-4.5); a
    # swapped channel order gives ~90, so 8 separates a faithful picture from a wrong one
    err = np.abs(frames[:, :33, :47].astype(int) - src)
    assert err.mean() < 8 and np.abs(frames[..., ::-1][:, :33, :47].astype(int) - src).mean() > 30
    # the padding repeats the last row and column
    assert np.abs(frames[:, 33].astype(int) - frames[:, 32]).mean() < 8
    assert np.abs(frames[:, :, 47].astype(int) - frames[:, :, 46]).mean() < 8
    assert _leftovers(tmp_path) == []


def test_lossless_returns_every_pixel(tmp_path):
    src = np.random.default_rng(1).integers(0, 256, size=(7, 21, 35, 3), dtype=np.uint8)
    with VideoWriter(tmp_path / "b.mp4", 12.5, LOSSLESS) as w:
        for f in src:
            w.write(f)
    frames, times, info = _read(tmp_path / "b.mp4")
    assert 0.9 * (tmp_path / "b.mp4").stat().st_size < w.encoded_bytes < (tmp_path / "b.mp4").stat().st_size
    assert (info["codec"], info["pix_fmt"], info["size"]) == ("h264", "gbrp", (35, 21))
    np.testing.assert_array_equal(frames, src)
    np.testing.assert_allclose(times, np.arange(7) / 12.5, atol=1e-6)


def test_a_failed_write_leaves_no_file_and_keeps_an_old_one(tmp_path):
    with pytest.raises(RuntimeError), VideoWriter(tmp_path / "c.mp4", 10) as w:
        w.write(_frames(1, 16, 16)[0])
        raise RuntimeError("killed mid-episode")
    assert list(tmp_path.iterdir()) == []
    old = tmp_path / "d.mp4"
    old.write_bytes(b"previous video")
    w = VideoWriter(old, 10)
    w.write(_frames(1, 16, 16)[0])
    with pytest.raises(R2S2RError, match="expected 16x16"):
        w.write(_frames(1, 16, 18)[0])  # a frame of another size aborts nothing by itself...
    w.abort()  # ...the owner aborts
    assert old.read_bytes() == b"previous video" and _leftovers(tmp_path) == []
    with pytest.raises(R2S2RError, match="aborted"):
        w.close()


def test_a_killed_process_leaves_no_video(tmp_path):
    out = tmp_path / "k.mp4"
    code = (
        "import os, signal, numpy as np\n"
        "from r2s2r.video import VideoWriter\n"
        f"w = VideoWriter({str(out)!r}, 10)\n"
        "for i in range(5): w.write(np.full((16, 16, 3), i * 40, np.uint8))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    proc = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": src}, capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    assert not out.exists()  # at most a hidden temporary, never a video that looks complete
    assert all(p.name.startswith(".k.mp4.") and p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_no_frames_no_file_and_bad_input_is_named(tmp_path):
    w = VideoWriter(tmp_path / "e.mp4", 10)
    assert w.close() is None and list(tmp_path.iterdir()) == []
    with pytest.raises(R2S2RError, match="uint8 RGB"):
        VideoWriter(tmp_path / "f.mp4", 10).write(np.zeros((8, 8, 3), np.float32))
    with pytest.raises(R2S2RError, match="suffix"):
        VideoWriter(tmp_path / "g.avi", 10)
    with pytest.raises(ConfigError, match="fps"):
        VideoWriter(tmp_path / "h.mp4", 0)
    with pytest.raises(ConfigError, match="crf"):
        VideoEncoding(crf=60)
    assert (PREVIEW.codec, LOSSLESS.codec) == ("libx264", "libx264rgb")


def test_side_by_side_tiles_the_cameras():
    a, b = np.zeros((48, 48, 3), np.uint8), np.full((240, 320, 3), 200, np.uint8)
    frame = side_by_side([a, b])
    assert frame.shape == (240, 640, 3) and frame[:, :320].max() == 0 and frame[:, 320:].min() == 200
    with pytest.raises(R2S2RError, match="expected 2 images"):
        side_by_side([a])
