"""The checker of `eval tasks`: whole-word patterns, numbers as people write them, file results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localagent.evaluation.task_checks import (
    answer_problems,
    check_run,
    file_problems,
    numbers_in,
    says_not_found,
    snapshot,
)
from localagent.evaluation.tasks import Task


def task(**fields: Any) -> Task:
    base: dict[str, Any] = {
        "id": "read-x",
        "category": "read",
        "workspace": "w",
        "question": "q",
        "solution": ["Thought: t\nFinal Answer: a"],
        "wrong": ["Thought: t\nFinal Answer: b"],
    }
    return Task.model_validate({**base, **fields})


@pytest.mark.parametrize(
    ("pattern", "answer", "matches"),
    [
        ("bins\\.py", "It is tallyhub/bins.py.", True),
        ("bins\\.py", "See tests/test_bins.py", False),
        ("def", "The keyword is `def`.", True),
        ("def", "a function definition", False),
        ("tove", "**Tove** prints them", True),
        ("tove", "Tovelin prints them", False),
        ("warning", "WARNING", True),
        ("c3\\.11", "Room C3.11.", True),
        ("c3\\.11", "Room C3.115", False),
        ("25", "25 seconds", True),
        ("25", "250 seconds", False),
        ("z[uü]rich", "Zürich", True),
    ],
)
def test_answer_patterns_match_whole_words_ignoring_case(pattern: str, answer: str, matches: bool) -> None:
    assert (answer_problems(task(answer=[pattern]), answer) == []) is matches


def test_all_answer_patterns_must_match_and_no_reject_pattern() -> None:
    checked = task(answer=["ilka", "bertil"], reject=["tove"])
    assert answer_problems(checked, "Ilka and Bertil.") == []
    assert answer_problems(checked, "Ilka.") == ["the answer does not match /bertil/"]
    assert answer_problems(checked, "Ilka, Bertil and Tove.") == [
        "the answer matches /tove/, which a right answer must not"
    ]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("It costs 1,234 euros", [1234.0]),
        ("1,234.50 in total", [1234.5]),
        ("21.0", [21.0]),
        ("-3 degrees, or −4", [-3.0, -4.0]),
        ("57.1% are open", [57.1]),
        ("version 0.7.3 of v2", []),
        ("room C3.11, item_7", []),
        ("2023-05-09", [2023.0, 5.0, 9.0]),
        ("KT-305 sold", [305.0]),
        ("four files and 25s", [25.0, 4.0]),
        ("1,2,3", [1.0, 2.0, 3.0]),
    ],
)
def test_numbers_are_read_as_people_write_them(text: str, numbers: list[float]) -> None:
    assert numbers_in(text) == numbers


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("It costs 64.00 euros.", True),
        ("64", True),
        ("€64", True),
        ("It costs 46 euros.", False),
        ("It costs 640 euros.", False),
        ("Item 64-B", True),
    ],
)
def test_a_number_must_be_there_exactly_without_tolerance(answer: str, right: bool) -> None:
    assert (answer_problems(task(number=64), answer) == []) is right


def test_a_tolerance_takes_any_number_within_it() -> None:
    checked = task(number=57.14, tolerance=0.6)
    assert answer_problems(checked, "About 57%") == []
    assert answer_problems(checked, "3 of 7, so 57.1 percent") == []
    assert answer_problems(checked, "About 56%") == ["the answer holds no number equal to 57.14 (±0.6)"]
    assert answer_problems(task(number=-12.5, tolerance=0.1), "the change is -12.46") == []


@pytest.mark.parametrize(
    "answer",
    [
        "There is no DEBUG setting in that file.",
        "docs/rollout.md does not exist.",
        "I could not find Brede's email address.",
        "The handbook doesn't mention working from home.",
        "Brede is not listed in phonebook.csv.",
        "No such file.",
        "There's no redis service.",
        "The file is missing.",
        "I can't find a kettle in the catalogue.",
        "No member with id M-0311 found.",
        "No invoice for that month was found.",
        "No meeting with Brede and me in June was found.",
        "The harbour timetable is not provided in moorings.txt.",
    ],
)
def test_saying_that_something_is_not_there(answer: str) -> None:
    assert says_not_found(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "DEBUG is False.",
        "brede@example.org",
        "23 units.",
        "Redis uses port 6379.",
        "Two days a week.",
        "No problem: the key was found in kiln.toml, cone = 6.",
        "No, it was found in the shed.",
    ],
)
def test_an_invented_value_does_not_say_not_found(answer: str) -> None:
    assert not says_not_found(answer)


def test_impossible_tasks_need_not_found_and_no_invented_value() -> None:
    checked = task(id="impossible-x", category="impossible", reject=["6379"])
    assert answer_problems(checked, "There is no redis service.") == []
    assert answer_problems(checked, "There is no redis service; it would be 6379.") == [
        "the answer matches /6379/, which a right answer must not"
    ]
    assert answer_problems(checked, "Port 6380.") == [
        "the answer does not say that the file or fact does not exist"
    ]


def write(root: Path, files: dict[str, str]) -> dict[str, bytes]:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return snapshot(root)


def test_snapshot_holds_every_file_by_relative_path(tmp_path: Path) -> None:
    files = write(tmp_path, {"a.txt": "a", "sub/b.csv": "b", ".hidden": "h"})
    assert files == {"a.txt": b"a", "sub/b.csv": b"b", ".hidden": b"h"}


def test_a_read_only_task_fails_when_any_file_changes(tmp_path: Path) -> None:
    checked = task(answer=["a"])
    before = write(tmp_path, {"a.txt": "a", "b.txt": "b", "c.txt": "c"})
    assert check_run(checked, "final", "a", before, before).success
    (tmp_path / "a.txt").write_text("changed")
    (tmp_path / "b.txt").unlink()
    (tmp_path / "new.txt").write_text("new")
    verdict = check_run(checked, "final", "a", before, snapshot(tmp_path))
    assert not verdict.success
    assert verdict.problems == (
        "a.txt was changed, but the task does not touch it",
        "b.txt was deleted, but the task does not touch it",
        "new.txt was created, but the task does not touch it",
    )


def test_exact_file_results_ignore_only_trailing_newlines(tmp_path: Path) -> None:
    checked = task(id="edit-x", category="edit", files={"a.txt": "one\ntwo\n"})
    before = write(tmp_path, {"a.txt": "one\n", "b.txt": "b"})
    for text, right in [
        ("one\ntwo", True),
        ("one\ntwo\n\n", True),
        ("one\n two\n", False),
        ("One\ntwo", False),
    ]:
        (tmp_path / "a.txt").write_text(text)
        assert (file_problems(checked, before, snapshot(tmp_path)) == []) is right, text
    (tmp_path / "a.txt").unlink()
    assert file_problems(checked, before, snapshot(tmp_path)) == ["a.txt does not exist after the run"]


def test_file_patterns_must_all_match_and_other_files_stay(tmp_path: Path) -> None:
    checked = task(id="edit-x", category="edit", files_match={"f.json": ['"on":\\s*true', '"size":\\s*30']})
    before = write(tmp_path, {"f.json": '{"on": false, "size": 30}', "other.txt": "x"})
    write(tmp_path, {"f.json": '{\n  "on": true,\n  "size": 30\n}\n'})
    assert file_problems(checked, before, snapshot(tmp_path)) == []
    write(tmp_path, {"f.json": '{"on": true}', "other.txt": "y"})
    assert file_problems(checked, before, snapshot(tmp_path)) == [
        'f.json does not match /"size":\\s*30/',
        "other.txt was changed, but the task does not touch it",
    ]


def test_a_new_file_can_be_the_expected_result(tmp_path: Path) -> None:
    checked = task(id="edit-x", category="edit", files={"new.txt": "rye flour"})
    before = write(tmp_path, {"a.txt": "a"})
    write(tmp_path, {"new.txt": "rye flour\n"})
    assert check_run(checked, "final", "", before, snapshot(tmp_path)).success
    assert check_run(checked, "tool_failures", "", before, snapshot(tmp_path)).problems == (
        "the run ended with status tool_failures, not a final answer",
    )
