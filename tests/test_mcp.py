"""Tools from MCP servers: real server processes over stdio (tests/mcp_test_server.py, written with the
SDK's server side, and the published mcp-server-time), driven by a scripted model through the real
agent, runner and command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from localagent import Agent, McpServer
from localagent.backends.decoding import LlamaSession
from localagent.backends.local_turn import open_local_turn
from localagent.backends.scripted import ScriptedTurn
from localagent.core.cancel import CancelToken
from localagent.core.events import RunFinished, ToolStarted
from localagent.core.messages import (
    AssistantMessage,
    Final,
    Message,
    NamedToolChoice,
    ToolChoice,
    ToolMessage,
    ToolRequest,
    ToolRequests,
)
from localagent.loop.transcript import read_messages
from localagent.models.registry import ResolvedModel
from localagent.settings import load_settings
from localagent.testing import answer, call
from localagent.tools.base import Tool
from localagent.tools.spec import ToolSpec
from localagent.turn.model_turn import ModelTurn

SERVER = str(Path(__file__).parent / "mcp_test_server.py")
PYTHON = sys.executable


def server_spec(*flags: str, **fields: Any) -> McpServer:
    return McpServer(command=PYTHON, args=(SERVER, *flags), **fields)


@dataclass
class Relay:
    """A model whose script each test sets, so one agent and its servers serve the whole module."""

    script: ScriptedTurn = field(default_factory=lambda: ScriptedTurn([]))
    name: str = "relay"

    def __call__(self, *turn: Any, **options: Any) -> Any:
        return self.script(*turn, **options)


@dataclass
class Served:
    agent: Agent
    relay: Relay
    notes: Path

    def run(self, *replies: str, **options: Any) -> list[ToolMessage]:
        self.relay.script = ScriptedTurn(list(replies))
        result = self.agent.copy(**options).run("use the server's tools")
        assert result.status == "final", result.error
        return [m for m in result.messages if isinstance(m, ToolMessage)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("served")
    relay = Relay()
    servers = [
        server_spec("--clash", name="srv", prefix="srv_", env={"NOTE_FILE": str(folder / "note.txt")}),
        server_spec(name="slow", prefix="slow_", timeout=1),  # the same tools, a one-second call timeout
    ]
    with Agent(model=relay, mcp=servers, workspace=folder, tools="default") as agent:
        agent.load()
        yield Served(agent, relay, folder / "note.txt")


def tool_names(agent: Agent) -> list[str]:
    return [tool.name for tool in agent.tools]


def test_the_servers_tools_join_the_tool_set_under_their_prefixes(served: Served) -> None:
    names = tool_names(served.agent)
    assert names[:4] == ["list_dir", "read_file", "search_text", "calculator"]
    assert {"srv_add", "srv_read_file", "slow_sleep", "slow_add"} <= set(names)
    tools = {tool.name: tool for tool in served.agent.tools}
    # The schema the model sees is the server's, without titles, and it gets a grammar like any tool.
    assert tools["srv_add"].spec.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    assert tools["srv_add"].spec.description == "Add two integers."
    assert (tools["srv_add"].changes_files, tools["srv_note"].changes_files) == (False, True)


def test_results_and_errors_become_tool_messages(served: Served) -> None:
    messages = served.run(
        call("srv_add", {"a": 2, "b": 3}),
        call("srv_fail", {"reason": "the disk is full"}),
        call("srv_image", {}),
        call("srv_shout", {"words": "hi"}),  # not its schema: refused before the server is asked
        call("srv_shout", {"text": "hi"}),
        answer("done"),
    )
    contents = [m.content.split("\n[")[0] for m in messages]  # without the steps-left note
    assert contents == [
        "5",
        "Tool error: Error executing tool fail: it failed because the disk is full",
        "[image: image/png, 6 bytes, not shown]",
        "Tool error: invalid arguments for srv_shout: arguments: 'text' is a required property",
        "HI!",
    ]
    assert [m.is_error for m in messages] == [False, True, False, True, False]


def test_a_call_slower_than_the_timeout_is_a_tool_error_and_the_server_goes_on(served: Served) -> None:
    started = time.monotonic()
    messages = served.run(
        call("slow_sleep", {"seconds": 20}), call("slow_add", {"a": 1, "b": 1}), answer("done")
    )
    assert (
        messages[0].content.startswith(
            f"Tool error: MCP server 'python3 {SERVER} ' did not answer within 1 s".replace("python3 ", "")
        )
        or "did not answer within 1 s" in messages[0].content
    )
    assert messages[1].content.startswith("2")
    assert time.monotonic() - started < 15


def test_tools_not_marked_read_only_ask_for_approval(served: Served) -> None:
    asked: list[str] = []

    def refuse(tool: Tool, request: ToolRequest) -> bool:
        asked.append(tool.name)
        return False

    note = call("srv_note", {"text": "remember"})
    refused = served.run(call("srv_add", {"a": 1, "b": 2}), note, answer("no"), approve=refuse)
    assert asked == ["srv_note"]  # the read-only srv_add asked nothing
    assert refused[1].content.startswith("Tool error: the user did not approve srv_note")
    assert not served.notes.exists()
    approved = served.run(note, answer("yes"), approve=True)
    assert approved[0].content.startswith("noted")
    assert served.notes.read_text() == "remember"


def test_closing_a_run_early_stops_waiting_for_the_server(served: Served) -> None:
    served.relay.script = ScriptedTurn([call("srv_sleep", {"seconds": 20}), answer("never")])
    started = time.monotonic()
    finished: list[RunFinished] = []
    stream = served.agent.copy(on_event=lambda e: finished.append(e) if isinstance(e, RunFinished) else None)
    with stream.run_iter("sleep") as events:
        for event in events:
            if isinstance(event, ToolStarted):
                break
    assert [e.status for e in finished] == ["cancelled"]
    assert time.monotonic() - started < 10


def test_servers_that_fail_to_start_or_to_offer_a_tool_leave_one_line_each(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    notices: list[str] = []
    transcript = tmp_path / "run.jsonl"
    servers = [
        server_spec("--clash", "--bad-schema", env={"PID_FILE": str(pid_file)}, name="test"),
        McpServer(command="no-such-mcp-server", args=("--stdio",)),
        server_spec("--exit-at-start", name="exits"),
        server_spec("--hang-at-start", name="hangs", start_timeout=2),
    ]
    model = ScriptedTurn([call("add", {"a": 2, "b": 3}), answer("5")])
    agent = Agent(
        model=model,
        mcp=servers,
        tools="default",
        workspace=tmp_path,
        transcript=transcript,
        on_notice=notices.append,
    )
    with agent:
        result = agent.run("add")
        names = tool_names(agent)
        pid = int(pid_file.read_text())
    assert sorted(notices) == sorted(
        [
            "MCP server 'test': tool 'odd' left out: its input schema cannot be turned into a grammar: "
            "#/properties/value: the `allOf` members have no type in common (['string'] and ['integer']) "
            "(and 'value' is required), so no value fits the schema",
            "MCP server 'test': tool read_file left out: the built-in tool read_file has that name; "
            "give the server a prefix ([[mcp]] prefix) to use both",
            "MCP server 'no-such-mcp-server --stdio' will not start: no program 'no-such-mcp-server'",
            "MCP server 'exits' stopped before it was ready: test server: cannot start, on purpose",
            "MCP server 'hangs' did not start within 2 s",
        ]
    )
    # The run went on with the tools that work, and the transcript kept what happened.
    assert (result.status, result.answer) == ("final", "5")
    assert next(m for m in result.messages if isinstance(m, ToolMessage)).content.startswith("5")
    assert "read_file" in names and "add" in names and "odd" not in names
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert sorted(r["text"] for r in records if r["type"] == "notice") == sorted(notices)
    # Closing the agent stopped the server.
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_config_file_and_the_environment_name_servers() -> None:
    settings = load_settings(
        {}, environ={"LOCALAGENT_MCP": "uvx mcp-server-time --local-timezone 'Europe/Paris'"}
    )
    assert settings.mcp == (
        McpServer(command="uvx", args=("mcp-server-time", "--local-timezone", "Europe/Paris")),
    )


def localagent(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "localagent", *args], capture_output=True, text=True, cwd=cwd, timeout=180, check=False
    )


def script(tmp_path: Path, *replies: str) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(replies)), encoding="utf-8")
    return f"script:{path}"


def tool_contents(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"].split("\n[")[0] for m in messages if m["role"] == "tool"]


def test_run_with_mcp_flags_on_a_published_server_and_the_server_spec(tmp_path: Path) -> None:
    model = script(
        tmp_path,
        call("get_current_time", {"timezone": "Europe/Paris"}),
        call(
            "convert_time", {"source_timezone": "Nowhere/At_all", "time": "12:00", "target_timezone": "UTC"}
        ),
        call("add", {"a": 20, "b": 22}),
        answer("42"),
    )
    result = localagent(
        "run", "what time is it?", "--model", model, "--tools", "none", "--json",
        "--mcp", f"{PYTHON} -m mcp_server_time --local-timezone UTC",
        "--mcp", f"{PYTHON} {SERVER}",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    payload = json.loads(result.stdout)
    now, wrong, added = tool_contents(payload["messages"])
    assert json.loads(now)["timezone"] == "Europe/Paris"
    assert wrong.startswith("Tool error: ") and "Nowhere/At_all" in wrong
    assert added == "42"


def test_a_server_that_crashes_mid_run_answers_with_tool_errors(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[[mcp]]\n"
        f"command = {json.dumps(PYTHON)}\n"
        f"args = [{json.dumps(SERVER)}]\n"
        'prefix = "t_"\n'
        'name = "test"\n'
        f"env = {{ NOTE_FILE = {json.dumps(str(tmp_path / 'note'))} }}\n",
        encoding="utf-8",
    )
    model = script(tmp_path, call("t_crash", {}), call("t_add", {"a": 1, "b": 1}), answer("it broke"))
    transcript = tmp_path / "run.jsonl"
    result = localagent(
        "run", "crash it", "--config", str(config), "--model", model, "--json",
        "--transcript", str(transcript), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    stopped = (
        "Tool error: MCP server 'test' has stopped: test server: crashing on purpose; "
        "its tools cannot be used"
    )
    messages = json.loads(result.stdout)["messages"]
    assert tool_contents(messages) == [stopped, stopped]
    kept: list[Message] = read_messages(transcript)
    assert [m.content.split("\n[")[0] for m in kept if isinstance(m, ToolMessage)] == [stopped, stopped]
    settings = json.loads(transcript.read_text().splitlines()[0])["settings"]
    assert settings["mcp"][0]["env"] == {"NOTE_FILE": "(not shown)"}  # a server's variables may be keys


def test_eval_tasks_offers_the_servers_tools_to_every_task(tmp_path: Path) -> None:
    from localagent.evaluation.tasks import load_suite

    task = next(t for t in load_suite().tasks if t.id == "no_tool-gold-symbol")
    model = script(tmp_path, call("add", {"a": 1, "b": 2}), *task.solution)
    folder = tmp_path / "transcripts"
    result = localagent(
        "eval", "tasks", "--task", task.id, "--model", model, "--json", "--transcripts", str(folder),
        "--mcp", f"{PYTHON} {SERVER}",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["tasks"]
    assert report["success"] and report["tool_calls"] == 1
    messages = read_messages(folder / f"{task.id}.jsonl")
    assert [m.content.split("\n[")[0] for m in messages if isinstance(m, ToolMessage)] == ["3"]


@dataclass
class FirstCallTo:
    """The model, told to call `tool` on its first step (a named tool choice); later steps are its own."""

    turn: ModelTurn
    tool: str
    name: str = "first-call"

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_event: Any = None,
    ) -> Final | ToolRequests:
        first = not any(isinstance(message, AssistantMessage) for message in messages)
        choice = NamedToolChoice(name=self.tool) if first and tool_choice == "auto" else tool_choice
        return self.turn(messages, tools, choice, cancel, on_event)


@pytest.mark.slow
def test_the_embedded_model_calls_an_mcp_tool_and_answers(
    embedded_model: ResolvedModel, llama_session: LlamaSession, tmp_path: Path
) -> None:
    model = FirstCallTo(open_local_turn(embedded_model, session=llama_session), "add")
    servers = [server_spec(name="test")]
    with Agent(model=model, tools="none", mcp=servers, workspace=tmp_path, max_steps=3) as agent:
        result = agent.run("What is 2 plus 3? Use the add tool.")
    calls = [
        request for m in result.messages if isinstance(m, AssistantMessage) for request in m.tool_requests
    ]
    # The grammar made from the server's schema shaped the call; the server's answer came back.
    assert calls[0].name == "add" and calls[0].arguments is not None
    arguments = calls[0].arguments
    assert set(arguments) == {"a", "b"} and all(isinstance(value, int) for value in arguments.values())
    observation = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert not observation.is_error
    assert observation.content.split("\n")[0] == str(arguments["a"] + arguments["b"])
    assert result.status == "final" and result.answer
