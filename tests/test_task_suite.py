"""The shipped task suite: it validates, and every task's reference run passes through the real
runner, tools and checker while its wrong run and the usual ways of gaming a checker fail."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from localagent.backends.scripted import ScriptedTurn
from localagent.core.messages import Message, SystemMessage, ToolMessage, UserMessage
from localagent.evaluation.task_checks import answer_problems, check_run, numbers_in, whole_word
from localagent.evaluation.task_run import TaskResult, run_task
from localagent.evaluation.tasks import CATEGORIES, SuiteError, Task, load_suite
from localagent.loop.transcript import read_messages
from localagent.tools.loading import select_tools
from localagent.tools.workspace import Workspace

SUITE = load_suite()
TASKS = {task.id: task for task in SUITE.tasks}
ANSWERED = [task for task in SUITE.tasks if task.category != "impossible" and not task.changes_files]
STEPS_LEFT = re.compile(r"\n\[(\d+ steps? left|1 step left[^\]]*)\]$")


def opening(question: str, root: Path) -> list[Message]:
    return [SystemMessage(content="You are a careful assistant."), UserMessage(content=question)]


def run(task: Task, items: list[str], tmp_path: Path | None = None) -> TaskResult:
    transcript = tmp_path / f"{task.id}.jsonl" if tmp_path else None
    fixture = SUITE.workspaces[task.workspace]
    return run_task(task, fixture, ScriptedTurn(list(items)), transcript=transcript, opening=opening)


def test_the_suite_is_big_and_varied_enough() -> None:
    counts = Counter(task.category for task in SUITE.tasks)
    assert len(SUITE.tasks) >= 48
    assert set(counts) == set(CATEGORIES)
    assert min(counts.values()) >= 6, counts
    assert len(TASKS) == len(SUITE.tasks)
    assert {task.workspace for task in SUITE.tasks} == set(SUITE.workspaces)
    for fixture in SUITE.workspaces.values():
        assert any("/" in path for path in fixture.files), "every workspace has a subdirectory"


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda task: task.id)
def test_the_tools_of_every_task_load(task: Task, tmp_path: Path) -> None:
    assert select_tools(task.tools, Workspace(tmp_path))


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda task: task.id)
def test_the_reference_solution_succeeds_through_the_real_runner(task: Task, tmp_path: Path) -> None:
    result = run(task, task.solution, tmp_path)
    assert result.success, (result.status, result.error, result.problems)
    assert (result.status, result.tool_errors == 0 or task.category == "impossible") == ("final", True)
    assert result.steps == len(task.solution)
    assert result.transcript is not None and read_messages(result.transcript)


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda task: task.id)
def test_the_wrong_run_fails(task: Task) -> None:
    # The wrong answer again, for an edit the change check tells the run it has not made.
    result = run(task, task.wrong + task.wrong[-1:])
    assert result.status == "final"
    assert not result.success and result.problems


@pytest.mark.parametrize("task", ANSWERED, ids=lambda task: task.id)
def test_the_tools_really_show_the_reference_answer(task: Task, tmp_path: Path) -> None:
    """The fact the answer states comes out of the fixture through the tools, not out of the script."""
    result = run(task, task.solution, tmp_path)
    assert result.transcript is not None
    observations = "\n".join(
        STEPS_LEFT.sub("", message.content)
        for message in read_messages(result.transcript)
        if isinstance(message, ToolMessage)
    )
    if task.category == "no_tool":
        assert observations == ""
        return
    for pattern in task.answer:
        assert whole_word(pattern).search(observations), pattern
    if task.number is not None:
        assert any(abs(value - task.number) <= task.tolerance + 1e-9 for value in numbers_in(observations))


@pytest.mark.parametrize("task", ANSWERED, ids=lambda task: task.id)
def test_echoing_the_question_or_giving_up_does_not_pass(task: Task) -> None:
    assert answer_problems(task, task.question)
    assert answer_problems(task, "I could not find it.")
    assert answer_problems(task, "")


@pytest.mark.parametrize("task", [t for t in SUITE.tasks if t.category == "impossible"], ids=lambda t: t.id)
def test_an_impossible_task_needs_the_answer_to_say_it_is_not_there(task: Task) -> None:
    assert answer_problems(task, "Yes.") == ["the answer does not say that the file or fact does not exist"]
    assert answer_problems(task, task.question)


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda task: task.id)
def test_the_right_answer_without_a_final_status_fails(task: Task) -> None:
    fixture = SUITE.workspaces[task.workspace]
    files = {path: text.encode() for path, text in fixture.files.items()}
    answer = task.solution[-1].split("Final Answer:", 1)[1].strip()
    verdict = check_run(task, "max_steps", answer, files, files)
    assert not verdict.success
    assert verdict.problems[0] == "the run ended with status max_steps, not a final answer"


def test_answers_are_not_all_in_the_first_file_nor_all_in_the_same_place() -> None:
    first_paths = Counter(
        re.search(r'"path": "([^"]+)"', task.solution[0]).group(1)  # type: ignore[union-attr]
        for task in SUITE.tasks
        if '"path"' in task.solution[0]
    )
    assert first_paths.most_common(1)[0][1] <= 6, first_paths
    assert sum(task.tools != "default" for task in SUITE.tasks) >= 8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[workspaces", "is not valid TOML"),
        ("[workspaces.w]\ndescription = 'x'\nfiles = {'a.txt' = 'a'}\n", "tasks: Field required"),
        (
            "[workspaces.w]\ndescription = 'x'\nfiles = {'../a.txt' = 'a'}\n",
            "'../a.txt' is not a plain relative path",
        ),
    ],
)
def test_a_broken_suite_file_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(SuiteError, match=re.escape(message)):
        load_suite(text)


BASE = """
[workspaces.w]
description = "x"
files = {"a.txt" = "a"}

