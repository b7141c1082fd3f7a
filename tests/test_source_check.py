"""The source check: an answer whose value comes only from lines unrelated to the question.

The tool outputs are the real file tools' on a real workspace, driven by scripted turns through the
real runner; what the check does for the real model is measured by `localagent eval tasks` (README)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from localagent import Agent, RunResult
from localagent.answer_source import better_sourced, file_lines, unrelated_values
from localagent.backends.scripted import ScriptedTurn
from localagent.messages import ToolMessage, UserMessage
from localagent.prompts import unrelated_value
from localagent.testing import answer, call

PRODUCTS = (
    "sku,name,category,price,stock\n"
    "P-101,Enamel mug,kitchen,8.50,40\n"
    "P-104,Wool blanket,home,64.00,4\n"
    "P-107,Cutting board,kitchen,27.00,9\n"
)
CONTACTS = (
    "name,email,phone,city\n"
    "Ines Duarte,ines@example.org,555-0142,Porto\n"
    "Olu Adeyemi,olu@example.com,555-0165,Lagos\n"
)
MEETING = "# Garden club\n\nPresent: Ines, Olu\n\n- Olu will print 40 flyers for the plant sale.\n"
TEAPOT = "How much does the ceramic teapot cost?"
FLYERS = "What is the phone number of the person printing the plant sale flyers?"
READ_PRODUCTS = call("read_file", {"path": "products.csv"})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "products.csv").write_text(PRODUCTS)
    (tmp_path / "contacts.csv").write_text(CONTACTS)
    (tmp_path / "meeting.md").write_text(MEETING)
    return tmp_path


@dataclass
class WithPlainTurn(ScriptedTurn):
    """A scripted turn with a plain turn of its own for the worked answer, as the local turn has."""

    plain_items: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.plain = ScriptedTurn(self.plain_items, name="plain")


def run(workspace: Path, task: str, script: list[str], **options: object) -> tuple[RunResult, ScriptedTurn]:
    turn = options.pop("turn", None) or ScriptedTurn(script)
    options = {"worked_answer": False, "grounding_check": False, **options}
    return Agent(model=turn, workspace=workspace, **options).run(task), turn


def outputs(result: RunResult) -> list[tuple[str, str]]:
    return [(m.name, m.content) for m in result.messages if isinstance(m, ToolMessage)]


def notes(result: RunResult) -> list[str]:
    return [m.content for m in result.messages if isinstance(m, UserMessage) and m.feedback]


def found_by(workspace: Path, task: str, *calls: str) -> list[tuple[str, str]]:
    """The real tools' outputs for these calls, from a run with the source check off."""
    result, _ = run(workspace, task, [*calls, answer("done")], source_check=False)
    return outputs(result)


def test_a_value_from_another_row_is_unrelated_and_one_from_the_asked_row_is_not(workspace: Path) -> None:
    found = found_by(workspace, TEAPOT, READ_PRODUCTS)
    (unrelated,) = unrelated_values(TEAPOT, found, "The ceramic teapot costs $27.00.")
    assert unrelated.value == "27.00"
    assert (unrelated.line.path, unrelated.line.number) == ("products.csv", 4)
    assert unrelated.line.text == "P-107,Cutting board,kitchen,27.00,9"
    assert unrelated_values("How much does the wool blanket cost?", found, "It costs 64.00.") == []


def test_a_second_hop_relates_a_row_through_a_line_about_the_question(workspace: Path) -> None:
    found = found_by(
        workspace,
        FLYERS,
        call("search_text", {"pattern": "flyers"}),
        call("read_file", {"path": "contacts.csv"}),
    )
    assert unrelated_values(FLYERS, found, "Olu's number is 555-0165.") == []
    (unrelated,) = unrelated_values(FLYERS, found, "Ines's number is 555-0142.")
    assert unrelated.value == "555-0142" and unrelated.line.path == "contacts.csv"


def test_calculator_results_question_values_and_single_digits_are_left_alone(workspace: Path) -> None:
    average = "What is the average price in products.csv?"
    found = found_by(workspace, average, READ_PRODUCTS, call("calculator", {"expression": "64 / 1"}))
    assert unrelated_values(average, found, "The average is 64.00.") == []  # the calculator gave it
    assert unrelated_values("Is 27.00 a price in it?", found, "Yes, 27.00 is.") == []
    assert unrelated_values("How many kinds of mug?", found, "There are 9.") == []
    assert unrelated_values("How many kinds of mug?", found, "There are 40.") == []  # 40 is the mug's
    assert [v.value for v in unrelated_values("Any teapot?", found, "Yes, for 27.00.")] == ["27.00"]


