"""llama.cpp's log output, kept off the terminal: one callback for the whole process feeds a short
history (for error messages) and any capture in progress."""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import llama_cpp

_recent: deque[str] = deque(maxlen=200)
_captures: list[CapturedOutput] = []
_installed = False


@llama_cpp.llama_log_callback
def _collect(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    line = text.decode("utf-8", errors="replace")
    _recent.append(line)
    for capture in _captures:
        capture.parts.append(line)


def quiet_llama_logs() -> None:
    """Route llama.cpp's log callback into this module (once per process)."""
    global _installed
    if not _installed:
        llama_cpp.llama_log_set(_collect, ctypes.c_void_p(0))
        _installed = True


def recent_log_lines(limit: int = 20) -> list[str]:
    return [line.rstrip() for line in list(_recent)[-limit:] if line.strip()]


def clear_log_lines() -> None:
    _recent.clear()


class CapturedOutput:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def text(self) -> str:
        return "".join(self.parts)


@contextmanager
def captured_llama_output() -> Iterator[CapturedOutput]:
    """Collect what llama.cpp logs and what it writes straight to stderr (its GBNF parser does)."""
    quiet_llama_logs()
    output = CapturedOutput()
    _captures.append(output)
    sys.stderr.flush()
    saved_fd = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield output
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            # By identity: nested captures may hold equal text.
            del _captures[next(i for i, c in enumerate(_captures) if c is output)]
            captured.seek(0)
            output.parts.append(captured.read().decode("utf-8", "replace"))
