"""The peer baselines' runner (`localagent eval peers`): smolagents' real CodeAgent and
ToolCallingAgent loops, with a scripted smolagents model that replays a suite task's `solution` (or
its `wrong` run), localagent's tools run in-process on a fresh copy of the workspace, and the same
checks as `eval tasks`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import smolagents
from click.testing import CliRunner
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

from localagent.backends.scripted import ScriptedTurn
from localagent.cli import cli
from localagent.core.cancel import CancelToken
from localagent.core.messages import Final, ToolRequests
from localagent.evaluation.compare import read_run
from localagent.evaluation.peer_run import PeerSettings, run_peer_suite, run_peer_task
from localagent.evaluation.peer_tools import PeerTool, ToolLog, smolagents_inputs
from localagent.evaluation.tasks import CATEGORIES, Task, load_suite
from localagent.tools.loading import select_tools
from localagent.tools.workspace import Workspace

SUITE = load_suite()
# The first task of each category: reads, searches, sums, edits, and answers that say "not there".
TASKS = [next(task for task in SUITE.tasks if task.category == category) for category in CATEGORIES]
ALL_TOOLS = [tool.spec for tool in select_tools("all", Workspace(Path.cwd()))]


def calls_in(items: list[Any]) -> int:
    script = ScriptedTurn(items)
    replies = [script([], ALL_TOOLS, "auto", CancelToken()) for _ in items]
    return sum(len(reply.requests) for reply in replies if isinstance(reply, ToolRequests))


class ReplayedModel(smolagents.Model):
    """A smolagents model that writes a suite script's turns, as tool calls or as code."""

    def __init__(self, items: list[Any], agent: str) -> None:
        super().__init__(model_id="replayed")
        self.agent = agent
        self.questions: list[str] = []
        self._script = ScriptedTurn(items)

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        first_user = next(m for m in messages if m.role == MessageRole.USER)
        self.questions.append(first_user.content[0]["text"].removeprefix("New task:\n"))
        result = self._script([], ALL_TOOLS, "auto", CancelToken())
        if self.agent == "code":
            return ChatMessage(role=MessageRole.ASSISTANT, content=_as_code(result))
        return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=_as_calls(result))


def _as_code(result: Final | ToolRequests) -> str:
    if isinstance(result, Final):
        lines = [f"final_answer({result.content!r})"]
    else:
        lines = [f"print({r.name}(**{r.arguments or {}!r}))" for r in result.requests]
    return "Thought: the next step.\n<code>\n" + "\n".join(lines) + "\n</code>"


def _as_calls(result: Final | ToolRequests) -> list[ChatMessageToolCall]:
    calls = (
        [("final_answer", {"answer": result.content})]
        if isinstance(result, Final)
        else [(r.name, r.arguments or {}) for r in result.requests]
    )
    return [
        ChatMessageToolCall(
            function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            id=f"call_{index}",
            type="function",
        )
        for index, (name, arguments) in enumerate(calls)
    ]


@pytest.mark.parametrize("agent", ["code", "toolcalling"])
@pytest.mark.parametrize("task", TASKS, ids=[task.id for task in TASKS])
def test_a_replayed_solution_succeeds_and_a_wrong_run_fails(task: Task, agent: str, tmp_path: Path) -> None:
    settings = PeerSettings(agent=agent)  # type: ignore[arg-type]
    fixture = SUITE.workspaces[task.workspace]
    model = ReplayedModel(task.solution, agent)
    solved = run_peer_task(task, fixture, model, settings, transcript=tmp_path / "run.jsonl")
    assert solved.success, (solved.problems, solved.error, solved.answer)
    assert (solved.status, solved.error, solved.format_errors) == ("final", None, 0)
    assert model.questions and set(model.questions) == {task.question}
    assert (solved.turns, solved.tool_calls) == (len(task.solution), calls_in(task.solution))
    records = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert records[0]["id"] == task.id and records[-1] == {"type": "verdict", "success": True, "problems": []}
    wrong = run_peer_task(task, fixture, ReplayedModel(task.wrong, agent), settings)
    assert not wrong.success and wrong.problems


def test_the_step_limit_leaves_room_for_the_answer_smolagents_asks_for() -> None:
    task = TASKS[0]
    looping = [task.solution[0]] * 10
    settings = PeerSettings(agent="toolcalling", max_steps=3)
    result = run_peer_task(
        task, SUITE.workspaces[task.workspace], ReplayedModel(looping, "toolcalling"), settings
    )
    # Two steps of calls, then the answer asked for at the limit: three model calls in all.
    assert result.turns == 3 and result.status == "final"
    assert result.error is not None and "step limit" in result.error


def test_a_suite_of_peer_runs_reads_as_eval_tasks_json(tmp_path: Path) -> None:
    chosen = TASKS[:3]
    model = ReplayedModel([item for task in chosen for item in task.solution], "toolcalling")
    seen = []
    run = run_peer_suite(
        chosen,
        SUITE.workspaces,
        model,
        PeerSettings("toolcalling"),
        transcripts=tmp_path,
        on_result=seen.append,
    )
    assert [r.id for r in run.results] == [t.id for t in chosen] == [r.id for r in seen]
    assert model.questions == [task.question for task in chosen for _ in task.solution]
    assert run.summary()["overall"]["successes"] == 3
    assert sorted(path.name for path in tmp_path.glob("*.jsonl")) == sorted(f"{t.id}.jsonl" for t in chosen)
    path = tmp_path / "peers.json"
    path.write_text(json.dumps({**run.summary(), "tasks": [r.as_json() for r in run.results]}))
    assert [task["id"] for task in read_run(path)] == [t.id for t in chosen]


def test_a_tool_error_reaches_the_peer_as_a_failure_it_can_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    log = ToolLog()
    read_file = next(t for t in select_tools("read_file", Workspace(tmp_path)))
    tool = PeerTool(read_file, log)
    assert "one" in tool(path="a.txt") and "one" in tool("a.txt")
    with pytest.raises(Exception, match=r"missing\.txt"):
        tool(path="missing.txt")
    assert (log.calls, log.errors) == (3, 1)


def test_each_schema_property_is_an_input_smolagents_accepts() -> None:
    inputs = smolagents_inputs(
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where."},
                "limit": {"type": "integer", "minimum": 1},
                "either": {"type": ["string", "null"]},
                "anything": {},
            },
            "required": ["path"],
        }
    )
    assert inputs == {
        "path": {"type": "string", "description": "Where."},
        "limit": {"type": "integer", "minimum": 1, "description": "limit", "nullable": True},
        "either": {"type": ["string", "null"], "description": "either", "nullable": True},
        "anything": {"type": "any", "description": "anything", "nullable": True},
    }


def test_eval_peers_says_when_no_server_answers() -> None:
    result = CliRunner().invoke(
        cli, ["eval", "peers", "--agent", "code", "--api-base", "http://127.0.0.1:9/v1", "--limit", "1"]
    )
    assert result.exit_code != 0
    assert "127.0.0.1:9" in result.output and "Traceback" not in result.output
