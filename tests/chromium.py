"""Headless Chromium for tests, driven through the DevTools protocol over a pipe (standard library only).

``open_page(path)`` starts Debian's ``chromium`` with ``--remote-debugging-pipe`` (the protocol's
JSON messages, each ended by a NUL byte, on file descriptors 3 (to Chromium) and 4 (from it)),
opens ``path`` in a fresh tab, waits for its load event and returns a ``Page``: evaluate
JavaScript (promises awaited), take a PNG screenshot, and read every console error, uncaught
exception and failed load the page reported.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "chromium"


def chromium_path() -> str | None:
    return shutil.which(CHROMIUM)


class Page:
    """One tab of a headless Chromium, attached to with a flat session."""

    def __init__(self, proc: subprocess.Popen, to_chrome: int, from_chrome: int) -> None:
        self.proc, self._out, self._in = proc, to_chrome, from_chrome
        self._buf = b""
        self._id = 0
        self.session: str | None = None
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError("chromium: no answer in time")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited (status {self.proc.poll()})")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, timeout: float = 60.0, session: bool = True) -> dict:
        """Call ``method``; returns its result (events that arrive meanwhile go to ``events``)."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session is not None:
            msg["sessionId"] = self.session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"chromium: {method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        for e in self.events:
            if e.get("method") == method:
                return e
        while True:
            e = self._read_message(deadline)
            self.events.append(e)
            if e.get("method") == method:
                return e

    def evaluate(self, expression: str, timeout: float = 60.0) -> Any:
        """The value of a JavaScript expression (a promise is awaited), as JSON."""
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, timeout
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"chromium: {expression[:80]!r} threw {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, full_page: bool = False) -> bytes:
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full_page})
        return base64.b64decode(shot["data"])

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads the page reported so far."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif m == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(p["exceptionDetails"])[:500])
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"log ({p['entry'].get('source')}): {p['entry'].get('text')}")
        return out


@contextmanager
def open_page(path: Path, width: int = 1280, height: int = 900, timeout: float = 120.0):
    """``path`` loaded in headless Chromium: yields a ``Page`` after its load event."""
    exe = chromium_path()
    if exe is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    to_r, to_w = os.pipe()  # we write, chromium reads on fd 3
    from_r, from_w = os.pipe()  # chromium writes on fd 4
    # the child's ends above fd 4, so that moving them to 3 and 4 overwrites neither
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_r, from_w)]
    for fd in (to_r, from_w):
        os.close(fd)
    profile = tempfile.mkdtemp(prefix="r2s2r-chromium-")

    def fds() -> None:  # in the child, before the fds not kept are closed: the protocol on 3 and 4
        os.dup2(high[0], 3)
        os.dup2(high[1], 4)

    args = [
        exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--mute-audio",
        "--no-first-run", "--no-default-browser-check", "--disable-extensions",
        f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank",
    ]  # fmt: skip
    proc = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for fd in high:
        os.close(fd)
    page = Page(proc, to_w, from_r)
    try:
        target = page.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        page.session = page.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        screen = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        page.send("Emulation.setDeviceMetricsOverride", screen)
        page.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, timeout=timeout)
        page.wait_event("Page.loadEventFired", timeout=timeout)
        yield page
    finally:
        try:
            page.send("Browser.close", timeout=10, session=False)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(to_w)
        os.close(from_r)
        shutil.rmtree(profile, ignore_errors=True)
