"""A run's events as an iterator: the run goes on in a worker thread and its events come through a queue.

Closing the iterator early (leaving a `for` loop with `break`, or `close()`) cancels the run and waits
for it to stop, so no tool or model call outlives the loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from queue import SimpleQueue

from localagent.core.cancel import CancelToken
from localagent.core.closing import ClosesOnExit
from localagent.core.events import Event, EventSink
from localagent.loop.runner import RunResult

# Runs the agent with a sink for its events and a cancel token; returns the result.
StartRun = Callable[[EventSink, CancelToken], RunResult]


class RunStream(Iterator[Event], ClosesOnExit):
    """Iterate for the events; `result` holds the RunResult once the events are exhausted."""

    def __init__(self, start: StartRun) -> None:
        self.result: RunResult | None = None
        self._queue: SimpleQueue[Event | None] = SimpleQueue()  # None marks the end
        self._cancel = CancelToken()
        self._error: BaseException | None = None
        self._finished = False
        self._thread = threading.Thread(target=self._work, args=(start,), name="localagent-run", daemon=True)
        self._thread.start()

    def _work(self, start: StartRun) -> None:
        try:
            self.result = start(self._queue.put, self._cancel)
        except BaseException as error:  # noqa: BLE001 - raised again in the iterating thread
            self._error = error
        finally:
            self._queue.put(None)

    def __next__(self) -> Event:
        if self._finished:
            raise StopIteration
        event = self._queue.get()
        if event is None:
            self._finished = True
            self._thread.join()
            if self._error is not None:
                raise self._error
            raise StopIteration
        return event

    def close(self) -> None:
        """Cancel the run if it is still going, and wait until it has stopped."""
        thread = getattr(self, "_thread", None)
        if self._finished or thread is None:
            return
        self._cancel.cancel()
        thread.join()
        self._finished = True

    def __del__(self) -> None:
        # A `for` loop left with `break` drops the stream without closing it.
        self.close()
