"""A cancel token shared by the runner, the backends and the tools."""

from __future__ import annotations

import threading


class Cancelled(Exception):
    """Raised inside a turn or a tool when the run was cancelled."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; return True at once if cancelled meanwhile."""
        return self._event.wait(seconds)