def test_a_superlative_question_and_numbers_inside_names_are_left_alone(workspace: Path) -> None:
    found = found_by(workspace, TEAPOT, READ_PRODUCTS)
    assert unrelated_values("Which product costs the most?", found, "The wool blanket, at 64.00.") == []
    assert unrelated_values("Which one is the teapot?", found, "It is P-107.") == []
    assert [v.value for v in unrelated_values("Which one is the teapot?", found, "P-107, 27.00")] == ["27.00"]


def test_file_lines_reads_both_read_and_search_outputs(workspace: Path) -> None:
    (read,), (search,) = (
        [o for _, o in found_by(workspace, TEAPOT, READ_PRODUCTS)],
        [o for _, o in found_by(workspace, FLYERS, call("search_text", {"pattern": "flyers"}))],
    )
    lines = file_lines(read)
    assert [(line.path, line.number) for line in lines] == [("products.csv", n) for n in (1, 2, 3, 4)]
    assert lines[0].text == "sku,name,category,price,stock"
    found, *linked = file_lines(search)  # the search also shows the lines that name who it found
    assert (found.path, found.number) == ("meeting.md", 5) and "Olu will print 40 flyers" in found.text
    assert [(line.path, line.number) for line in linked] == [("contacts.csv", 3), ("meeting.md", 3)]


def test_better_sourced_prefers_the_answer_without_an_unrelated_value(workspace: Path) -> None:
    found = found_by(
        workspace,
        FLYERS,
        call("search_text", {"pattern": "flyers"}),
        call("read_file", {"path": "contacts.csv"}),
    )
    assert better_sourced(FLYERS, found, "555-0165", "555-0142")
    assert not better_sourced(FLYERS, found, "555-0142", "555-0165")
    assert not better_sourced(FLYERS, found, "555-0165", "Olu, 555-0165")


def test_an_unrelated_value_is_shown_to_the_model_once_with_its_line(workspace: Path) -> None:
    script = [
        READ_PRODUCTS,
        answer("The ceramic teapot costs $27.00."),
        answer("No file lists a ceramic teapot."),
    ]
    result, turn = run(workspace, TEAPOT, script)
    assert (result.status, result.answer) == ("final", "No file lists a ceramic teapot.")
    expected = unrelated_value(TEAPOT, "27.00", "products.csv", 4, "P-107,Cutting board,kitchen,27.00,9")
    assert notes(result) == [expected]
    assert "P-107,Cutting board" in expected and TEAPOT in expected
    assert [c.tool_choice for c in turn.calls] == ["auto"] * 3


def test_the_note_comes_once_and_tools_are_on_again(workspace: Path) -> None:
    script = [
        READ_PRODUCTS,
        READ_PRODUCTS,
        READ_PRODUCTS,
        answer("It costs 27.00."),
        READ_PRODUCTS,
        answer("27.00"),
    ]
    result, turn = run(workspace, TEAPOT, script)
    assert result.answer == "27.00" and len(notes(result)) == 1
    assert [c.tool_choice for c in turn.calls] == ["auto", "auto", "auto", "none", "auto", "auto"]


@pytest.mark.parametrize(
    ("task", "reply", "options"),
    [
        ("How much does the wool blanket cost?", "It costs 64.00.", {}),
        (TEAPOT, "No file lists a ceramic teapot.", {}),
        (TEAPOT, "The ceramic teapot costs $27.00.", {"source_check": False}),
    ],
)
def test_no_note_for_a_related_value_no_value_or_when_turned_off(
    workspace: Path, task: str, reply: str, options: dict
) -> None:
    result, turn = run(workspace, task, [READ_PRODUCTS, answer(reply)], **options)
    assert (result.status, result.answer, notes(result)) == ("final", reply, [])
    assert len(turn.calls) == 2


def test_the_worked_answer_wins_when_only_the_draft_gives_an_unrelated_value(workspace: Path) -> None:
    script = [
        call("search_text", {"pattern": "flyers"}),
        call("read_file", {"path": "contacts.csv"}),
        answer("Ines's number is 555-0142."),
        answer("Ines's number is 555-0142."),
    ]
    worked = "Olu prints the flyers.\nAnswer: Olu's number is 555-0165."
    turn = WithPlainTurn(script, plain_items=[worked])
    result, _ = run(workspace, FLYERS, [], turn=turn, worked_answer=True)
    assert result.answer == "Olu's number is 555-0165."
    assert len(notes(result)) == 1
