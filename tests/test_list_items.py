"""tick_box and add_item: Markdown list edits that find their line by the item's words, and refuse
with one line, leaving the file as it was, whatever they cannot do exactly."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localagent.tools.base import ToolError
from localagent.tools.files import FileTools
from localagent.tools.list_items import ticked, with_item_added
from localagent.tools.workspace import Workspace

ALLOTMENT = """# Allotment jobs

Things to do before the frost.

## This week

- [x] Cut back the lavender
- [ ] Plant the tulip bulbs
- [ ] Net the brassicas
  (the old net has a hole)

## Someday

- [ ] Build a cold frame
- [ ] Plant a second tulip bed
"""


@pytest.fixture
def allotment(tmp_path: Path) -> tuple[FileTools, Path]:
    (tmp_path / "allotment.md").write_text(ALLOTMENT)
    return FileTools(Workspace(tmp_path)), tmp_path / "allotment.md"


def test_a_box_found_by_its_words_is_ticked_and_nothing_else_changes(
    allotment: tuple[FileTools, Path],
) -> None:
    tools, path = allotment
    assert (
        tools.tick_box("allotment.md", "net the BRASSICAS")
        == "Ticked line 9 of allotment.md: - [x] Net the brassicas"
    )
    assert path.read_text() == ALLOTMENT.replace("- [ ] Net the", "- [x] Net the")


def test_the_item_may_come_with_its_marker_and_box(allotment: tuple[FileTools, Path]) -> None:
    tools, path = allotment
    tools.tick_box("allotment.md", "- [ ] Build a cold frame")
    assert "- [x] Build a cold frame" in path.read_text()


@pytest.mark.parametrize(
    ("item", "why"),
    [
        (
            "tulip",
            "2 open boxes of allotment.md hold 'tulip' (lines 8, 15). Nothing was changed. Give more of",
        ),
        (
            "lavender",
            "The box of 'lavender' at line 7 of allotment.md is ticked already. Nothing was changed.",
        ),
        (
            "mow the lawn",
            "No open box of allotment.md holds 'mow the lawn'. Nothing was changed. Its open boxes: "
            "line 8: Plant the tulip bulbs; line 9: Net the brassicas;",
        ),
        ("  ", "item is empty."),
    ],
)
def test_a_tick_it_cannot_make_exactly_is_refused_in_one_line(
    allotment: tuple[FileTools, Path], item: str, why: str
) -> None:
    tools, path = allotment
    with pytest.raises(ToolError) as refused:
        tools.tick_box("allotment.md", item)
    assert str(refused.value).startswith(why)
    assert "\n" not in str(refused.value)
    assert path.read_text() == ALLOTMENT


def test_an_item_goes_at_the_end_of_the_named_sections_list_with_its_marker(
    allotment: tuple[FileTools, Path],
) -> None:
    tools, path = allotment
    assert tools.add_item("allotment.md", "Order seed potatoes", section="this week") == (
        "Added line 11 of allotment.md: - [ ] Order seed potatoes"
    )
    expected = ALLOTMENT.replace(
        "(the old net has a hole)\n", "(the old net has a hole)\n- [ ] Order seed potatoes\n"
    )
    assert path.read_text() == expected


def test_without_a_section_an_item_joins_the_last_list_that_has_open_items(tmp_path: Path) -> None:
    (tmp_path / "reading.md").write_text("# To read\n\n- [ ] Dune\n\n# Read\n\n- [x] Emma\n")
    FileTools(Workspace(tmp_path)).add_item("reading.md", "- [ ] Middlemarch")
    after = (tmp_path / "reading.md").read_text()
    assert after == "# To read\n\n- [ ] Dune\n- [ ] Middlemarch\n\n# Read\n\n- [x] Emma\n"


def test_a_numbered_list_gets_the_next_number_and_a_file_without_a_final_newline_keeps_none(
    tmp_path: Path,
) -> None:
    (tmp_path / "steps.md").write_text("1. Boil water\n2. Add pasta")
    FileTools(Workspace(tmp_path)).add_item("steps.md", "Drain")
    assert (tmp_path / "steps.md").read_text() == "1. Boil water\n2. Add pasta\n3. Drain"


@pytest.mark.parametrize(
    ("item", "section", "why"),
    [
        ("Build a cold frame", "", "The list already has 'Build a cold frame', at line 14 of allotment.md."),
        (
            "Net the brassicas",
            "this week",
            "The list under 'This week' already has 'Net the brassicas', at line 9",
        ),
        (
            "Prune the apple",
            "orchard",
            "No heading of allotment.md holds 'orchard'. Nothing was changed. Its headings: "
            "line 1: Allotment jobs; line 5: This week; line 12: Someday.",
        ),
        ("Line one\nline two", "", "item holds a line break."),
        ("", "", "item is empty."),
    ],
)
def test_an_addition_it_cannot_make_exactly_is_refused_in_one_line(
    allotment: tuple[FileTools, Path], item: str, section: str, why: str
) -> None:
    tools, path = allotment
    with pytest.raises(ToolError) as refused:
        tools.add_item("allotment.md", item, section=section)
    assert str(refused.value).startswith(why)
    assert "\n" not in str(refused.value)
    assert path.read_text() == ALLOTMENT


def test_a_file_without_a_list_is_refused_with_the_way_to_append(tmp_path: Path) -> None:
    (tmp_path / "letter.md").write_text("Dear Ana,\n\nThanks for the seeds.\n")
    with pytest.raises(
        ToolError, match=r"letter.md has no list. Nothing was changed. .* replace_in_file with old ''"
    ):
        FileTools(Workspace(tmp_path)).add_item("letter.md", "P.S.")


def test_the_check_before_approval_refuses_what_the_edit_would(allotment: tuple[FileTools, Path]) -> None:
    tools, path = allotment
    by_name = {tool.name: tool for tool in tools.tools()}
    assert by_name["tick_box"].changes_files and by_name["add_item"].changes_files
    with pytest.raises(ToolError, match="ticked already"):
        by_name["tick_box"].dry_run({"path": "allotment.md", "item": "lavender"})
    with pytest.raises(ToolError, match="No such file"):
        by_name["add_item"].dry_run({"path": "nowhere.md", "item": "x"})
    by_name["add_item"].dry_run({"path": "allotment.md", "item": "Sow the broad beans"})
    assert path.read_text() == ALLOTMENT


def test_a_path_outside_the_workspace_or_in_git_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws" / ".git").mkdir(parents=True)
    (tmp_path / "ws" / ".git" / "plans.md").write_text("- [ ] x\n")
    (tmp_path / "outside.md").write_text("- [ ] y\n")
    tools = FileTools(Workspace(tmp_path / "ws"))
    with pytest.raises(ToolError, match=r"inside \.git"):
        tools.tick_box(".git/plans.md", "x")
    with pytest.raises(ToolError):
        tools.add_item("../outside.md", "z")
    assert (tmp_path / "outside.md").read_text() == "- [ ] y\n"


def test_the_pure_functions_give_the_approvals_diff_the_same_text() -> None:
    assert ticked("- [ ] a\n", "a", "x.md").text == "- [x] a\n"
    assert with_item_added("* one\n", "two", "", "x.md").text == "* one\n* two\n"


def test_an_item_copied_from_a_search_result_is_found(allotment: tuple[FileTools, Path]) -> None:
    tools, path = allotment
    assert "- [ ] Net the brassicas" in path.read_text()
    copied = "allotment.md:9: - [ ] Net the brassicas  (under '## This week')"
    assert tools.tick_box("allotment.md", copied) == "Ticked line 9 of allotment.md: - [x] Net the brassicas"


def test_a_file_named_without_its_folder_gets_the_files_of_that_name(tmp_path: Path) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "allotment.md").write_text(ALLOTMENT)
    tools = FileTools(Workspace(tmp_path))
    with pytest.raises(ToolError) as refused:
        tools.tick_box("allotment.md", "brassicas")
    assert str(refused.value) == "No such file: allotment.md. Files of that name: plans/allotment.md."
    with pytest.raises(ToolError, match=r"No such file: cellar\.md\. Use list_dir"):
        tools.add_item("cellar.md", "Fix the door")
    assert (tmp_path / "plans" / "allotment.md").read_text() == ALLOTMENT


def test_a_file_named_in_another_case_is_the_file_not_a_missing_one(
    allotment: tuple[FileTools, Path],
) -> None:
    tools, path = allotment
    assert tools.tick_box("ALLOTMENT.md", "brassicas").startswith("Ticked line 9 of allotment.md")
    assert "- [x] Net the brassicas" in path.read_text()


def test_a_section_whose_list_has_no_boxes_gets_a_plain_item(tmp_path: Path) -> None:
    (tmp_path / "seeds.md").write_text(
        "# Seeds\n\n## Sow in spring\n\n* Beetroot\n* Chard\n\n## Sown\n\n- [x] Peas\n"
    )
    FileTools(Workspace(tmp_path)).add_item("seeds.md", "Radish", section="sow in spring")
    assert (tmp_path / "seeds.md").read_text() == (
        "# Seeds\n\n## Sow in spring\n\n* Beetroot\n* Chard\n* Radish\n\n## Sown\n\n- [x] Peas\n"
    )


@pytest.mark.parametrize(
    ("before", "after", "report"),
    [
        (
            "## Shed\n\n- [ ] Oil the mower\n\n## Pond\n\nThe liner leaks.\n\n## Hedge\n",
            "## Shed\n\n- [ ] Oil the mower\n\n## Pond\n\nThe liner leaks.\n\n"
            "- [ ] Mend the liner\n\n## Hedge\n",
            "Added line 9 of plot.md, a new list under 'Pond': - [ ] Mend the liner",
        ),
        (
            "# Plot\n\n## Pond\n## Hedge\n\n1. Trim the top\n",
            "# Plot\n\n## Pond\n\n1. Mend the liner\n\n## Hedge\n\n1. Trim the top\n",
            "Added line 5 of plot.md, a new list under 'Pond': 1. Mend the liner",
        ),
        (
            "# Plot\r\n\r\n## Pond\r\n",
            "# Plot\r\n\r\n## Pond\r\n\r\n- Mend the liner\r\n",
            "Added line 5 of plot.md, a new list under 'Pond': - Mend the liner",
        ),
        (
            "## Pond",
            "## Pond\n\n- Mend the liner",
            "Added line 3 of plot.md, a new list under 'Pond': - Mend the liner",
        ),
    ],
)
def test_a_section_with_no_list_yet_gets_one_in_the_marker_of_the_nearest_list(
    tmp_path: Path, before: str, after: str, report: str
) -> None:
    (tmp_path / "plot.md").write_bytes(before.encode())
    assert FileTools(Workspace(tmp_path)).add_item("plot.md", "Mend the liner", section="pond") == report
    assert (tmp_path / "plot.md").read_bytes() == after.encode()


def test_lines_in_a_fenced_code_block_are_neither_items_nor_headings(tmp_path: Path) -> None:
    text = (
        "## Setup\n\n- [ ] Install the logger\n\n```sh\n# fetch it\n- [ ] not a task\n```\n\n"
        "- [ ] Calibrate the logger\n\n## Later\n"
    )
    (tmp_path / "station.md").write_text(text)
    tools = FileTools(Workspace(tmp_path))
    with pytest.raises(ToolError, match=r"No heading of station\.md holds 'fetch it'"):
        tools.add_item("station.md", "Wire the mast", section="fetch it")
    with pytest.raises(ToolError, match=r"No open box of station\.md holds 'not a task'"):
        tools.tick_box("station.md", "not a task")
    assert (tmp_path / "station.md").read_text() == text
    tools.add_item("station.md", "Wire the mast", section="setup")
    assert (
        "- [ ] Calibrate the logger\n- [ ] Wire the mast\n\n## Later\n"
        in (tmp_path / "station.md").read_text()
    )


def test_the_item_named_exactly_is_ticked_when_longer_ones_hold_its_words(tmp_path: Path) -> None:
    (tmp_path / "rota.md").write_text("- [ ] Feed the hens and the goats\n- [ ] Feed the hens\n")
    tools = FileTools(Workspace(tmp_path))
    assert tools.tick_box("rota.md", "feed the hens.") == "Ticked line 2 of rota.md: - [x] Feed the hens"
    assert tools.tick_box("rota.md", "[ ] Feed the **hens** and the goats").startswith("Ticked line 1")
    assert (tmp_path / "rota.md").read_text() == "- [x] Feed the hens and the goats\n- [x] Feed the hens\n"


def test_an_item_given_with_a_box_but_no_marker_is_added_once(allotment: tuple[FileTools, Path]) -> None:
    tools, path = allotment
    tools.add_item("allotment.md", "[ ] Sow the broad beans", section="someday")
    assert path.read_text().endswith("- [ ] Plant a second tulip bed\n- [ ] Sow the broad beans\n")


MARKDOWN_PIECES = st.sampled_from(
    ["- ", "* ", "1. ", "[ ] ", "[x] ", "Sow", "the beans", "\n", "\r\n", "  ", "# ", "## ", "```", "Beds"]
)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(MARKDOWN_PIECES, max_size=25),
    item=st.sampled_from(["Sow", "the beans", "- [ ] Sow the beans", "Weed"]),
    section=st.sampled_from(["", "Beds", "Sow"]),
)
def test_a_tick_changes_one_box_and_an_addition_only_adds_lines_or_each_refuses(
    pieces: list[str], item: str, section: str
) -> None:
    text = "".join(pieces)
    old_lines = text.splitlines()
    with contextlib.suppress(ToolError):
        new_lines = ticked(text, item, "beds.md").text.splitlines()
        changed = [(old, new) for old, new in zip(old_lines, new_lines, strict=True) if old != new]
        assert len(changed) == 1 and changed[0][0].replace("[ ]", "[x]", 1) == changed[0][1]
    with contextlib.suppress(ToolError):
        added = with_item_added(text, item, section, "beds.md").text.splitlines()
        assert len(added) > len(old_lines)
        kept = iter(added)
        assert all(line in kept for line in old_lines)  # every old line, in order
