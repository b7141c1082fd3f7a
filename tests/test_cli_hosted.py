"""`localagent run --api-base ...` against the replay server, through the CLI's entry point.

Most runs call `localagent.cli.main` in this process (what the user sees, without the start-up
cost); a run with a real tool call and the Ctrl-C run are subprocesses (`python -m localagent`).

Every run passes an API key through `--api-key-env`; no run may show it on stdout, on stderr or in
the transcript.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai_chunks import call_chunks, chunk, reasoning_chunks, text_chunks
from replay_server import ReplayServer, Reply

from localagent.cli import main
from localagent.core.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from localagent.loop.transcript import read_messages

KEY_ENV = "TEST_LLM_API_KEY"
API_KEY = "sk-cli-secret-0042"
TASK = "What is 6 times 7?"


@dataclass
class Finished:
    code: int
    stdout: str
    stderr: str
    transcript: Path

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.transcript.read_text(encoding="utf-8").splitlines()]

    def assert_key_never_shown(self) -> None:
        assert API_KEY not in self.stdout
        assert API_KEY not in self.stderr
        if self.transcript.exists():
            assert API_KEY not in self.transcript.read_text(encoding="utf-8")


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CliRunner:
    return CliRunner(tmp_path, monkeypatch, capsys)


class CliRunner:
    """Runs `localagent run` in this process through `localagent.cli.main` (fast), or as a subprocess."""

    def __init__(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.transcript = tmp_path / "run.jsonl"
        self._monkeypatch = monkeypatch
        self._capsys = capsys

    def arguments(self, base_url: str, *extra: str) -> list[str]:
        return [
            "run", TASK, "--api-base", base_url, "--model", "test-model", "--api-key-env", KEY_ENV,
            "--tools", "calculator", "--workspace", str(self.workspace),
            "--transcript", str(self.transcript), *extra,
        ]  # fmt: skip

    def command(self, base_url: str, *extra: str) -> list[str]:
        return [sys.executable, "-m", "localagent", *self.arguments(base_url, *extra)]

    def environment(self, **settings: str) -> dict[str, str]:
        """The test's environment (user dirs already isolated) plus the key and LOCALAGENT_* settings."""
        return {**os.environ, KEY_ENV: API_KEY, **{f"LOCALAGENT_{k.upper()}": v for k, v in settings.items()}}

    def run(self, base_url: str, *extra: str, **settings: str) -> Finished:
        """`localagent run ...` as the entry point runs it, in this process."""
        for name, value in self.environment(**settings).items():
            self._monkeypatch.setenv(name, value)
        self._monkeypatch.setattr(sys, "argv", ["localagent", *self.arguments(base_url, *extra)])
        self._capsys.readouterr()
        with pytest.raises(SystemExit) as exit_status:
            main()
        captured = self._capsys.readouterr()
        finished = Finished(int(exit_status.value.code or 0), captured.out, captured.err, self.transcript)
        finished.assert_key_never_shown()
        return finished

    def spawn(self, base_url: str, *extra: str, timeout: float = 30) -> Finished:
        """`python -m localagent run ...` in a process of its own."""
        done = subprocess.run(
            self.command(base_url, *extra),
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        finished = Finished(done.returncode, done.stdout, done.stderr, self.transcript)
        finished.assert_key_never_shown()
        return finished


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{text}"
    assert "Traceback" not in text
    return lines[0]


# --- HTTP faults ----------------------------------------------------------------------------------------


def test_a_tool_call_then_an_answer_with_the_key_sent_and_never_shown(
    replay: ReplayServer, cli: CliRunner
) -> None:
    replay.enqueue_chunks(call_chunks(("c1", "calculator", '{"expression": "6 * 7"}')))
    replay.enqueue_chunks(text_chunks("6 times 7 is 42."))
    finished = cli.spawn(replay.url, "--json")
    assert finished.code == 0, finished.stderr
    payload = json.loads(finished.stdout)
    assert (payload["status"], payload["answer"], payload["steps"]) == ("final", "6 times 7 is 42.", 2)
    assert all(request.headers["authorization"] == f"Bearer {API_KEY}" for request in replay.requests)
    assert replay.bodies[1]["messages"][-1]["content"].startswith("42")


def test_rate_limited_then_success_is_retried(replay: ReplayServer, cli: CliRunner) -> None:
    replay.enqueue_error(429, "Rate limit reached")
    replay.enqueue_chunks(text_chunks("42."))
    finished = cli.run(replay.url, "--quiet")
    assert (finished.code, finished.stdout, finished.stderr) == (0, "42.\n", "")
    assert len(replay.requests) == 2


def test_server_errors_past_the_retries_end_with_one_clear_line_and_a_transcript(
    replay: ReplayServer, cli: CliRunner
) -> None:
    for _ in range(3):
        replay.enqueue_error(500, "upstream exploded")
    finished = cli.run(replay.url, "--quiet")
    assert finished.code == 1
    assert one_line(finished.stderr) == (
        f"localagent: run ended with status error: server error (HTTP 500) from {replay.url} after 2 "
        f"retries: upstream exploded (transcript: {finished.transcript})"
    )
    assert len(replay.requests) == 3
    history = read_messages(finished.transcript)
    assert [type(message) for message in history] == [SystemMessage, UserMessage]
    last = finished.records()[-1]
    assert (last["type"], last["status"]) == ("run_finished", "error")


@pytest.mark.parametrize("mode", ["chat", "completions"])
def test_a_web_page_instead_of_the_api_is_one_clear_line_without_retries(
    replay: ReplayServer, cli: CliRunner, mode: str
) -> None:
    page = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
    replay.enqueue(Reply(status=200, body=page, headers={"Content-Type": "text/html; charset=utf-8"}))
    finished = cli.run(replay.url, "--quiet", "--api-mode", mode)
    assert finished.code == 1
    assert one_line(finished.stderr) == (
        f"localagent: run ended with status error: the server at {replay.url} returned something that is "
        "not JSON (content type text/html; charset=utf-8): a web server or proxy may be answering in the "
        f"API's place (transcript: {finished.transcript})"
    )
    assert len(replay.requests) == 1


def test_connection_refused_is_one_clear_line(cli: CliRunner) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    finished = cli.run(url, "--quiet", max_retries="0")  # the SDK's backoff would add a second
    assert finished.code == 1
    assert one_line(finished.stderr) == (
        f"localagent: run ended with status error: cannot connect to {url}: connection refused "
        f"(transcript: {finished.transcript})"
    )


def test_a_server_slower_than_the_timeout_is_one_clear_line(replay: ReplayServer, cli: CliRunner) -> None:
    replay.enqueue_chunks(text_chunks("late"), delay=5)
    started = time.monotonic()
    finished = cli.run(replay.url, "--quiet", "--timeout", "0.5", max_retries="0")
    assert time.monotonic() - started < 4.5
    assert finished.code == 1
    assert f"no response from {replay.url} within 0.5 s (timeout)" in one_line(finished.stderr)


def test_a_refused_key_is_named_by_its_variable_and_never_echoed(
    replay: ReplayServer, cli: CliRunner
) -> None:
    replay.enqueue_error(401, f"Incorrect API key provided: {API_KEY}")
    finished = cli.run(replay.url, "--json")
    assert finished.code == 1
    error = json.loads(finished.stdout)["error"]
    expected = (
        f"authentication failed (HTTP 401): check the API key in ${KEY_ENV} (Incorrect API key provided: ***)"
    )
    assert error == expected


def test_a_stream_cut_in_a_tool_call_is_recoverable_and_nothing_is_lost(
    replay: ReplayServer, cli: CliRunner
) -> None:
    arguments = '{"expression": "6 * 7"}'
    replay.enqueue_chunks(call_chunks(("c1", "calculator", arguments)), cut_after=4)
    replay.enqueue_chunks(call_chunks(("c2", "calculator", arguments)))
    replay.enqueue_chunks(text_chunks("42."))
    finished = cli.run(replay.url, "--json")
    assert finished.code == 0, finished.stderr
    assert json.loads(finished.stdout)["answer"] == "42."
    history = read_messages(finished.transcript)
    partial, feedback, call, result, answer = history[2:]
    # Four events arrived: the role, the call's id and name, and two pieces of its arguments.
    assert partial == AssistantMessage(content='[unfinished call to calculator: {"expressi]')
    assert isinstance(feedback, UserMessage) and feedback.feedback and "interrupted" in feedback.content
    assert isinstance(call, AssistantMessage) and call.tool_requests[0].id == "c2"
    assert isinstance(result, ToolMessage) and result.content.startswith("42")
    assert answer == AssistantMessage(content="42.")
    formats = [r for r in finished.records() if r["type"] == "format_error"]
    assert [r["problem"] for r in formats] == ["cut_off"]


# --- Ctrl-C -----------------------------------------------------------------------------------------------


class StreamReader:
    """Collects a pipe's bytes as they come; the display ends a Thought line only at the next event."""

    def __init__(self, pipe: Any) -> None:
        self._fd = pipe.fileno()
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    @property
    def text(self) -> str:
        return b"".join(self._chunks).decode(errors="replace")

    def wait_for(self, text: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while text not in self.text and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.02)
        return text in self.text

    def join(self, seconds: float) -> None:
        self._thread.join(seconds)

    def _read(self) -> None:
        while block := os.read(self._fd, 4096):
            self._chunks.append(block)


def test_ctrl_c_while_the_server_stalls_mid_stream_cancels_and_keeps_the_transcript(
    replay: ReplayServer, cli: CliRunner
) -> None:
    events = [*reasoning_chunks("Let me think about this."), chunk({"content": "42"})]
    replay.enqueue_chunks(events, stall_after=4)  # after the reasoning, before the answer
    process = subprocess.Popen(
        cli.command(replay.url), env=cli.environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        stderr = StreamReader(process.stderr)
        assert stderr.wait_for("Thought: Let me think about this.", 15), stderr.text
        process.send_signal(signal.SIGINT)
        # Not communicate(): it would also read stderr, racing the reader thread for its last lines.
        process.wait(timeout=10)
        stdout = process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
    stderr.join(5)
    finished = Finished(process.returncode, stdout.decode(), stderr.text, cli.transcript)
    finished.assert_key_never_shown()
    assert finished.code == 1
    assert "Traceback" not in finished.stderr
    assert "cancelling" in finished.stderr
    assert finished.stderr.rstrip().endswith(
        f"localagent: run ended with status cancelled: cancelled by the user (transcript: {cli.transcript})"
    )
    system, task = read_messages(cli.transcript)
    assert isinstance(system, SystemMessage) and isinstance(task, UserMessage)
    assert task.content.endswith(TASK) and not task.feedback
    last = finished.records()[-1]
    assert (last["type"], last["status"]) == ("run_finished", "cancelled")
    # The connection was dropped, so a real server stops generating.
    deadline = time.monotonic() + 3
    while replay.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert replay.disconnects == 1