[[tasks]]
id = "read-a"
category = "read"
workspace = "w"
question = "q"
solution = ["Thought: t\\nFinal Answer: a"]
wrong = ["Thought: t\\nFinal Answer: b"]
"""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("answer = ['a']\nbogus = 1\n", "task 'read-a'.bogus: Extra inputs are not permitted"),
        ("answer = ['(a']\n", "invalid regular expression '(a'"),
        ("", "the task checks nothing"),
        ("answer = ['a']\nfiles = {'a.txt' = 'b'}\n", "a read task cannot expect file changes"),
    ],
)
def test_a_task_that_cannot_be_judged_is_refused(extra: str, message: str) -> None:
    with pytest.raises(SuiteError, match=re.escape(message)):
        load_suite(BASE + extra)


def test_ids_are_unique_and_workspaces_must_exist() -> None:
    task = BASE.split("[[tasks]]")[1] + "answer = ['a']\n"
    with pytest.raises(SuiteError, match="task id 'read-a' is used twice"):
        load_suite(BASE + "answer = ['a']\n[[tasks]]" + task)
    with pytest.raises(SuiteError, match="unknown workspace 'nowhere'"):
        load_suite(BASE.replace('workspace = "w"', 'workspace = "nowhere"') + "answer = ['a']\n")


def test_selecting_tasks_by_category_glob_and_limit() -> None:
    edits = SUITE.select(["edit"])
    assert {t.category for t in edits} == {"edit"}
    assert len(edits) == sum(t.category == "edit" for t in SUITE.tasks)
    chosen = [t.id for t in SUITE.tasks if t.id == "read-flour" or t.id.startswith("no_tool-")]
    assert [t.id for t in SUITE.select(patterns=["read-flour", "no_tool-*"], limit=2)] == chosen[:2]
    held_out = SUITE.select(splits=["held_out"])
    assert held_out and all(t.split == "held_out" for t in held_out)
    assert len(held_out) + len(SUITE.select(splits=["dev"])) == len(SUITE.tasks)
    with pytest.raises(SuiteError, match="unknown split 'test'"):
        SUITE.select(splits=["test"])
    assert SUITE.select(["edit"], ["edit-*", "read-*"]) == SUITE.select(["edit"])
    with pytest.raises(SuiteError, match="unknown category 'bogus'"):
        SUITE.select(["bogus"])
    with pytest.raises(SuiteError, match=re.escape("no task matches 'nothing-*'")):
        SUITE.select(patterns=["nothing-*"])
    with pytest.raises(SuiteError, match="no task is in the chosen categories"):
        SUITE.select(["edit"], ["read-*"])


def test_the_suite_ships_as_package_data() -> None:
    """The suite is read through importlib.resources and pyproject packages it for the wheel."""
    import tomllib
    from fnmatch import fnmatch

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["localagent"]
    assert any(fnmatch("evaluation/suite/small_folders.toml", pattern) for pattern in shipped)
    folder = Path(__file__).parents[1] / "localagent" / "evaluation" / "suite"
    for path in (folder / "workspaces").rglob("*"):
        if path.is_file():
            relative = path.relative_to(folder.parent.parent).as_posix()
            assert any(fnmatch(relative, pattern) for pattern in shipped), relative


def test_the_split_is_fixed_by_the_task_id_alone() -> None:
    from localagent.evaluation.tasks import split_of

    held_out = [task for task in SUITE.tasks if task.split == "held_out"]
    assert 0.3 < len(held_out) / len(SUITE.tasks) < 0.5
    assert all(split_of(task.id) == task.split for task in SUITE.tasks)
    # A hash of the id alone, pinned here: a change of rule would silently mix the splits.
    assert [split_of(name) for name in ("read-flour", "edit-threshold", "no_tool-gold-symbol")] == [
        "dev",
        "dev",
        "held_out",
    ]
    for workspace in SUITE.workspaces:
        splits = {task.split for task in SUITE.tasks if task.workspace == workspace}
        assert splits == {"dev", "held_out"}, workspace
