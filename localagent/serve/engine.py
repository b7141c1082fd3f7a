"""The one loaded model, and the queue of requests that take turns on it.

Requests run one at a time, in the order they came, on one worker thread: the model and its KV
cache are shared, so each request reuses the prompt tokens the last one left there. A job emits
what it produces as it goes (chunks for a stream); a cancelled job that has not started never runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from localagent.backends.decoding import Sampling
from localagent.backends.local_generator import LocalGenerator
from localagent.backends.local_turn import chat_template_of
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import CancelToken
from localagent.formats.base import ReplyFormat
from localagent.formats.chat_template import ChatTemplate
from localagent.formats.react.format import ReactFormat
from localagent.models.registry import ResolvedModel
from localagent.serve.reply_memory import ReplyMemory

T = TypeVar("T")
Emit = Callable[[Any], None]


class EndOfItems:
    """The last item a job emits."""


@dataclass(frozen=True)
class Failed:
    """The job raised this, after emitting what came before."""

    error: BaseException


END = EndOfItems()


@dataclass
class Submission(Generic[T]):
    items: asyncio.Queue[Any]
    result: asyncio.Future[T]
    cancel: CancelToken

    def abandon(self) -> None:
        """The client is gone: stop the job, or drop it from the queue if it has not started."""
        self.cancel.cancel()
        self.result.cancel()


@dataclass(frozen=True)
class ServedModel:
    id: str
    # Other names a request may use for it: the name or path it was started with.
    aliases: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, model: ResolvedModel, given: str) -> ServedModel:
        return cls(model.display_name, frozenset({given, str(model.path), model.path.stem}))

    def answers_to(self, name: str) -> bool:
        return name == self.id or name in self.aliases


def served_format(reply_format: ReplyFormat) -> ReplyFormat:
    """The format without localagent's agent instructions: a client brings its own prompt."""
    if isinstance(reply_format, ReactFormat):
        return dataclasses.replace(reply_format, agent_instructions=False)
    return reply_format


class Engine:
    def __init__(self, turn: TextTurn, model: ServedModel) -> None:
        if not isinstance(turn.generator, LocalGenerator):
            raise TypeError("the server runs a local model's turn")
        self.model = model
        self.generator: LocalGenerator = turn.generator
        self.reply_format: ReplyFormat = served_format(turn.format)
        # The GGUF's own template, for requests with nothing to call (None: the model has none).
        self.chat_template: ChatTemplate | None = chat_template_of(turn.generator.session)
        self.memory = ReplyMemory()
        self._formats: dict[int, ReplyFormat] = {self.reply_format.max_actions: self.reply_format}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="localagent-serve")
        self._running: set[CancelToken] = set()
        self._running_lock = threading.Lock()

    @property
    def max_actions(self) -> int:
        return self.reply_format.max_actions

    def format_for(self, max_actions: int) -> ReplyFormat:
        """The served format with another cap on the calls in one reply (parallel_tool_calls: false)."""
        if max_actions not in self._formats:
            self._formats[max_actions] = dataclasses.replace(self.reply_format, max_actions=max_actions)
        return self._formats[max_actions]

    def generator_for(self, max_tokens: int, sampling: Sampling) -> LocalGenerator:
        settings = dataclasses.replace(self.generator.settings, max_tokens=max_tokens, sampling=sampling)
        return self.generator.with_settings(settings)

    def submit(self, job: Callable[[Emit, CancelToken], T]) -> Submission[T]:
        """Queue `job(emit, cancel)`; what it emits arrives in `items`, ended by END (or Failed)."""
        loop = asyncio.get_running_loop()
        items: asyncio.Queue[Any] = asyncio.Queue()
        cancel = CancelToken()

        def emit(item: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the server is shutting down and its loop closed
                loop.call_soon_threadsafe(items.put_nowait, item)

        def run() -> T:
            if cancel.cancelled:
                raise asyncio.CancelledError()
            with self._running_lock:
                self._running.add(cancel)
            try:
                return job(emit, cancel)
            except BaseException as error:
                emit(Failed(error))
                raise
            finally:
                with self._running_lock:
                    self._running.discard(cancel)
                emit(END)

        result = loop.run_in_executor(self._worker, run)
        # A streamed job's error reaches the client through `items`; the future's copy is read here
        # so asyncio does not report it as never retrieved.
        result.add_done_callback(lambda done: done.cancelled() or done.exception())
        return Submission(items, result, cancel)

    def close(self) -> None:
        """Stop the running job and drop the queued ones."""
        with self._running_lock:
            for cancel in self._running:
                cancel.cancel()
        self._worker.shutdown(wait=True, cancel_futures=True)
