"""search_text shows the other lines of the workspace that name what its matches name."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.tools.base import ToolError
from localagent.tools.files import FileTools
from localagent.tools.found_lines import FoundLine
from localagent.tools.linked_lines import HEADING, LINES_PER_NAME, names_in
from localagent.tools.workspace import Workspace

TEAM = "| Name | Role | Room |\n| Aiko Tanaka | Finance | A2.07 |\n| Sanna Virtanen | IT support | B2.14 |\n"


@pytest.fixture
def tools(tmp_path: Path) -> FileTools:
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "expenses.md").write_text(
        "# Expenses\n\nTaxi rides over 50 euros need approval from Finance before the trip.\n"
        "Hand in every receipt within 30 days.\n"
    )
    (tmp_path / "team.md").write_text(TEAM)
    orders = "".join(f"{number},P-101\n" for number in range(LINES_PER_NAME + 1))
    (tmp_path / "orders.csv").write_text("id,sku\n" + orders)
    (tmp_path / "products.csv").write_text("sku,name\nP-101,Enamel mug\n")
    return FileTools(Workspace(tmp_path))


def test_a_search_shows_the_row_that_names_what_its_match_names(tools: FileTools) -> None:
    result = tools.search_text("taxi")
    matches, linked = result.split(f"\n{HEADING}")
    assert matches.splitlines()[1].startswith("handbook/expenses.md:3: Taxi rides")
    assert linked.splitlines() == ["Finance:", "team.md:2: | Aiko Tanaka | Finance | A2.07 |"]
    # Searched in one file, the linked lines still come from the whole workspace.
    assert "team.md:2:" in tools.search_text("taxi", path="handbook/expenses.md")


def test_nothing_is_added_without_a_name_or_for_a_name_too_many_lines_hold(tools: FileTools) -> None:
    assert HEADING not in tools.search_text("receipt")
    # P-101 is in more lines of orders.csv than are worth showing: it leads nowhere in particular.
    assert HEADING not in tools.search_text("enamel mug")


def test_names_leave_out_the_searched_words_and_sentence_openers() -> None:
    shown = [FoundLine("a.md", 2, "The taxi needs Finance and P-102, says Olu.", section="# Your Money")]
    assert names_in(shown, "taxi") == ["Finance", "P-102", "Olu"]
    assert names_in(shown, "Finance olu") == ["P-102"]


def test_a_repeated_search_shows_the_files_of_its_matches_not_of_the_linked_lines(tools: FileTools) -> None:
    earlier = tools.search_text("taxi")
    whole = tools.files_of_search({"pattern": "taxi"}, earlier)
    assert whole is not None and "handbook/expenses.md, lines" in whole and "team.md, lines" not in whole


def test_only_the_files_of_linked_lines_shown_may_be_edited_after_the_search(tools: FileTools) -> None:
    # orders.csv names P-101 in more lines than are shown, so none of its lines reached the model.
    assert "orders.csv" not in tools.search_text("enamel mug")
    with pytest.raises(ToolError, match=r"You have not read orders\.csv yet"):
        tools.replace_in_file("orders.csv", "0,P-101", "0,P-102")
    tools.replace_in_file("products.csv", "Enamel mug", "Tin mug")
    # team.md's row for Finance was shown under the taxi rule.
    tools.search_text("taxi")
    tools.replace_in_file("team.md", "A2.07", "A2.08")
    assert "A2.08" in (tools.workspace.resolve("team.md")).read_text()
