"""A submitted job's answer over HTTP: one JSON body, or server-sent events as it is generated.

Nothing is sent before the job produced its first chunk, so an error found while reading the
prompt (a context too long) is still an HTTP error, not a broken stream. A client that goes away
cancels its job, whether it is running or still waiting for the model.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from localagent.serve.engine import EndOfItems, Failed, Submission
from localagent.serve.errors import RequestError, error_body
from localagent.serve.failures import describe_failure

# Nobody reads a response to a client that left; nginx's code for it keeps the access log honest.
CLIENT_GONE = 499


async def respond(request: Request, submission: Submission[dict[str, Any] | None], stream: bool) -> Response:
    gone = asyncio.ensure_future(_disconnected(request))
    first: asyncio.Future[Any] = (
        asyncio.ensure_future(submission.items.get()) if stream else asyncio.ensure_future(submission.result)
    )
    try:
        await asyncio.wait({first, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not first.done():
        first.cancel()
        submission.abandon()
        return Response(status_code=CLIENT_GONE)
    if not stream:
        return JSONResponse(first.result())  # a job's exception goes to the app's error handlers
    item = first.result()
    if isinstance(item, Failed):
        raise item.error
    return EventSourceResponse(_events(item, submission), sep="\n", ping=15)


async def _events(first: Any, submission: Submission[Any]) -> AsyncIterator[ServerSentEvent]:
    try:
        item = first
        while not isinstance(item, EndOfItems):
            if isinstance(item, Failed):
                # Mid-stream, an error can only be an event; OpenAI's SDK raises it as an APIError.
                yield ServerSentEvent(event_data(_failure_body(item.error)))
                return
            yield ServerSentEvent(event_data(item))
            item = await submission.items.get()
        yield ServerSentEvent("[DONE]")
    finally:
        submission.abandon()  # the client went away mid-stream, or nothing is left to stop


# Line ends to Python's str.splitlines and to JavaScript source, though not to SSE: escaped, a client
# that splits a stream into lines that way still reads whole events.
_UNICODE_LINE_ENDS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def event_data(body: Any) -> str:
    """The JSON of one event, on one line for any line splitter (the other line ends are escaped by JSON)."""
    return json.dumps(body, ensure_ascii=False).translate(_UNICODE_LINE_ENDS)


def _failure_body(error: BaseException) -> dict[str, Any]:
    if isinstance(error, RequestError):
        return error.body()
    return error_body(describe_failure(error), "server_error")


async def _disconnected(request: Request) -> None:
    """Returns when the client closes the connection (the body was read, so nothing else comes)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
