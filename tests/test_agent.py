"""`from localagent import Agent`: the library API, on the scripted backend through the real runner
and tools."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from localagent import Agent, LocalagentError, RunResult, Settings, SettingsError, Tool, ToolLoadError
from localagent.backends.scripted import ScriptedTurn
from localagent.core.cancel import CancelToken
from localagent.core.events import RunFinished, RunStarted, ToolFinished, ToolStarted, TurnStarted
from localagent.core.messages import SystemMessage, ToolMessage, ToolRequest, UserMessage
from localagent.errors import ModelNotFound
from localagent.loop.transcript import TranscriptError, read_messages
from localagent.settings import load_settings
from localagent.testing import answer, call
from localagent.tools.workspace import WorkspaceError
from localagent.turn.prompts import SYSTEM_PROMPT, first_task


def word_count(text: str) -> str:
    """Count the words in a text."""
    return str(len(text.split()))


def wait(seconds: float, cancel: CancelToken) -> str:
    """Wait, unless cancelled."""
    return "cancelled" if cancel.wait(seconds) else "waited"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("buy milk\ncall Ada\n", encoding="utf-8")
    return folder


def script_file(tmp_path: Path, items: list[str]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return f"script:{path}"


def test_a_run_reads_a_file_with_a_tool_and_answers(notes: Path) -> None:
    model = ScriptedTurn([call("read_file", {"path": "todo.txt"}), answer("It has 2 lines.")])
    result = Agent(model=model, tools=["default", word_count], workspace=notes).run("How many lines?")
    assert isinstance(result, RunResult)
    assert (result.status, result.answer, result.steps, result.error) == ("final", "It has 2 lines.", 2, None)
    assert result.messages[:2] == [
        SystemMessage(content=SYSTEM_PROMPT),
        UserMessage(content=first_task("How many lines?", "todo.txt: buy milk")),
    ]
    observation = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert "buy milk" in observation.content and not observation.is_error
    assert model.calls[0].tool_names == ["list_dir", "read_file", "search_text", "calculator", "word_count"]


def test_the_runs_own_transcript_in_the_workspace_is_not_listed(notes: Path) -> None:
    model = ScriptedTurn([answer("Two lines.")])
    agent = Agent(model=model, tools=["default"], workspace=notes, transcript=notes / "run.jsonl")
    result = agent.run("How many lines?")
    assert (notes / "run.jsonl").exists()
    assert result.messages[1] == UserMessage(content=first_task("How many lines?", "todo.txt: buy milk"))


def test_tools_come_as_names_references_functions_and_tools(notes: Path) -> None:
    (notes / "shout_tools.py").write_text(
        "def shout(text: str) -> str:\n    '''Shout.'''\n    return text.upper()\n", encoding="utf-8"
    )
    twice = Tool.from_function(word_count, name="twice", description="Count again.")
    agent = Agent(
        model=ScriptedTurn([]),
        tools=["calculator", f"{notes / 'shout_tools.py'}:shout", word_count, twice],
        workspace=notes,
    )
    assert [tool.name for tool in agent.tools] == ["calculator", "shout", "word_count", "twice"]
    assert Agent(model=ScriptedTurn([]), tools="list_dir,calculator", workspace=notes).tools[1].name == (
        "calculator"
    )
    assert Agent(model=ScriptedTurn([]), tools=[], workspace=notes).tools == []


def test_every_setting_is_a_keyword_validated_as_the_config_file_is(notes: Path) -> None:
    looping = ScriptedTurn([call("calculator", {"expression": f"{n}+1"}) for n in range(5)])
    result = Agent(model=looping, max_steps=2, workspace=notes).run("loop")
    assert (result.status, result.steps) == ("max_steps", 3)  # two steps and the wrap-up retry
    agent = Agent(
        model="some-model", api_base="http://127.0.0.1:9/v1", api_mode="completions", decoder="gbnf"
    )
    assert (agent.settings.api_mode, agent.settings.grammar_field, agent.settings.decoder) == (
        "completions",
        Settings().grammar_field,  # defaults come from Settings
        "gbnf",
    )
    based = Agent(settings=load_settings({"max_tokens": 99}), temperature=0.5)
    assert (based.settings.max_tokens, based.settings.temperature) == (99, 0.5)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"max_steps": 0}, SettingsError, "max_steps: Input should be greater than or equal to 1"),
        ({"bogus": 1}, SettingsError, "bogus: Extra inputs are not permitted"),
        ({"api_mode": "fax"}, SettingsError, "api_mode: Input should be 'chat' or 'completions'"),
        ({"mcp": ["'unclosed"]}, SettingsError, "cannot read the MCP server command"),
        ({"model": 42}, SettingsError, "model must be a model name"),
        ({"tools": ["nonsense"]}, ToolLoadError, "unknown tool 'nonsense'"),
        ({"tools": [42]}, ToolLoadError, "42 is a int, not a function"),
        ({"workspace": "/nowhere/at/all"}, WorkspaceError, "is not an existing directory"),
    ],
)
def test_bad_arguments_raise_the_projects_typed_errors(arguments: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        Agent(**arguments)
    assert isinstance(raised.value, LocalagentError)


def test_the_model_loads_on_the_first_run_and_serves_the_later_ones(tmp_path: Path, notes: Path) -> None:
    missing = Agent(model="/nowhere/model.gguf", workspace=notes)  # nothing is loaded yet
    with pytest.raises(ModelNotFound, match=r"model file not found: /nowhere/model\.gguf"):
        missing.run("hello")
    model = script_file(tmp_path, [answer("first"), answer("second")])
    agent = Agent(model=model, workspace=notes)
    # One script, read once: the second run gets its second reply.
    assert [agent.run("one").answer, agent.run("two").answer] == ["first", "second"]
    assert agent.load() is agent.load()


def test_a_history_continues_the_conversation(notes: Path) -> None:
    model = ScriptedTurn([answer("hello there"), call("calculator", {"expression": "6*7"}), answer("42")])
    agent = Agent(model=model, workspace=notes)
    first = agent.run("hi")
    second = agent.run("what is 6 times 7?", history=first.messages)
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[len(first.messages)] == UserMessage(content="what is 6 times 7?")
    assert [m.role for m in second.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert model.calls[1].messages == [*first.messages, UserMessage(content="what is 6 times 7?")]
    fresh = agent.run("again", history=[])  # an empty history: just the task, no instructions
    assert fresh.messages[0] == UserMessage(content="again")


def test_run_iter_yields_the_events_as_on_event_gets_them(notes: Path) -> None:
    seen = []
    model = ScriptedTurn([call("list_dir", {}), answer("one file")])
    agent = Agent(model=model, workspace=notes, on_event=seen.append)
    stream = agent.run_iter("what is here?")
    events = list(stream)
    assert events == seen
    kinds = [type(event) for event in events]
    assert kinds[0] is RunStarted and kinds[-1] is RunFinished
    assert kinds.index(TurnStarted) < kinds.index(ToolStarted) < kinds.index(ToolFinished)
    assert stream.result is not None and stream.result.answer == "one file"
    assert events[-1].answer == "one file"


def test_leaving_run_iter_early_cancels_the_run(notes: Path) -> None:
    model = ScriptedTurn([call("wait", {"seconds": 60}), answer("never")])
    agent = Agent(model=model, tools=[wait], workspace=notes)
    finished = []
    agent.on_event = lambda event: finished.append(event) if isinstance(event, RunFinished) else None
    with agent.run_iter("wait a minute") as stream:
        for event in stream:
            if isinstance(event, ToolStarted):
                break
    # The run stopped before the stream was closed; the tool saw the cancel at once.
    assert [event.status for event in finished] == ["cancelled"]
    assert stream.result is not None and stream.result.status == "cancelled"
    assert not [thread for thread in threading.enumerate() if thread.name == "localagent-run"]


def test_an_error_in_the_run_comes_out_of_the_iterator(notes: Path) -> None:
    agent = Agent(model="/nowhere/model.gguf", workspace=notes)
    with pytest.raises(ModelNotFound):
        list(agent.run_iter("hello"))


def test_file_changes_are_refused_unless_approved(notes: Path) -> None:
    write = call("write_file", {"path": "out.txt", "content": "hi"})
    refused = Agent(model=ScriptedTurn([write, answer("no")]), tools="default,write_file", workspace=notes)
    result = refused.run("write")
    assert "the user did not approve write_file" in result.messages[-2].content
    assert not (notes / "out.txt").exists()

    asked: list[tuple[str, ToolRequest]] = []

    def approve(tool: Tool, request: ToolRequest) -> bool:
        asked.append((tool.name, request))
        return True

    model = ScriptedTurn([call("read_file", {"path": "todo.txt"}), write, answer("done")])
    Agent(model=model, tools="default,write_file", workspace=notes, approve=approve).run("write")
    assert [name for name, _ in asked] == ["write_file"]  # reading asks nothing
    assert asked[0][1].arguments == {"path": "out.txt", "content": "hi"}
    assert (notes / "out.txt").read_text() == "hi"
    (notes / "out.txt").unlink()
    Agent(model=ScriptedTurn([write, answer("ok")]), tools="write_file", workspace=notes, approve=True).run(
        "w"
    )
    assert (notes / "out.txt").read_text() == "hi"


def test_a_transcript_only_when_asked_and_kept_across_runs(tmp_path: Path, notes: Path) -> None:
    assert Agent(model=ScriptedTurn([]), workspace=notes).transcript_path is None
    path = tmp_path / "runs" / "chat.jsonl"
    model = ScriptedTurn([answer("hello"), answer("bye")])
    with Agent(model=model, workspace=notes, transcript=path) as agent:
        first = agent.run("hi")
        second = agent.run("bye", history=first.messages)
    assert agent.transcript_path == path
    assert read_messages(path) == second.messages  # each message once, though the history was resent
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["type"] == "settings" and records[0]["backend"] == "script"
    assert [r["status"] for r in records if r["type"] == "run_finished"] == ["final", "final"]
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(TranscriptError, match=f"cannot write the transcript to {blocked}/t.jsonl"):
        Agent(model=ScriptedTurn([answer("x")]), workspace=notes, transcript=blocked / "t.jsonl").run("x")


def test_a_copy_shares_the_model_with_other_tools_and_workspace(tmp_path: Path, notes: Path) -> None:
    model = ScriptedTurn([answer("first"), call("list_dir", {}), answer("second")])
    agent = Agent(model=model, workspace=notes)
    agent.run("one")
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.txt").write_text("b")
    copy = agent.copy(workspace=other, tools=["list_dir"])
    result = copy.run("two")
    assert result.answer == "second" and "b.txt" in result.messages[-2].content
    assert model.calls[1].tool_names == ["list_dir"]
    assert copy.settings is agent.settings


def test_importing_localagent_loads_no_engine() -> None:
    code = (
        "import sys, localagent\n"
        "from localagent import Agent\n"
        "Agent(model='script:unused.json', mcp=['server --flag'])\n"
        "print(sorted(m for m in ('llama_cpp', 'mcp', 'click') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
