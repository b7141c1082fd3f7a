"""search_text shows the other lines of the workspace that name what its matches name."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.tools.base import ToolError
from localagent.tools.files import FileTools
from localagent.tools.found_lines import FoundLine
from localagent.tools.linked_lines import HEADING, LINES_PER_NAME, names_in
from localagent.tools.workspace import Workspace

STAFF = "| Name | Role | Room |\n| Ilka Rask | Treasury | C3.11 |\n| Bertil Ode | IT support | D1.05 |\n"


@pytest.fixture
def tools(tmp_path: Path) -> FileTools:
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "travel.md").write_text(
        "# Travel\n\nSleeper berths over 50 euros need approval from Treasury before the trip.\n"
        "Keep every ticket stub for 30 days.\n"
    )
    (tmp_path / "staff.md").write_text(STAFF)
    orders = "".join(f"{number},KT-301\n" for number in range(LINES_PER_NAME + 1))
    (tmp_path / "orders.csv").write_text("id,sku\n" + orders)
    (tmp_path / "wares.csv").write_text("sku,name\nKT-301,Copper ladle\n")
    return FileTools(Workspace(tmp_path))


def test_a_search_shows_the_row_that_names_what_its_match_names(tools: FileTools) -> None:
    result = tools.search_text("sleeper")
    matches, linked = result.split(f"\n{HEADING}")
    assert matches.splitlines()[1].startswith("handbook/travel.md:3: Sleeper berths")
    assert linked.splitlines() == ["Treasury:", "staff.md:2: | Ilka Rask | Treasury | C3.11 |"]
    # Searched in one file, the linked lines still come from the whole workspace.
    assert "staff.md:2:" in tools.search_text("sleeper", path="handbook/travel.md")


def test_nothing_is_added_without_a_name_or_for_a_name_too_many_lines_hold(tools: FileTools) -> None:
    assert HEADING not in tools.search_text("stub")
    # KT-301 is in more lines of orders.csv than are worth showing: it leads nowhere in particular.
    assert HEADING not in tools.search_text("copper ladle")


def test_names_leave_out_the_searched_words_and_sentence_openers() -> None:
    shown = [
        FoundLine("a.md", 2, "The sleeper needs Treasury and KT-302, says Tove.", section="# Your Money")
    ]
    assert names_in(shown, "sleeper") == ["Treasury", "KT-302", "Tove"]
    assert names_in(shown, "Treasury tove") == ["KT-302"]


def test_a_repeated_search_shows_the_files_of_its_matches_not_of_the_linked_lines(tools: FileTools) -> None:
    earlier = tools.search_text("sleeper")
    whole = tools.files_of_search({"pattern": "sleeper"}, earlier)
    assert whole is not None and "handbook/travel.md, lines" in whole and "staff.md, lines" not in whole


def test_only_the_files_of_linked_lines_shown_may_be_edited_after_the_search(tools: FileTools) -> None:
    # orders.csv names KT-301 in more lines than are shown, so none of its lines reached the model.
    assert "orders.csv" not in tools.search_text("copper ladle")
    with pytest.raises(ToolError, match=r"You have not read orders\.csv yet"):
        tools.replace_in_file("orders.csv", "0,KT-301", "0,KT-302")
    tools.replace_in_file("wares.csv", "Copper ladle", "Tin ladle")
    # staff.md's row for Treasury was shown under the sleeper rule.
    tools.search_text("sleeper")
    tools.replace_in_file("staff.md", "C3.11", "C3.12")
    assert "C3.12" in (tools.workspace.resolve("staff.md")).read_text()
