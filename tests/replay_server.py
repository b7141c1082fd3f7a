"""A real HTTP server on 127.0.0.1 that streams queued replies, for testing HTTP backends offline.

Each POST (`/v1/chat/completions`, `/v1/completions`, any path) takes the next queued `Reply` and
records the request. A reply is a status, headers and a list of SSE events written one by one as
HTTP chunks, with optional delays, a stall that holds the connection open, or a cut that drops it
mid-body. Error replies carry `retry-after-ms` so the SDK's retry backoff stays short in tests.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).parent / "external" / "openai_stream_tool_calls"
DONE = b"data: [DONE]\n\n"


@dataclass
class Reply:
    status: int = 200
    events: list[bytes] = field(default_factory=list)  # streamed, one HTTP chunk each
    body: bytes | None = None  # sent whole instead of events (error replies)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # before the status line
    gap: float = 0.0  # between two events
    stall_after: int | None = None  # after this many events, hold the connection open until the client leaves
    cut_after: int | None = None  # after this many events, drop the connection without ending the body


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


def sse_event(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()


def load_cases() -> list[dict[str, Any]]:
    return json.loads((RECORDED / "cases.json").read_text(encoding="utf-8"))["cases"]


def recorded_events(case: dict[str, Any]) -> list[bytes]:
    """The recorded body of a case as SSE events: raw SSE split at blank lines, or JSON lines wrapped."""
    text = (RECORDED / case["file"]).read_text(encoding="utf-8")
    if case["format"] == "sse":
        return [f"{block.strip()}\n\n".encode() for block in text.split("\n\n") if block.strip()]
    if case["format"] == "jsonl_chunks":
        return [sse_event(line.strip()) for line in text.splitlines() if line.strip()] + [DONE]
    raise ValueError(f"unknown fixture format {case['format']!r}")


class ReplayServer:
    def __init__(self, stall_limit: float = 10.0) -> None:
        self.requests: list[ReceivedRequest] = []
        self.disconnects = 0  # stalls that ended because the client closed the connection
        self.stall_limit = stall_limit
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = _QuietHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="replay-server",
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Queueing replies.

    def enqueue(self, reply: Reply) -> None:
        with self._lock:
            self._replies.append(reply)

    def enqueue_events(self, events: list[bytes], **options: Any) -> None:
        self.enqueue(Reply(events=list(events), **options))

    def enqueue_chunks(self, chunks: list[dict[str, Any]], done: bool = True, **options: Any) -> None:
        """Chunk objects as `data: {...}` events, then `data: [DONE]` unless `done` is False."""
        self.enqueue_events([sse_event(chunk) for chunk in chunks] + ([DONE] if done else []), **options)

    def enqueue_recorded(self, case: dict[str, Any], **options: Any) -> None:
        self.enqueue_events(recorded_events(case), **options)

    def enqueue_error(self, status: int, message: str, **options: Any) -> None:
        body = json.dumps({"error": {"message": message, "type": "test_error", "code": status}}).encode()
        headers = {"retry-after-ms": "5", **options.pop("headers", {})}
        self.enqueue(Reply(status=status, body=body, headers=headers, **options))

    # What was received.

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [request.body for request in self.requests]

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def _take(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        message = json.dumps({"error": {"message": "replay server: no reply queued"}}).encode()
        return Reply(status=500, body=message, headers={"x-should-retry": "false"})


class _QuietHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-reply is what several tests do on purpose


def _handler_for(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 5  # idle keep-alive connections end on their own

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                body = {"_unparsed": raw.decode(errors="replace")}
            request = ReceivedRequest(self.path, body, {k.lower(): v for k, v in self.headers.items()})
            reply = server._take(request)
            try:
                self._send(reply)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def do_GET(self) -> None:
            self._send(Reply(status=404, body=b'{"error": {"message": "not found"}}'))

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def _send(self, reply: Reply) -> None:
            if reply.delay and server._closing.wait(reply.delay):
                self.close_connection = True
                return
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.body is not None:
                if not any(name.lower() == "content-type" for name in reply.headers):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                return
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for sent, event in enumerate(reply.events):
                if sent == reply.stall_after:
                    self._stall()
                    return
                if sent == reply.cut_after:
                    self._cut()
                    return
                if sent and reply.gap and server._closing.wait(reply.gap):
                    return
                self._write_chunk(event)
            if reply.stall_after is not None and reply.stall_after >= len(reply.events):
                self._stall()
            elif reply.cut_after is not None:
                self._cut()
            else:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        def _write_chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _cut(self) -> None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

        def _stall(self) -> None:
            """Hold the connection open, sending nothing, until the client leaves or the server closes."""
            self.close_connection = True
            deadline = time.monotonic() + server.stall_limit
            while time.monotonic() < deadline and not server._closing.is_set():
                readable, _, _ = select.select([self.connection], [], [], 0.02)
                if readable and not self._peek():
                    with server._lock:
                        server.disconnects += 1
                    return

        def _peek(self) -> bytes:
            try:
                return self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                return b""

    return Handler
