"""``VideoWriter``: RGB frames to an H.264 MP4 with PyAV, written to a temporary name and renamed into place.

The one video writer of r2s2r: ``generate-one``, ``eval --videos`` and the LeRobot export use it
(it sits below every stage, so none imports another for it). ``VideoEncoding`` says how to encode:

- ``PREVIEW`` (the default): libx264, yuv420p, CRF 23: small files every browser plays. Lossy;
  odd frame sizes are padded to even (4:2:0 needs even sizes) by repeating the last row/column.
- ``LOSSLESS``: libx264rgb at QP 0 (H.264 High 4:4:4 Predictive, decoded as ``gbrp``): every
  decoded RGB pixel equals the written one (FFmpeg-based decoders play it, browsers do not).

Frames are ``uint8`` RGB arrays (H, W, 3), all of one size; frame ``i`` has presentation time
``i / fps``. A writer that is not closed (an exception in its ``with`` block, ``abort()``, a
killed process) leaves no file at ``path``, at most a hidden temporary beside it.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from r2s2r.atomic import temp_beside
from r2s2r.errors import ConfigError, R2S2RError
from r2s2r.files import output_file

VIDEO_CAMERAS = ("head_left", "right_wrist")  # what generate-one and eval --videos film, side by side
TILE_SIZE = (320, 240)  # (width, height) of each camera's tile in those videos, px


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@dataclass(frozen=True)
class VideoEncoding:
    """H.264 settings: ``crf`` None is lossless RGB (libx264rgb, QP 0); an integer is libx264 yuv420p
    at that constant rate factor (0-51, lower is better and larger). ``gop``: frames between key
    frames (None: the encoder's default); short GOPs make random access cheap."""

    crf: int | None = 23
    gop: int | None = None
    preset: str = "medium"

    def __post_init__(self) -> None:
        if self.crf is not None and (not _is_int(self.crf) or not 0 <= self.crf <= 51):
            raise ConfigError(f"video crf: expected an integer in 0..51 or None (lossless), got {self.crf!r}")
        if self.gop is not None and (not _is_int(self.gop) or self.gop < 1):
            raise ConfigError(f"video gop: expected a positive integer or None, got {self.gop!r}")

    @property
    def lossless(self) -> bool:
        return self.crf is None

    @property
    def codec(self) -> str:
        return "libx264rgb" if self.lossless else "libx264"

    @property
    def pix_fmt(self) -> str:
        """The encoder's input pixel format (a decoder reports ``gbrp`` for the lossless one)."""
        return "rgb24" if self.lossless else "yuv420p"

    def options(self) -> dict[str, str]:
        return {"qp": "0", "preset": self.preset} if self.lossless else {"crf": str(self.crf), "preset": self.preset}


PREVIEW = VideoEncoding()
LOSSLESS = VideoEncoding(crf=None)


def _rate(fps: float) -> Fraction:
    if isinstance(fps, bool) or not isinstance(fps, int | float) or not math.isfinite(fps) or fps <= 0:
        raise ConfigError(f"video fps: expected a positive number, got {fps!r}")
    return Fraction(fps).limit_denominator(1001)


class VideoWriter:
    """An MP4 being written to a temporary file beside ``path`` (opened at the first frame, which sets
    the size); ``close()`` finishes it and renames it to ``path``, ``abort()`` discards it. As a
    context manager it closes on success and aborts on an exception. A video of no frames is not
    written (MP4 cannot hold an empty video stream): ``close()`` then returns None."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        fps: float,
        encoding: VideoEncoding = PREVIEW,
        what: str = "an MP4 video",
        option: str | None = None,
    ) -> None:
        self.path = output_file(path, what, option, suffix=".mp4")
        self.rate = _rate(fps)
        self.encoding = encoding
        self.frames = 0
        self._encoded = 0
        self._state = "new"  # new -> open -> closed | aborted
        self._size: tuple[int, int] | None = None  # (width, height) of the frames given
        self._container = None
        self._stream = None
        self._tmp: str | None = None

    def _open(self, size: tuple[int, int]) -> None:
        import av

        w, h = (int(n) for n in size)
        if w < 1 or h < 1:
            raise R2S2RError(f"{self.path}: video frame size must be positive, got {w}x{h}")
        try:
            fd, self._tmp = temp_beside(self.path)
        except OSError as e:
            raise R2S2RError(f"{self.path}: cannot be written ({e.strerror or e})") from None
        os.close(fd)
        self._state = "open"
        try:
            self._container = av.open(self._tmp, "w", format="mp4")
            stream = self._container.add_stream(self.encoding.codec, rate=self.rate)
            even = not self.encoding.lossless  # 4:2:0 chroma needs even sizes
            stream.width, stream.height = (w + w % 2, h + h % 2) if even else (w, h)
            stream.pix_fmt = self.encoding.pix_fmt
            stream.time_base = 1 / self.rate
            stream.options = self.encoding.options()
            if self.encoding.gop is not None:
                stream.codec_context.gop_size = self.encoding.gop
            self._stream = stream
        except BaseException:
            self.abort()
            raise
        self._size = (w, h)

    def write(self, frame: np.ndarray) -> None:
        """Append one frame: uint8 RGB (H, W, 3), the size of the first."""
        import av

        frame = np.asarray(frame)
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise R2S2RError(f"{self.path}: a video frame must be uint8 RGB (H, W, 3), got {frame.dtype} {frame.shape}")
        if self._state == "new":
            self._open((frame.shape[1], frame.shape[0]))
        if self._state != "open":
            raise R2S2RError(f"{self.path}: the video writer is {self._state}; no frame can be added")
        if frame.shape[1::-1] != self._size:
            w, h = self._size
            raise R2S2RError(f"{self.path}: frame {self.frames} is {frame.shape[1]}x{frame.shape[0]}; expected {w}x{h}")
        pad_h, pad_w = self._stream.height - frame.shape[0], self._stream.width - frame.shape[1]
        if pad_h or pad_w:
            frame = np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0)), mode="edge")
        vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
        vf.pts = self.frames
        try:
            packets = self._stream.encode(vf)
            self._encoded += sum(p.size for p in packets)
            self._container.mux(packets)
        except BaseException:
            self.abort()
            raise
        self.frames += 1

    @property
    def encoded_bytes(self) -> int:
        """Bytes of the encoded frames so far (the encoder may hold back the last few until ``close``;
        the file adds a small header and index)."""
        return self._encoded

    def close(self) -> Path | None:
        """Flush the encoder, finish the file and rename it to ``path``; returns ``path`` (None, and
        no file, when no frame was written)."""
        if self._state == "closed":
            return self.path if self.frames else None
        if self._state == "new":
            self._state = "closed"
            return None
        if self._state != "open":
            raise R2S2RError(f"{self.path}: the video writer was aborted; there is no video to close")
        try:
            packets = self._stream.encode(None)
            self._encoded += sum(p.size for p in packets)
            self._container.mux(packets)
            self._container.close()
            self._container = self._stream = None
            fd = os.open(self._tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self._tmp, self.path)
        except BaseException as e:
            self.abort()
            if isinstance(e, OSError):
                raise R2S2RError(f"{self.path}: cannot be written ({e.strerror or e})") from None
            raise
        self._tmp, self._state = None, "closed"
        return self.path

    def abort(self) -> None:
        """Discard the video: nothing is left at ``path`` (an earlier file there is untouched)."""
        container, self._container, self._stream = self._container, None, None
        if container is not None:
            with contextlib.suppress(Exception):  # a half-written file is removed below, whatever its state
                container.close()
        if self._tmp is not None:
            Path(self._tmp).unlink(missing_ok=True)
            self._tmp = None
        if self._state != "closed":
            self._state = "aborted"

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def side_by_side(images: list[np.ndarray], cameras: tuple[str, ...] = VIDEO_CAMERAS) -> np.ndarray:
    """One video frame from RGB uint8 images of ``cameras`` (any size: each is resized to ``TILE_SIZE``)."""
    import cv2

    if len(images) != len(cameras):
        raise R2S2RError(f"video frame: expected {len(cameras)} images {cameras}, got {len(images)}")
    tiles = [
        img if img.shape[1::-1] == TILE_SIZE else cv2.resize(img, TILE_SIZE, interpolation=cv2.INTER_AREA)
        for img in images
    ]
    return np.concatenate(tiles, axis=1)
