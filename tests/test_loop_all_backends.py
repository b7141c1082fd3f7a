"""The runner's core loop, written once and run over every way a turn can reach it.

Each backend gets a `Script` that queues the model's side of a turn in its own form: text-tag
strings for the scripted text backend, chat objects for the scripted chat backend, and streamed
chunks on a real local HTTP server for the OpenAI chat adapter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Protocol

import pytest
from openai_chunks import call_chunks, text_chunks
from replay_server import ReplayServer

from localagent.backends.openai_chat import OpenAIChatTurn
from localagent.backends.scripted import ScriptedTurn, ScriptItem
from localagent.core.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from localagent.loop.runner import Runner, RunnerSettings, RunResult
from localagent.tools.base import Tool
from localagent.turn.model_turn import ModelTurn
from localagent.turn.prompts import REPEATED_CALL as REPEAT_NOTE

BROKEN_JSON = '{"a": 2, "b": }'


class Script(Protocol):
    """The model's side of a run, one turn at a time, for one backend."""

    def call(self, name: str, arguments: str, call_id: str) -> None: ...
    def answer(self, text: str) -> None: ...
    def turn(self) -> ModelTurn: ...
    def tool_choices(self) -> list[str]: ...


class ScriptedText:
    def __init__(self) -> None:
        self.items: list[ScriptItem] = []
        self._turn: ScriptedTurn | None = None

    def call(self, name: str, arguments: str, call_id: str) -> None:
        self.items.append(f"Thought: I will use {name}.\nAction: {name}\nAction Input: {arguments}\n")

    def answer(self, text: str) -> None:
        self.items.append(f"Thought: I know it.\nFinal Answer: {text}")

    def turn(self) -> ModelTurn:
        self._turn = ScriptedTurn(self.items)
        return self._turn

    def tool_choices(self) -> list[str]:
        assert self._turn is not None
        return [str(call.tool_choice) for call in self._turn.calls]


class ScriptedChat(ScriptedText):
    def call(self, name: str, arguments: str, call_id: str) -> None:
        self.items.append(
            {"content": "", "tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}
        )

    def answer(self, text: str) -> None:
        self.items.append({"content": text})


class ChatOverHttp:
    def __init__(self, server: ReplayServer) -> None:
        self.server = server

    def call(self, name: str, arguments: str, call_id: str) -> None:
        self.server.enqueue_chunks(call_chunks((call_id, name, arguments)))

    def answer(self, text: str) -> None:
        self.server.enqueue_chunks(text_chunks(text))

    def turn(self) -> ModelTurn:
        return OpenAIChatTurn(self.server.url, "test-model", timeout=3.0, max_retries=0)

    def tool_choices(self) -> list[str]:
        return [body["tool_choice"] for body in self.server.bodies]


@pytest.fixture(params=["scripted-text", "scripted-chat", "chat-over-http"])
def script(request: pytest.FixtureRequest) -> Iterator[Script]:
    if request.param == "scripted-text":
        yield ScriptedText()
    elif request.param == "scripted-chat":
        yield ScriptedChat()
    else:
        with ReplayServer() as server:
            yield ChatOverHttp(server)
            assert server.pending == 0, f"{server.pending} queued replies were never requested"


def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def run(script: Script, tools: list[Tool] | None = None, **settings: Any) -> RunResult:
    """The loop's rules alike on every backend."""
    runner = Runner(script.turn(), tools or [Tool.from_function(add)], RunnerSettings(**settings))
    return runner.run([SystemMessage(content="Be brief."), UserMessage(content="What is 2 + 3?")])


def tool_messages(messages: list[Message]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def requests_made(messages: list[Message]) -> list[tuple[str, str]]:
    return [(r.id, r.name) for m in messages if isinstance(m, AssistantMessage) for r in m.tool_requests]


def test_direct_answer(script: Script) -> None:
    script.answer("5")
    result = run(script)
    assert (result.status, result.answer, result.steps) == ("final", "5", 1)
    assert script.tool_choices() == ["auto"]


def test_a_tool_call_then_an_answer(script: Script) -> None:
    script.call("add", '{"a": 2, "b": 3}', "c1")
    script.answer("2 + 3 is 5.")
    result = run(script)
    assert (result.status, result.answer, result.steps) == ("final", "2 + 3 is 5.", 2)
    ((request_id, name),) = requests_made(result.messages)
    assert name == "add"
    (observation,) = tool_messages(result.messages)
    assert (observation.request_id, observation.name, observation.is_error) == (request_id, "add", False)
    assert observation.content == "5"  # far from the step limit: no note on the steps left


def test_invalid_json_arguments_are_fed_back_and_corrected(script: Script) -> None:
    script.call("add", BROKEN_JSON, "c1")
    script.call("add", '{"a": 2, "b": 3}', "c2")
    script.answer("5")
    result = run(script)
    assert (result.status, result.answer) == ("final", "5")
    bad, good = tool_messages(result.messages)
    assert bad.is_error and bad.content.startswith("Tool error: Invalid JSON arguments for tool add: ")
    assert (good.is_error, good.content.splitlines()[0]) == (False, "5")
    assert [request_id for request_id, _ in requests_made(result.messages)] == [
        bad.request_id,
        good.request_id,
    ]


def test_an_unknown_tool_is_answered_with_the_tools_there_are(script: Script) -> None:
    script.call("multiply", '{"a": 2, "b": 3}', "c1")
    script.answer("5")
    result = run(script)
    assert result.status == "final"
    (message,) = tool_messages(result.messages)
    assert message.is_error
    assert message.content.startswith("Tool error: unknown tool 'multiply'. Available tools: add.")


def test_the_last_step_turns_tools_off_and_the_model_answers(script: Script) -> None:
    script.call("add", '{"a": 2, "b": 3}', "c1")
    script.answer("5")
    result = run(script, max_steps=2)
    assert (result.status, result.answer) == ("final", "5")
    assert script.tool_choices() == ["auto", "none"]
    assert tool_messages(result.messages)[0].content.endswith(
        "Give your final answer next.]\nThe question to answer now: What is 2 + 3?"
    )


def test_calls_at_the_last_step_are_refused_and_the_run_ends_at_max_steps(script: Script) -> None:
    ran: list[int] = []

    def count(n: int) -> str:
        """Count."""
        ran.append(n)
        return str(n)

    for n in range(3):
        script.call("count", json.dumps({"n": n}), f"c{n}")
    result = run(script, [Tool.from_function(count)], max_steps=2)
    assert result.status == "max_steps"
    assert script.tool_choices() == ["auto", "none", "none"]
    assert ran == [0]
    refused = tool_messages(result.messages)[1:]
    assert len(refused) == 2 and all(m.is_error and "step limit is reached" in m.content for m in refused)


def test_a_duplicate_call_is_not_run_again_and_ends_the_tool_calls(script: Script) -> None:
    ran: list[int] = []

    def count(n: int) -> str:
        """Count."""
        ran.append(n)
        return f"counted {n}"

    script.call("count", '{"n": 1}', "c1")
    script.call("count", '{"n": 1}', "c2")
    script.answer("done")
    result = run(script, [Tool.from_function(count)])
    assert (result.status, ran) == ("final", [1])
    first, second = tool_messages(result.messages)
    assert first.content.startswith("counted 1")
    assert second.content.startswith(REPEAT_NOTE)
    assert second.request_id != first.request_id
