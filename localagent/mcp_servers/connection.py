"""MCP servers over stdio, used from synchronous code.

The SDK is asyncio; the runner is not. The client sessions of all of an agent's servers run on one
event loop in a background thread, and each method here waits there for its result, watching the
run's cancel token.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import tempfile
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import anyio
import mcp_types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from localagent.core.cancel import Cancelled, CancelToken
from localagent.errors import LocalagentError
from localagent.mcp_servers.spec import McpServer
from localagent.tools.base import ToolError

T = TypeVar("T")
# Time the SDK may take to stop a server: close its stdin, wait, then terminate and kill it.
SHUTDOWN_SECONDS = 8.0
# The SDK logs what a broken server sends with a traceback; with no logging set up, Python would print
# it on stderr. Our one-line messages say what happened instead.
logging.getLogger("mcp").addHandler(logging.NullHandler())


class McpServerError(LocalagentError):
    """An MCP server that cannot be used: it will not start, or it stopped."""

    exit_code = 1


class EventLoopThread:
    """An asyncio event loop running in a daemon thread, for coroutines submitted from other threads."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="localagent-mcp", daemon=True)
        self._thread.start()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def wait(
        self, future: concurrent.futures.Future[T], seconds: float, cancel: CancelToken | None = None
    ) -> T:
        """The future's result; TimeoutError after `seconds`, Cancelled when `cancel` fires first."""
        remaining = seconds
        while True:
            try:
                return future.result(timeout=min(0.1, max(remaining, 0)))
            except concurrent.futures.TimeoutError:
                remaining -= 0.1
                if cancel is not None and cancel.cancelled:
                    future.cancel()
                    raise Cancelled() from None
                if remaining <= 0:
                    future.cancel()
                    raise TimeoutError from None

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()


class McpConnection:
    """One server process and its client session, kept open from `start` to `close`."""

    def __init__(self, spec: McpServer, events: EventLoopThread) -> None:
        self.spec = spec
        self._events = events
        # The server's stderr, kept out of the terminal; its last line explains a failure. Appending,
        # so reading it back never moves where the server writes.
        self._stderr = tempfile.TemporaryFile("a+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self.stopped: str | None = None  # why the server can no longer be used, once it stopped

    @property
    def label(self) -> str:
        return f"MCP server {self.spec.label!r}"

    def start(self) -> concurrent.futures.Future[list[mcp_types.Tool]]:
        """Start the server; the future gives its tools, or raises McpServerError with one line."""
        return self._events.submit(self._start())

    def wait_started(self, started: concurrent.futures.Future[list[mcp_types.Tool]]) -> list[mcp_types.Tool]:
        try:
            # The SDK stops a server that misses the timeout itself; this only guards against a hang.
            return self._events.wait(started, self.spec.start_timeout + SHUTDOWN_SECONDS)
        except TimeoutError:
            raise McpServerError(self._start_timed_out()) from None

    def call(self, name: str, arguments: dict[str, Any], cancel: CancelToken) -> str:
        """Call one tool; every failure is a ToolError whose message the model reads."""
        session = self._session
        if self.stopped or session is None:
            raise ToolError(self.stopped or f"{self.label} is not running")
        request = session.call_tool(name, arguments, read_timeout_seconds=self.spec.timeout)
        future = self._events.submit(request)
        try:
            result = self._events.wait(future, self.spec.timeout + 5, cancel)
        except TimeoutError:
            raise ToolError(self._timed_out()) from None
        except MCPError as error:
            raise ToolError(self._refusal(error)) from None
        except Cancelled:
            raise
        except Exception as error:  # noqa: BLE001 - whatever the SDK raises becomes a tool error
            raise ToolError(f"{self.label} failed: {_one_line(error)}") from None
        text = result_text(result)
        if result.is_error:
            raise ToolError(text or f"{self.label} reported an error without a message")
        return text

    def close(self) -> None:
        """Stop the server: close its stdin, wait, terminate; what the SDK's stdio client does."""
        if self._stop is not None and self._task is not None and not self._events.loop.is_closed():
            stop, task = self._stop, self._task
            future = self._events.submit(_stop_and_wait(stop, task))
            try:
                future.result(SHUTDOWN_SECONDS)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                future.cancel()
        self._stderr.close()

    async def _start(self) -> list[mcp_types.Tool]:
        ready: asyncio.Future[list[mcp_types.Tool]] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._serve(ready, self._stop))
        return await ready

    async def _serve(self, ready: asyncio.Future[list[mcp_types.Tool]], stop: asyncio.Event) -> None:
        """Hold the transport and the session open, in the one task that entered them, until `stop`."""
        parameters = StdioServerParameters(
            command=self.spec.command, args=list(self.spec.args), env=dict(self.spec.env) or None
        )
        try:
            async with (
                stdio_client(parameters, errlog=self._stderr) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(self.spec.start_timeout):
                    await session.initialize()
                    tools = await _all_tools(session)
                self._session = session
                ready.set_result(tools)
                await stop.wait()
        except BaseException as error:  # every way a server fails becomes one line
            problem = self._start_failure(error)
            if not ready.done():
                ready.set_exception(McpServerError(problem))
            if isinstance(error, asyncio.CancelledError):
                raise
        finally:
            self._session = None

    def _start_failure(self, error: BaseException) -> str:
        error = _innermost(error)
        if isinstance(error, FileNotFoundError):
            return f"{self.label} will not start: no program {self.spec.command!r}"
        if isinstance(error, PermissionError):
            return f"{self.label} will not start: {self.spec.command!r} cannot be run"
        if isinstance(error, TimeoutError):
            return self._start_timed_out()
        said = self.last_stderr_line()
        detail = f": {said}" if said else f" ({_one_line(error)})"
        return f"{self.label} stopped before it was ready{detail}"

    def _refusal(self, error: MCPError) -> str:
        if error.error.code == mcp_types.CONNECTION_CLOSED:
            said = self.last_stderr_line()
            self.stopped = f"{self.label} has stopped{f': {said}' if said else ''}; its tools cannot be used"
            return self.stopped
        if error.error.code == mcp_types.REQUEST_TIMEOUT:
            return self._timed_out()
        return f"{self.label} refused the call: {error.error.message}"

    def _start_timed_out(self) -> str:
        return f"{self.label} did not start within {self.spec.start_timeout:g} s"

    def _timed_out(self) -> str:
        return f"{self.label} did not answer within {self.spec.timeout:g} s"

    def last_stderr_line(self) -> str:
        if self._stderr.closed:
            return ""
        self._stderr.seek(0)
        lines = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""


async def _all_tools(session: ClientSession) -> list[mcp_types.Tool]:
    listed = await session.list_tools()
    tools = list(listed.tools)
    while listed.next_cursor:
        listed = await session.list_tools(params=mcp_types.PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
    return tools


async def _stop_and_wait(stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    stop.set()
    await asyncio.wait({task}, timeout=SHUTDOWN_SECONDS - 1)


def result_text(result: mcp_types.CallToolResult) -> str:
    """What a tool result says, as text for the model: its text blocks, and a short note for the rest."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4} bytes, not shown]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(f"[resource {resource.uri}: {resource.mime_type or 'binary'}, not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _innermost(error: BaseException) -> BaseException:
    """The first real error inside the SDK's nested task-group exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
