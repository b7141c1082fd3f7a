"""What both OpenAI-compatible backends share: the client, the cancellable stream, errors as one line.

A request is always streamed. The stream is read in a worker thread so the caller can stop waiting
the moment its cancel token fires; SDK errors that its own retries did not fix become a
`BackendError` with one clear line that never holds the API key.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, TypeVar

import httpx2
import openai

from localagent.core.cancel import Cancelled, CancelToken
from localagent.errors import BackendError

# Servers that need no key (llama.cpp, vLLM) still get one: the SDK refuses to start without it.
PLACEHOLDER_API_KEY = "no-key"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

# Parameters a server may refuse by name (reasoning models refuse sampling); dropped once refused.
OPTIONAL_PARAMS = ("stream_options", "max_tokens", "temperature", "top_p", "seed")

T = TypeVar("T")
# The cancel token of the call a worker thread is making; read by the request hook below.
_CALL_CANCEL: ContextVar[CancelToken | None] = ContextVar("localagent_call_cancel", default=None)


# --- the client ---------------------------------------------------------------------------------------


class BaseUrlError(BackendError):
    """An --api-base that is no URL: a mistake in the command, not a failure of the server."""

    exit_code = 2


def make_openai_client(base_url: str, api_key: str, timeout: float, max_retries: int) -> openai.OpenAI:
    if not base_url.startswith(("http://", "https://")):
        raise BaseUrlError(f"invalid base URL {base_url!r}: it must start with http:// or https://")
    http_client = openai.DefaultHttpx2Client(event_hooks={"request": [_refuse_cancelled_request]})
    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key or PLACEHOLDER_API_KEY,
        # The read timeout is the longest silence allowed between two chunks.
        timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
        max_retries=max_retries,
        http_client=http_client,
    )


def _refuse_cancelled_request(request: httpx2.Request) -> None:
    """httpx2 request hook: after a cancel, the SDK's retry loop must not send the request again."""
    token = _CALL_CANCEL.get()
    if token is not None and token.cancelled:
        raise Cancelled()


@dataclass(frozen=True)
class SamplingParams:
    """Request parameters both endpoints take; None leaves the server's default."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None

    def as_params(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if value is not None}


# --- the stream -----------------------------------------------------------------------------------------


class CancellableStream(Generic[T]):
    """An SDK stream read in a worker thread, so the caller stops waiting the moment `cancel` fires.

    The caller's thread never blocks in a socket read: not while connecting, not while the server
    thinks before its first byte, not in the SDK's retry backoff. On cancel the connection is shut
    down so the worker's blocked read returns and the server stops generating. (`Stream.close()`
    from another thread does not wake a blocked read: the read then waits for its timeout.)
    `open_stream` may also return a plain iterable (a whole reply); then there is no connection
    to shut down, and the worker is left to finish on its own.
    """

    def __init__(self, open_stream: Callable[[], Iterable[T]], cancel: CancelToken, poll: float = 0.05):
        self._open_stream = open_stream
        self._cancel = cancel
        self._poll = poll
        self._items: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stream: Iterable[T] | None = None
        self._stopped = False
        self._finished = False

    @property
    def opened(self) -> bool:
        """True once the response headers arrived: later errors happened mid-reply."""
        return self._stream is not None

    @property
    def content_type(self) -> str | None:
        """The media type of the response, once it arrived."""
        if not isinstance(self._stream, openai.Stream):
            return None
        return self._stream.response.headers.get("content-type")

    def __iter__(self) -> Iterator[T]:
        threading.Thread(target=self._pump, name="localagent-http-stream", daemon=True).start()
        try:
            while True:
                kind, value = self._next_item()
                if kind == "chunk":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    return
        finally:
            self.stop()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if isinstance(self._stream, openai.Stream) and not self._finished:
                _shut_down_connection(self._stream.response)

    def _next_item(self) -> tuple[str, Any]:
        while True:
            self._cancel.raise_if_cancelled()
            try:
                return self._items.get(timeout=self._poll)
            except queue.Empty:
                continue

    def _pump(self) -> None:
        _CALL_CANCEL.set(self._cancel)
        last: tuple[str, Any] = ("end", None)
        try:
            stream = self._open_stream()
            with self._lock:
                self._stream = stream
                stopped = self._stopped
            for chunk in () if stopped else stream:
                if self._stopped:
                    break
                self._items.put(("chunk", chunk))
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread, which raises it
            last = ("error", error)
        finally:
            with self._lock:
                self._finished = True
                if isinstance(self._stream, openai.Stream):
                    self._stream.close()
            self._items.put(last)


def _shut_down_connection(response: httpx2.Response) -> None:
    network_stream = response.extensions.get("network_stream")
    sock = network_stream.get_extra_info("socket") if network_stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)


def read_stream(
    open_stream: Callable[[], Iterable[T]],
    on_chunk: Callable[[T], None],
    cancel: CancelToken,
    where: ErrorContext,
) -> bool:
    """Hand every chunk to `on_chunk`; True when the connection dropped mid-reply (what came is kept).

    SDK errors before the reply started (and timeouts at any point) are raised as they are, for the
    caller to map with `backend_error`; an event that is not JSON, or a body that is neither events
    nor JSON (a web page), is a `BackendError` at once.
    """
    stream: CancellableStream[T] = CancellableStream(open_stream, cancel)
    received = 0
    try:
        for chunk in stream:
            received += 1
            on_chunk(chunk)
    except openai.APIConnectionError as error:
        if not stream.opened or isinstance(error, openai.APITimeoutError):
            raise
        return True
    except json.JSONDecodeError as error:
        raise BackendError(
            f"the server at {where.base_url} sent a malformed event: {first_line(str(error))}"
        ) from None
    finally:
        stream.stop()
    content_type = stream.content_type
    if not received and content_type is not None and not _is_events_or_json(content_type):
        raise not_json(where, content_type)
    return False


def not_json(where: ErrorContext, content_type: str | None) -> BackendError:
    """The error for a reply that is not the API's JSON: a proxy's or web server's page, most often."""
    kind = f"content type {first_line(content_type)}" if content_type else "no content type"
    if where.base_url.endswith("/v1"):
        hint = "a web server or proxy may be answering in the API's place"
    else:
        hint = "is this the API's base URL? It usually ends in /v1"
    return BackendError(
        f"the server at {where.base_url} returned something that is not JSON ({kind}): {hint}"
    )


