"""Ctrl-C: the first press cancels the run cleanly, a second press exits at once."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from localagent.core.cancel import CancelToken


@contextmanager
def cancel_on_interrupt(cancel: CancelToken, on_first: Callable[[], None]) -> Iterator[None]:
    def handle(signum: int, frame: FrameType | None) -> None:
        if cancel.cancelled:
            raise KeyboardInterrupt
        cancel.cancel()
        on_first()

    previous = signal.signal(signal.SIGINT, handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
