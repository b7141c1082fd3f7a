"""The runner's rules, driven by the scripted backend (text tags through the real parser, or chat turns)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from localagent.backends.scripted import ScriptedTurn
from localagent.core.cancel import CancelToken
from localagent.core.events import Event, ToolFinished, ToolStarted
from localagent.core.messages import (
    HISTORY,
    AssistantMessage,
    Final,
    Message,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from localagent.errors import BackendError, RecoverableTurnError
from localagent.loop.runner import Runner, RunnerSettings
from localagent.loop.transcript import Transcript, read_messages
from localagent.tools.base import Tool, ToolError
from localagent.turn.prompts import REPEATED_CALL as REPEAT_NOTE
from localagent.turn.prompts import answer_now, first_task


def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}\nsecond line that must not reach the model")


def refuse(reason: str) -> str:
    """Fails the way a tool reports a problem to the model."""
    raise ToolError(f"cannot do that: {reason}")


TOOLS = [Tool.from_function(add), Tool.from_function(explode), Tool.from_function(refuse)]


def history(task: str = "task") -> list[Message]:
    return [SystemMessage(content="system"), UserMessage(content=task)]


def action(name: str, arguments: str, thought: str = "go") -> str:
    return f"Thought: {thought}\nAction: {name}\nAction Input: {arguments}\n"


def answer(text: str, thought: str = "done") -> str:
    return f"Thought: {thought}\nFinal Answer: {text}"


def run(items: list, tools: list[Tool] = TOOLS, **settings) -> tuple:
    turn = ScriptedTurn(items)
    events: list[Event] = []
    runner = Runner(turn, tools, RunnerSettings(**settings), on_event=events.append)
    return runner.run(history()), turn, events


def tool_messages(messages: list[Message]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def test_direct_answer() -> None:
    result, turn, _ = run([answer("42")])
    assert (result.status, result.answer, result.steps) == ("final", "42", 1)
    assert turn.calls[0].tool_choice == "auto"
    assert isinstance(result.messages[-1], AssistantMessage)
    assert result.messages[-1].reasoning == "done"


def test_tool_call_then_answer_links_result_to_request() -> None:
    result, turn, _ = run([action("add", '{"a": 2, "b": 3}'), answer("5")])
    assert (result.status, result.answer, result.steps) == ("final", "5", 2)
    request = result.messages[2].tool_requests[0]
    observation = tool_messages(result.messages)[0]
    assert observation.request_id == request.id
    assert observation.content == "5"
    assert not observation.is_error
    assert turn.calls[1].messages[-1] == observation


def test_chat_style_items_with_invalid_json_are_corrected_next_turn() -> None:
    bad = {"content": "", "tool_calls": [{"id": "c1", "name": "add", "arguments": '{"a": 2, "b": '}]}
    good = {"content": "", "tool_calls": [{"id": "c2", "name": "add", "arguments": '{"a": 2, "b": 2}'}]}
    result, _, _ = run([bad, good, {"content": "4"}])
    first, second = tool_messages(result.messages)
    assert first.request_id == "c1"
    assert first.is_error
    assert first.content.startswith("Tool error: Invalid JSON arguments for tool add")
    assert (second.request_id, second.is_error) == ("c2", False)
    assert second.content.startswith("4")
    assert (result.status, result.answer) == ("final", "4")


def test_unknown_tool_lists_the_available_tools() -> None:
    result, _, _ = run([action("multiply", '{"a": 1}'), answer("ok")])
    message = tool_messages(result.messages)[0]
    assert message.is_error
    assert message.content.startswith(
        "Tool error: unknown tool 'multiply'. Available tools: add, explode, refuse."
    )
    assert result.status == "final"


def test_validation_error_names_each_field() -> None:
    result, _, _ = run([action("add", '{"a": "two"}'), answer("ok")])
    content = tool_messages(result.messages)[0].content
    assert content.startswith("Tool error: invalid arguments for add:")
    assert "a: Input should be a valid integer" in content
    assert "b: Field required" in content


def test_tool_exception_is_one_line_without_traceback() -> None:
    result, _, _ = run([action("explode", '{"reason": "x"}'), answer("ok")])
    content = tool_messages(result.messages)[0].content
    first_line = content.splitlines()[0]
    assert first_line == "Tool error: explode failed: RuntimeError: boom: x"
    assert "Traceback" not in content and "second line" not in content
    assert result.status == "final"


def test_tool_error_message_is_passed_as_is() -> None:
    result, _, _ = run([action("refuse", '{"reason": "y"}'), answer("ok")])
    assert tool_messages(result.messages)[0].content.startswith("Tool error: cannot do that: y")


def test_a_repeated_call_is_not_run_again_nor_its_result_shown_again() -> None:
    calls: list[int] = []

    def count(n: int) -> str:
        """Count calls."""
        calls.append(n)
        return f"counted {n}"

    tools = [Tool.from_function(count)]
    result, _, events = run([action("count", '{"n": 1}'), action("count", '{"n": 1}'), answer("ok")], tools)
    assert calls == [1]
    second = tool_messages(result.messages)[1]
    assert second.content == f"{REPEAT_NOTE}\n{answer_now('task')}"
    assert not second.is_error
    assert [e.repeated for e in events if isinstance(e, ToolFinished)] == [False, True]


def test_a_step_of_only_repeated_calls_turns_tools_off_for_the_next_reply() -> None:
    same = action("add", '{"a": 1, "b": 2}')
    result, turn, _ = run([same, same, answer("3")])
    assert [call.tool_choice for call in turn.calls] == ["auto", "auto", "none"]
    assert tool_messages(result.messages)[1].content == f"{REPEAT_NOTE}\n{answer_now('task')}"
    assert result.status == "final"


def test_a_step_with_a_new_call_beside_a_repeat_keeps_tools_on() -> None:
    same = action("add", '{"a": 1, "b": 2}')
    both = same + action("add", '{"a": 2, "b": 2}').removeprefix("Thought: go\n")
    result, turn, _ = run([same, both, answer("4")])
    assert [m.content for m in tool_messages(result.messages)] == ["3", REPEAT_NOTE, "4"]
    assert [call.tool_choice for call in turn.calls] == ["auto", "auto", "auto"]
    assert result.status == "final"


def test_a_new_call_beside_a_repeated_one_keeps_tools_on() -> None:
    first = action("add", '{"a": 1, "b": 2}')
    both = first + 'Action: add\nAction Input: {"a": 2, "b": 2}\n'
    result, turn, _ = run([first, both, answer("4")])
    assert [call.tool_choice for call in turn.calls] == ["auto", "auto", "auto"]
    assert result.status == "final"


def test_file_changing_tool_in_between_allows_the_same_call_again() -> None:
    calls: list[str] = []

    def look(path: str) -> str:
        """Read."""
        calls.append(path)
        return f"seen {len(calls)}"

    def change(path: str) -> str:
        """Change."""
        return "changed"

    tools = [Tool.from_function(look), Tool.from_function(change, changes_files=True)]
    turn = ScriptedTurn(
        [
            action("look", '{"path": "a"}'),
            action("change", '{"path": "a"}'),
            action("look", '{"path": "a"}'),
            answer("ok"),
        ]
    )
    result = Runner(turn, tools, approve=lambda tool, request: True).run(history())
    assert calls == ["a", "a"]
    assert result.status == "final"


def test_three_consecutive_failures_of_one_tool_end_the_run() -> None:
    items = [action("explode", f'{{"reason": "{n}"}}') for n in range(3)] + [answer("never")]
    result, turn, _ = run(items)
    assert result.status == "tool_failures"
    assert "explode failed 3 times in a row" in (result.error or "")
    assert len(turn.calls) == 3


def test_a_success_resets_the_failure_streak() -> None:
    items = [
        action("add", '{"a": "x"}'),
        action("add", '{"a": "x"}'),
        action("add", '{"a": 1, "b": 1}'),
        action("add", '{"a": "x"}'),
        action("add", '{"a": "x"}'),
        answer("ok"),
    ]
    result, _, _ = run(items)
    assert result.status == "final"


def test_last_step_runs_with_tool_choice_none_and_steps_left_are_announced() -> None:
    result, turn, _ = run(
        [action("add", '{"a": 1, "b": 1}'), action("add", '{"a": 1, "b": 2}'), answer("3")], max_steps=3
    )
    assert [call.tool_choice for call in turn.calls] == ["auto", "auto", "none"]
    first, last = (m.content.splitlines() for m in tool_messages(result.messages))
    assert first == ["2", "[2 steps left]"]
    assert last == [
        "3",
        "[1 step left: tools are off for it. Give your final answer next.]",
        answer_now("task"),
    ]
    assert (result.status, result.answer) == ("final", "3")


def test_the_question_comes_again_without_the_workspace_view_before_tools_go_off() -> None:
    turn = ScriptedTurn([action("add", '{"a": 1, "b": 1}'), answer("2")])
    task = first_task("What is 1 + 1?", "notes.txt: buy milk")
    result = Runner(turn, TOOLS, RunnerSettings(max_steps=2)).run(
        [SystemMessage(content="s"), UserMessage(content=task)]
    )
    [observation] = tool_messages(result.messages)
    assert observation.content.endswith(f"\n{answer_now('What is 1 + 1?')}")
    assert turn.calls[1].tool_choice == "none"


def test_tool_call_at_the_last_step_gets_one_retry_then_max_steps() -> None:
    items = [
        {
            "content": "partial idea",
            "tool_calls": [{"id": "a", "name": "add", "arguments": '{"a": 1, "b": 1}'}],
        },
        {
            "content": "still calling",
            "tool_calls": [{"id": "b", "name": "add", "arguments": '{"a": 2, "b": 2}'}],
        },
        {"content": "and again", "tool_calls": [{"id": "c", "name": "add", "arguments": '{"a": 3, "b": 3}'}]},
    ]
    result, turn, events = run(items, max_steps=2)
    assert [call.tool_choice for call in turn.calls] == ["auto", "none", "none"]
    assert result.status == "max_steps"
    assert result.answer == "and again"
    refused = [m for m in tool_messages(result.messages) if m.request_id in ("b", "c")]
    assert all(m.is_error and "step limit is reached" in m.content for m in refused)
    assert [e.request_id for e in events if isinstance(e, ToolStarted)] == ["a"]


def test_retry_at_the_last_step_can_still_answer() -> None:
    items = [
        {"content": "", "tool_calls": [{"id": "b", "name": "add", "arguments": '{"a": 2, "b": 2}'}]},
        {"content": "4"},
    ]
    result, _, _ = run(items, max_steps=1)
    assert (result.status, result.answer, result.steps) == ("final", "4", 2)


def test_nothing_loops_forever_when_the_model_never_answers() -> None:
    items = [action("add", f'{{"a": {n}, "b": 0}}') for n in range(50)]
    result, turn, _ = run(items, max_steps=5)
    assert result.status == "max_steps"
    assert len(turn.calls) == 6


def test_malformed_replies_get_feedback_and_three_in_a_row_end_the_run() -> None:
    result, turn, _ = run(["Thought: hmm", answer("fine")])
    assert result.status == "final"
    feedback = turn.calls[1].messages[-1]
    assert isinstance(feedback, UserMessage) and feedback.feedback
    assert feedback.content.startswith("Format error: the reply has no Action and no Final Answer")
    assert "Action Input:" in feedback.content

    result, _, _ = run(["Thought: a", "Thought: b", "Thought: c", answer("late")])
    assert result.status == "error"
    assert "3 malformed replies in a row" in (result.error or "")


def test_several_requests_in_one_turn_are_capped_and_answered_in_order() -> None:
    calls = [{"id": f"c{n}", "name": "add", "arguments": json.dumps({"a": n, "b": 0})} for n in range(10)]
    result, _, _ = run([{"content": "", "tool_calls": calls}, {"content": "done"}])
    messages = tool_messages(result.messages)
    assert [m.request_id for m in messages] == [f"c{n}" for n in range(10)]
    assert [m.content.splitlines()[0] for m in messages[:8]] == [str(n) for n in range(8)]
    assert all("at most 8 tool calls" in m.content for m in messages[8:])


def test_read_only_requests_run_concurrently() -> None:
    both_running = threading.Barrier(2, timeout=5)

    def wait(name: str) -> str:
        """Waits for its sibling call."""
        both_running.wait()
        return name

    calls = [{"id": n, "name": "wait", "arguments": json.dumps({"name": n})} for n in ("x", "y")]
    result, _, _ = run([{"content": "", "tool_calls": calls}, {"content": "ok"}], [Tool.from_function(wait)])
    assert [m.content.splitlines()[0] for m in tool_messages(result.messages)] == ["x", "y"]


def test_file_changing_tool_needs_approval() -> None:
    written: list[str] = []

    def write(text: str) -> str:
        """Write."""
        written.append(text)
        return "written"

    tools = [Tool.from_function(write, changes_files=True)]
    turn = ScriptedTurn([action("write", '{"text": "hi"}'), answer("ok")])
    result = Runner(turn, tools).run(history())
    assert written == []
    assert "did not approve write" in tool_messages(result.messages)[0].content
    turn = ScriptedTurn([action("write", '{"text": "hi"}'), answer("ok")])
    Runner(turn, tools, approve=lambda tool, request: True).run(history())
    assert written == ["hi"]


def test_cancellation_during_a_tool(tmp_path: Path) -> None:
    cancel = CancelToken()
    started = threading.Event()

    def slow(seconds: float, cancel: CancelToken) -> str:
        """Waits, but stops when cancelled."""
        started.set()
        if cancel.wait(seconds):
            return "stopped early"
        return "finished"

    threading.Thread(target=lambda: started.wait(5) and cancel.cancel(), daemon=True).start()
    transcript = Transcript(tmp_path / "t.jsonl")
    turn = ScriptedTurn([action("slow", '{"seconds": 30}'), answer("never")])
    begun = time.monotonic()
    result = Runner(turn, [Tool.from_function(slow)], transcript=transcript).run(history(), cancel)
    transcript.close()
    assert time.monotonic() - begun < 10
    assert result.status == "cancelled"
    assert len(turn.calls) == 1
    kept = read_messages(tmp_path / "t.jsonl")
    assert kept == result.messages
    assert isinstance(kept[-1], ToolMessage)


def test_cancel_before_the_first_turn() -> None:
    cancel = CancelToken()
    cancel.cancel()
    turn = ScriptedTurn([answer("x")])
    result = Runner(turn, TOOLS).run(history(), cancel)
    assert result.status == "cancelled"
    assert turn.calls == []


class CrashingTurn:
    name = "crash"

    def __init__(self) -> None:
        self.turns = 0

    def __call__(self, messages, tools, tool_choice, cancel, on_delta=None):
        self.turns += 1
        if self.turns == 1:
            return ScriptedTurn([action("add", '{"a": 1, "b": 1}')])(messages, tools, tool_choice, cancel)
        raise ZeroDivisionError("a bug in a backend")


def test_transcript_survives_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    transcript = Transcript(path)
    result = Runner(CrashingTurn(), TOOLS, transcript=transcript).run(history())
    transcript.close()
    assert result.status == "error"
    assert result.error == "internal error: ZeroDivisionError: a bug in a backend"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[-1]["type"] == "run_finished"
    assert records[-1]["status"] == "error"
    assert any(r["type"] == "crash" and "ZeroDivisionError" in r["traceback"] for r in records)
    assert read_messages(path) == result.messages
    assert len(result.messages) == 4


def test_backend_error_ends_with_status_error_and_keeps_the_transcript(tmp_path: Path) -> None:
    class Refused:
        name = "refused"

        def __call__(self, *args, **kwargs):
            raise BackendError("cannot connect to http://127.0.0.1:9/v1: connection refused")

    path = tmp_path / "refused.jsonl"
    transcript = Transcript(path)
    result = Runner(Refused(), TOOLS, transcript=transcript).run(history())
    transcript.close()
    assert (result.status, result.error) == (
        "error",
        "cannot connect to http://127.0.0.1:9/v1: connection refused",
    )
    assert read_messages(path) == history()


def test_history_round_trips_through_json_without_loss() -> None:
    result, _, _ = run([action("add", '{"a": 1, "b": 2}'), action("add", "{bad"), "Thought: x", answer("3")])
    dumped = HISTORY.dump_json(result.messages)
    assert HISTORY.validate_json(dumped) == result.messages
    shapes = json.loads(dumped)
    assistant = next(m for m in shapes if m["role"] == "assistant" and m["tool_requests"])
    assert set(assistant) == {"role", "content", "reasoning", "tool_requests"}
    assert set(assistant["tool_requests"][0]) == {"id", "name", "arguments", "raw_arguments", "parse_error"}
    tool = next(m for m in shapes if m["role"] == "tool")
    assert set(tool) == {"role", "request_id", "name", "content", "is_error"}


@pytest.mark.parametrize("max_steps", [0, -1])
def test_settings_reject_a_step_limit_below_one(max_steps: int) -> None:
    with pytest.raises(ValueError, match="max_steps"):
        RunnerSettings(max_steps=max_steps)


def test_a_malformed_reply_still_counts_its_tokens() -> None:
    class Costly:
        name = "costly"

        def __init__(self) -> None:
            self.replies = 0

        def __call__(self, messages, tools, tool_choice, cancel, on_event=None):
            self.replies += 1
            usage = Usage(prompt_tokens=10, completion_tokens=5)
            if self.replies == 1:
                raise RecoverableTurnError("Format error: x.", "garbled", "unparsable", usage)
            return Final(content="done", usage=usage)

    result = Runner(Costly(), TOOLS).run(history())
    assert result.status == "final"
    assert result.usage == Usage(prompt_tokens=20, completion_tokens=10)
