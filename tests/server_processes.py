"""Real server processes on 127.0.0.1 for end-to-end tests: llama-cpp-python's `llama_cpp.server`
and `localagent serve`, each in its own session so teardown stops it and whatever it started."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from localagent.models.registry import EMBEDDED_MODEL, resolve_model

STARTUP_SECONDS = 180
KEY_VARIABLE = "LOCALAGENT_TEST_SERVE_KEY"
_READY = re.compile(r"at (http://127\.0\.0\.1:\d+/v1)$", re.MULTILINE)


@dataclass(frozen=True)
class ServerProcess:
    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def running(self) -> bool:
        return self.process.poll() is None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`python -m llama_cpp.server --chat_format chatml-function-calling` on the embedded model."""
    yield from serving_with_llama_cpp(resolve_model(EMBEDDED_MODEL).path, tmp_path_factory)


def serving_with_llama_cpp(model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """llama-cpp-python's own server on `model`, as its users start it for tool calls (with llama.cpp's
    CPU variant loaded first, which the server does not do in a build that carries variants)."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable, "-m", "localagent.backends.cpu_backend",
        "llama_cpp.server", "--model", str(model),
        "--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096",
    ]  # fmt: skip
    with _started(command, log) as process:
        server = ServerProcess(f"http://127.0.0.1:{port}/v1", log, process)
        _wait_until_answering(server)
        yield server


@contextlib.contextmanager
def localagent_server(log: Path, *flags: str, api_key: str | None = None) -> Iterator[ServerProcess]:
    """`localagent serve --port 0 FLAGS...`, ready once it printed where it listens."""
    command = [sys.executable, "-m", "localagent", "serve", "--port", "0", *flags]
    env = {KEY_VARIABLE: api_key} if api_key else {}
    if api_key:
        command += ["--api-key-env", KEY_VARIABLE]
    with _started(command, log, env) as process:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            found = _READY.search(log.read_text(encoding="utf-8", errors="replace"))
            if found:
                server = ServerProcess(found[1], log, process)
                _wait_until_answering(server, api_key)
                yield server
                return
            if process.poll() is not None:
                pytest.fail(f"localagent serve exited with status {process.returncode}:\n{_tail(log)}")
            time.sleep(0.2)
        pytest.fail(f"localagent serve did not start within {STARTUP_SECONDS} s:\n{_tail(log)}")


@contextlib.contextmanager
def _started(
    command: list[str], log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
    try:
        yield process
    finally:
        stop(process)


def _wait_until_answering(server: ServerProcess, api_key: str | None = None) -> None:
    request = urllib.request.Request(f"{server.url}/models")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if not server.running():
            pytest.fail(f"the server exited with status {server.process.returncode}:\n{server.tail()}")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    pytest.fail(f"the server did not answer within {STARTUP_SECONDS} s:\n{server.tail()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