def _is_events_or_json(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "text/event-stream" or media_type.endswith(("/json", "+json", "/x-ndjson"))


# --- SDK errors -> BackendError ---------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorContext:
    base_url: str
    model: str
    api_key: str = field(repr=False)
    timeout: float
    max_retries: int
    api_key_env: str = DEFAULT_KEY_ENV  # named in the message when the key is refused


def backend_error(error: openai.OpenAIError, where: ErrorContext) -> BackendError:
    """One clear line for an SDK error that the SDK's own retries did not fix; never the API key."""
    url = where.base_url
    if isinstance(error, openai.APITimeoutError):
        text = f"no response from {url} within {where.timeout:g} s (timeout){_after_retries(where)}"
    elif isinstance(error, openai.APIConnectionError):
        text = f"cannot connect to {url}: {_connection_problem(error)}{_after_retries(where)}"
    elif isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        text = (
            f"authentication failed (HTTP {error.status_code}): check the API key in ${where.api_key_env}"
            f" ({server_message(error)})"
        )
    elif isinstance(error, openai.NotFoundError):
        message = server_message(error)
        if "model" in message.lower():
            text = f"model {where.model!r} not found at {url} (HTTP 404): {message}"
        else:
            text = f"not found (HTTP 404) at {url}: check the base URL (it usually ends in /v1): {message}"
    elif isinstance(error, openai.RateLimitError):
        text = f"rate limited (HTTP 429) by {url}{_after_retries(where)}: {server_message(error)}"
    elif isinstance(error, openai.APIStatusError) and error.status_code >= 500:
        text = (
            f"server error (HTTP {error.status_code}) from {url}{_after_retries(where)}: "
            f"{server_message(error)}"
        )
    elif isinstance(error, openai.APIStatusError):
        text = f"the server at {url} rejected the request (HTTP {error.status_code}): {server_message(error)}"
    elif isinstance(error, openai.APIError):
        text = f"the server at {url} reported an error: {server_message(error)}"
    else:
        text = f"request to {url} failed: {first_line(str(error))}"
    return BackendError(scrub_key(text, where.api_key))


def refused_options(error: openai.APIStatusError, params: dict[str, Any]) -> set[str]:
    """The optional parameters of `params` that the server's refusal names, to leave out from then on."""
    message = f"{error.message} {error.body}".lower()
    return {name for name in OPTIONAL_PARAMS if name in params and name in message}


def server_message(error: openai.APIError) -> str:
    body = error.body
    message: Any = None
    if isinstance(body, dict):
        message = body.get("message") or body.get("detail") or body.get("error")
        if message is not None and not isinstance(message, str):
            message = json.dumps(message, ensure_ascii=False)
    elif isinstance(body, str):
        message = body
    return first_line(message or error.message, limit=300) or "no details"


def _after_retries(where: ErrorContext) -> str:
    return f" after {where.max_retries} retries" if where.max_retries else ""


def _connection_problem(error: BaseException) -> str:
    cause: BaseException | None = error.__cause__
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or "connection refused" in str(cause).lower():
            return "connection refused"
        if cause.__cause__ is None:
            return first_line(str(cause)) or type(cause).__name__
        cause = cause.__cause__
    return "connection failed"


def first_line(text: str, limit: int = 200) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def scrub_key(text: str, api_key: str) -> str:
    """`text` with the API key masked; keys too short to be secret are left alone."""
    return text.replace(api_key, "***") if len(api_key) >= 4 else text
