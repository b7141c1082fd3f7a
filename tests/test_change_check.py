"""The change check: a request to change a file, answered before any file changed, is told so once.

Driven by scripted turns through the real runner and file tools; what it does for the real model is
measured by `localagent eval tasks` (README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent import Agent, RunResult
from localagent.backends.scripted import ScriptedTurn
from localagent.messages import UserMessage
from localagent.prompts import change_missing
from localagent.request_kind import reads_as_instruction
from localagent.testing import answer, call

TICK = "I booked the dentist. Tick that item off in todo.md."
READ = call("read_file", {"path": "todo.md"})
TICKED = call(
    "replace_in_file", {"path": "todo.md", "old": "- [ ] Book the dentist", "new": "- [x] Book the dentist"}
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "todo.md").write_text("# To do\n- [ ] Book the dentist\n- [ ] Fix the bike light\n")
    return tmp_path


def run(workspace: Path, task: str, script: list[str], **options: object) -> tuple[RunResult, ScriptedTurn]:
    turn = ScriptedTurn(script)
    options = {"tools": "default,replace_in_file", "approve": True, **options}
    result = Agent(
        model=turn, workspace=workspace, worked_answer=False, grounding_check=False, **options
    ).run(task)
    return result, turn


def notes(result: RunResult) -> list[str]:
    return [m.content for m in result.messages if isinstance(m, UserMessage) and m.feedback]


def test_an_answer_before_the_asked_change_is_told_that_nothing_changed(workspace: Path) -> None:
    script = [READ, answer("I ticked off the dentist item."), TICKED, answer("todo.md now says it is done.")]
    result, turn = run(workspace, TICK, script)
    assert (result.status, result.answer) == ("final", "todo.md now says it is done.")
    assert "- [x] Book the dentist" in (workspace / "todo.md").read_text()
    assert notes(result) == [change_missing(TICK, ["replace_in_file"])]
    assert "No file has changed yet" in notes(result)[0] and "replace_in_file" in notes(result)[0]
    assert [call.tool_choice for call in turn.calls] == ["auto"] * 4


def test_the_note_comes_once_and_the_second_answer_stands(workspace: Path) -> None:
    result, turn = run(workspace, TICK, [answer("Done."), answer("It is done, I promise.")])
    assert (result.status, result.answer) == ("final", "It is done, I promise.")
    assert len(notes(result)) == 1 and len(turn.calls) == 2
    assert "[ ] Book the dentist" in (workspace / "todo.md").read_text()


def test_tools_turned_off_by_repeats_are_on_again_after_the_note(workspace: Path) -> None:
    script = [READ, READ, READ, answer("I ticked it."), TICKED, answer("Ticked.")]
    result, turn = run(workspace, TICK, script)
    assert result.answer == "Ticked." and "- [x] Book the dentist" in (workspace / "todo.md").read_text()
    assert [call.tool_choice for call in turn.calls] == ["auto", "auto", "auto", "none", "auto", "auto"]


@pytest.mark.parametrize(
    ("task", "options"),
    [
        ("What is still open in todo.md?", {}),  # a question
        ("what is still open in todo.md", {}),  # a question without its question mark
        (TICK, {"tools": "default"}),  # no tool could change the file
        (TICK, {"change_check": False}),
    ],
)
def test_no_note_for_a_question_without_changing_tools_or_when_turned_off(
    workspace: Path, task: str, options: dict
) -> None:
    result, turn = run(workspace, task, [READ, answer("The dentist and the bike light.")], **options)
    assert (result.answer, notes(result), len(turn.calls)) == ("The dentist and the bike light.", [], 2)


def test_no_note_after_the_user_refused_the_change(workspace: Path) -> None:
    result, turn = run(workspace, TICK, [READ, TICKED, answer("You did not let me tick it.")], approve=False)
    assert (result.answer, notes(result), len(turn.calls)) == ("You did not let me tick it.", [], 3)
    assert "the user did not approve replace_in_file" in result.messages[-2].content


def test_a_failed_change_is_no_change(workspace: Path) -> None:
    wrong = call("replace_in_file", {"path": "todo.md", "old": "dentist appointment", "new": "done"})
    script = [READ, wrong, answer("Ticked."), TICKED, answer("Now ticked.")]
    result, _ = run(workspace, TICK, script)
    assert result.answer == "Now ticked." and len(notes(result)) == 1


@pytest.mark.parametrize(
    ("message", "instruction"),
    [
        ("Raise the low-stock threshold to 4.", True),
        ("I booked the dentist. Tick that item off in my to-do list.", True),
        ("Create a file named shopping.txt that holds just one line: oat milk", True),
        ("What is the timeout in config.py?", False),
        ("what is the timeout in config.py", False),
        ("Which meeting notes do I have? Name the files.", False),
        ("How many Python files are there", False),
        ("Is the beta checkout on", False),
        ("", False),
    ],
)
def test_what_reads_as_an_instruction(message: str, instruction: bool) -> None:
    assert reads_as_instruction(message) is instruction
