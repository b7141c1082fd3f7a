"""End to end against a real server: `python -m llama_cpp.server` on the embedded model, on 127.0.0.1.

The model is a 270M base model, so the task is an easy calculator question with greedy decoding and
the assertions are about the protocol (a tool call answered by its result, then a final answer,
well-formed turns), not about the model's arithmetic.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from server_processes import ServerProcess

from localagent.backends.openai_chat import OpenAIChatTurn
from localagent.backends.openai_http import SamplingParams
from localagent.core.cancel import CancelToken
from localagent.core.messages import NamedToolChoice, SystemMessage, ToolRequests, UserMessage
from localagent.tools.calculator import calculator_tool

pytestmark = pytest.mark.slow

TASK = "What is 12 times 7?"


@dataclass(frozen=True)
class CliRun:
    code: int
    payload: dict[str, Any]
    stderr: str
    transcript: Path
    seconds: float

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.transcript.read_text(encoding="utf-8").splitlines()]

    def summary(self) -> str:
        calls = [
            (r["name"], r["raw_arguments"])
            for m in self.payload["messages"]
            for r in m.get("tool_requests") or []
        ]
        return (
            f"status {self.payload['status']}, {self.payload['steps']} steps, calls {calls}, "
            f"answer {self.payload['answer']!r}, usage {self.payload['usage']}, {self.seconds:.1f} s"
        )


def run_cli(server: ServerProcess, tmp_path: Path, *extra: str) -> CliRun:
    transcript = tmp_path / "run.jsonl"
    command = [
        sys.executable, "-m", "localagent", "run", TASK, "--api-base", server.url, "--model", "x",
        "--tools", "calculator", "--max-tokens", "64", "--workspace", str(tmp_path),
        "--transcript", str(transcript), "--json", *extra,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - started
    assert done.stdout, f"no output (exit {done.returncode}):\n{done.stderr}\nserver:\n{server.tail()}"
    run = CliRun(done.returncode, json.loads(done.stdout), done.stderr, transcript, seconds)
    print(run.summary())  # shown with -s: what the model did
    return run


def assert_calls_answered_then_final(run: CliRun) -> None:
    """At least one tool call, each answered by the tool message with its id, then a final answer."""
    requests = assert_final_after_answered_calls(run)
    assert requests, run.summary()


def assert_final_after_answered_calls(run: CliRun) -> list[dict[str, Any]]:
    """A final answer, and every tool call before it (if the model made any) answered by the tool
    message with its id; returns the calls."""
    assert run.code == 0, run.summary()
    assert run.payload["status"] == "final"
    assert run.payload["answer"].strip()
    messages = run.payload["messages"]
    requests = [r for m in messages if m["role"] == "assistant" for r in m["tool_requests"]]
    answered = {m["request_id"] for m in messages if m["role"] == "tool"}
    assert {r["id"] for r in requests} <= answered
    assert messages[-1]["role"] == "assistant" and not messages[-1]["tool_requests"]
    return requests


# --- chat: native tool calls ------------------------------------------------------------------------------


def test_cli_chat_run_makes_a_tool_call_then_answers(llama_server: ServerProcess, tmp_path: Path) -> None:
    # The last step turns tools off (tool_choice none), so the run must end with an answer.
    run = run_cli(llama_server, tmp_path, "--max-steps", "2")
    assert_calls_answered_then_final(run)


def test_chat_turn_with_a_named_tool_streams_a_call_to_it(llama_server: ServerProcess) -> None:
    # chatml-function-calling forces the named call and constrains its arguments to the schema.
    turn = OpenAIChatTurn(llama_server.url, "x", sampling=SamplingParams(max_tokens=48, temperature=0.0))
    history = [SystemMessage(content="You are a careful assistant."), UserMessage(content=TASK)]
    tool = calculator_tool()
    try:
        result = turn(history, [tool.spec], NamedToolChoice(name="calculator"), CancelToken())
    finally:
        turn.close()
    assert isinstance(result, ToolRequests)
    (request,) = result.requests
    assert request.name == "calculator" and request.parse_error is None
    assert isinstance(request.arguments, dict) and isinstance(request.arguments.get("expression"), str)


# --- completions: text tags ---------------------------------------------------------------------------------


def test_cli_completions_with_gbnf_writes_only_well_formed_turns(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    run = run_cli(
        llama_server, tmp_path, "--api-mode", "completions", "--grammar-field", "gbnf", "--max-steps", "3"
    )
    assert_calls_answered_then_final(run)
    assert not [r for r in run.records() if r["type"] == "format_error"]
    requests = [r for m in run.payload["messages"] for r in m.get("tool_requests") or []]
    assert all(r["name"] == "calculator" and r["parse_error"] is None for r in requests)
    history = [m for m in run.payload["messages"] if m["role"] in ("assistant", "tool")]
    # Every assistant turn kept its Thought: the grammar made it write one.
    assert all(m["reasoning"] for m in history if m["role"] == "assistant")


def test_cli_completions_without_a_grammar_reads_the_reply_tolerantly(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    run = run_cli(
        llama_server, tmp_path, "--api-mode", "completions", "--grammar-field", "none", "--max-steps", "3"
    )
    # Without a grammar nothing holds the base model to the tool choice: it may answer, call the
    # calculator, or call a tool that does not exist, even on the last step. Whatever it wrote, the run
    # reads it into well-formed turns, answers every call it runs (the first call to an unknown tool
    # with that error) and ends on its own terms: an answer, the step limit, or the limit of malformed
    # replies in a row (each of them answered with feedback).
    assert run.payload["status"] in ("final", "max_steps", "error"), run.summary()
    replies = [m for m in run.payload["messages"] if m["role"] == "assistant"]
    problems = [r["problem"] for r in run.records() if r["type"] == "format_error"]
    if run.payload["status"] == "error":
        assert "malformed replies in a row" in run.payload["error"], run.summary()
        assert len(replies) == run.payload["steps"] == len(problems)
    else:
        assert len(replies) == run.payload["steps"] >= len(problems) + 1
    answered = {m["request_id"] for m in run.payload["messages"] if m["role"] == "tool"}
    run_calls = [r for m in replies[:-1] for r in m["tool_requests"]]
    assert {r["id"] for r in run_calls} <= answered, run.summary()
    first_unknown = next((r for r in run_calls if r["name"] != "calculator"), None)
    if first_unknown is not None:
        results = {m["request_id"]: m["content"] for m in run.payload["messages"] if m["role"] == "tool"}
        assert "unknown tool" in results[first_unknown["id"]], run.summary()
    settings = next(r for r in run.records() if r["type"] == "settings")
    assert (settings["backend"], settings["settings"]["grammar_field"]) == ("openai-completions:x", "none")
