"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages,
each ended by a NUL byte, on the child's fds 3 and 4), with the standard library only. The report's browser
tests and benchmarks/bench_report.py load pages with it, evaluate script in them and take screenshots.
"""

from __future__ import annotations

import base64
import fcntl
import itertools
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


def _above_four(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page. ``with Browser() as b: b.load(url); b.evaluate("...")``."""

    def __init__(self, binary: str | None = None, width: int = 1100, height: int = 900, timeout: float = 60.0):
        binary = binary or find_chromium()
        if not binary:
            raise BrowserError("no Chromium on PATH (Debian: apt-get install chromium)")
        self.timeout, self.width, self.height = timeout, width, height
        self._profile = tempfile.mkdtemp(prefix="goal-report-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # The child's ends above 4, so that putting them on 3 and 4 neither clobbers one with the other nor
        # is a dup2 onto itself (which would leave the close-on-exec flag set)
        to_chrome_r, from_chrome_w = (_above_four(fd) for fd in (to_chrome_r, from_chrome_w))

        def fds() -> None:  # in the child: the protocol's fixed descriptors
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        args = [binary, "--headless", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                "--no-default-browser-check", "--hide-scrollbars", "--mute-audio", f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=None if os.environ.get("GOAL_BROWSER_DEBUG") else subprocess.DEVNULL,
                                     close_fds=False, preexec_fn=fds,
                                     start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        target = next(t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Runtime.enable", session=True)
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe (exit {self.proc.poll()})")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    def send(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"id": next(self._ids), "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == message["id"]:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._message(deadline))

    def load(self, url: str) -> float:
        """Navigate and wait until the page has loaded and painted its first frame after that; the seconds
        it took, as the page's own clock measured them from the start of the navigation."""
        self.events.clear()
        self.send("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")
        return self.evaluate("new Promise(done => requestAnimationFrame(() => setTimeout(() => "
                             "done(performance.now() / 1000))))")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def _frame(self) -> None:
        self.evaluate("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")

    def _viewport(self, height: int) -> None:
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=self.width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self._frame()

    def screenshot(self, path: Path, full_page: bool = True, down_to: str | None = None) -> Path:
        """The page (``full_page``: all of it, else the viewport), or from its top down to the bottom of the
        element ``down_to`` (a CSS selector) and a margin. The viewport is stretched over what is captured, so
        what the page renders only on screen (``content-visibility: auto``) is rendered."""
        params: dict[str, Any] = {"format": "png"}
        if full_page or down_to:
            bottom = (f"document.querySelector({json.dumps(down_to)}).getBoundingClientRect().bottom + "
                      "window.scrollY + 16" if down_to else "document.documentElement.scrollHeight")
            height = 0
            for _ in range(8):  # until rendering what came into view no longer moves the bottom
                now = math.ceil(self.evaluate(bottom))
                if now == height:
                    break
                height = now
                self._viewport(height)
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}
        data = self.send("Page.captureScreenshot", session=True, **params)["data"]
        if full_page or down_to:
            self._viewport(self.height)
        path.write_bytes(base64.b64decode(data))
        return path
