"""A line at the bottom of a terminal that counts a model turn's seconds and tokens while it runs.

It is redrawn in place once a second and erased before anything else is written, so it never mixes
with a run's output and leaves nothing behind. It is only ever drawn on a terminal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

import click

TICK_SECONDS = 0.5


class LiveLine:
    def __init__(self, stream: TextIO, write: Callable[[str], None], lock: threading.RLock) -> None:
        """`write` puts text on `stream`; `lock` is held by every writer to it."""
        self.enabled = stream.isatty()
        self._write = write
        self._lock = lock
        self._started: float | None = None
        self._tokens = 0
        self._shown = 0  # characters of the line on screen; spaces erase it on any terminal
        self._may_draw: Callable[[], bool] = lambda: True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, may_draw: Callable[[], bool]) -> None:
        """Count a new turn; `may_draw` says whether the cursor sits where the line may go."""
        if not self.enabled:
            return
        with self._lock:
            self._started, self._tokens, self._may_draw = time.monotonic(), 0, may_draw
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="localagent-live-line", daemon=True)
            self._thread.start()

    def tokens(self, count: int) -> None:
        self._tokens = count

    def stop(self) -> None:
        """The turn is over: erase the line and draw no more until the next start."""
        with self._lock:
            self._started = None
            self.erase()

    def erase(self) -> None:
        """Erase the line if it is on screen; callers hold the lock."""
        if self._shown:
            self._write("\r" + " " * self._shown + "\r")
            self._shown = 0

    def close(self) -> None:
        self.stop()
        self._stop.set()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            with self._lock:
                if self._started is None or not self._may_draw():
                    continue
                seconds = time.monotonic() - self._started
                if seconds < 1:
                    continue
                tokens = f", {self._tokens} tokens" if self._tokens else ", reading the prompt"
                text = f"  … {seconds:.0f} s{tokens}"
                self._write("\r" + click.style(text.ljust(self._shown), dim=True))
                self._shown = max(self._shown, len(text))
