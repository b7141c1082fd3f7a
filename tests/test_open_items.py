"""The open items of a workspace's task lists, put before a question that asks what is still to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.evidence.gathering import gather_evidence
from localagent.evidence.index import WorkspaceIndex
from localagent.evidence.open_items import asks_what_is_open
from localagent.tools.workspace import Workspace
from localagent.turn import prompts

CHORES = (
    "# Chores\n\n## Garden\n- [x] Mow the lawn\n- [ ] Prune the roses\n\n## House\n- [ ] Clean the gutters\n"
)
CAMPING = "# Camping gear\n- [ ] Tent pegs\n- [x] Head torch\n- [ ] Gas canister\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "chores.md").write_text(CHORES)
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "camping-gear.md").write_text(CAMPING)
    (tmp_path / "README.md").write_text("# Home\nNothing to do here.\n")
    return tmp_path


def evidence_for(folder: Path, question: str) -> str:
    with WorkspaceIndex(Workspace(folder), on_disk=False) as index:
        index.refresh()
        found = gather_evidence(index, question)
        return prompts.evidence_block(found.passages, found.absent, found.counts, found.open_lists)


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("What's still open on my chores list?", True),
        ("List the unchecked items.", True),
        ("Which tasks are not done yet?", True),
        ("What is left to do in the garden?", True),
        ("Add 'Paint the fence' as a new open item.", False),  # an instruction names its own item
        ("Tick off the open item about the roses.", False),
        ("When does the shop open?", False),
        ("Which of the packing items are still open?", True),
        ("How many items did I finish?", False),
    ],
)
def test_which_questions_ask_what_is_open(question: str, asks: bool) -> None:
    assert asks_what_is_open(question) is asks


def test_the_list_a_question_names_comes_with_its_open_items_counted(folder: Path) -> None:
    assert evidence_for(folder, "What's still open on my camping gear list?") == (
        "Open items of the task lists (boxes not ticked), read from the files:\n"
        "lists/camping-gear.md, 2 of 3 items open:\n"
        "2: - [ ] Tent pegs (under 'Camping gear')\n"
        "4: - [ ] Gas canister (under 'Camping gear')"
    )
    assert evidence_for(folder, "Which chores are still open?").splitlines()[1:] == [
        "chores.md, 2 of 3 items open:",
        "5: - [ ] Prune the roses (under 'Garden')",
        "8: - [ ] Clean the gutters (under 'House')",
    ]


def test_a_question_that_names_no_list_gets_every_list(folder: Path) -> None:
    shown = evidence_for(folder, "Which items are still open?")
    assert "chores.md, 2 of 3 items open:" in shown
    assert "lists/camping-gear.md, 2 of 3 items open:" in shown
    assert evidence_for(folder, "What is still open?") == ""  # a shop's hours, perhaps: no list named


def test_a_ticked_box_is_never_shown_and_a_folder_without_lists_gets_none(
    folder: Path, tmp_path: Path
) -> None:
    assert "Mow the lawn" not in evidence_for(folder, "Which items are still open?")
    empty = tmp_path / "plain"
    empty.mkdir()
    (empty / "notes.txt").write_text("open at weekends\n")
    assert evidence_for(empty, "Which items are still open?") == ""


def test_the_question_is_found_again_after_the_open_items() -> None:
    message = prompts.first_task(
        "What is still open?",
        "todo.md: # To do",
        "Open items of the task lists (boxes not ticked), read from the files:\n"
        "todo.md, 1 of 1 items open:\n1: - [ ] Go",
    )
    assert prompts.question_of(message) == "What is still open?"
