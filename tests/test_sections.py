"""A search shows the section a line sits in, and opens a matching section, in every kind of file."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.tools.files import FileTools
from localagent.tools.sections import Sections
from localagent.tools.workspace import Workspace


@pytest.fixture
def aviary(tmp_path: Path) -> tuple[FileTools, Path]:
    return FileTools(Workspace(tmp_path)), tmp_path


def sections_of(path: str, text: str) -> list[str | None]:
    sections = Sections(path)
    return [sections.step(line)[0] for line in text.splitlines()]


def test_markdown_headings_nest_by_level() -> None:
    text = "# Aviary\n## Finches\nseed daily\n## Owls\nmice weekly\n# Staff\nRonja feeds\n"
    assert sections_of("care.md", text) == [
        None,
        None,
        "# Aviary > ## Finches",
        None,
        "# Aviary > ## Owls",
        None,
        "# Staff",
    ]
    # A '#' line outside Markdown is a comment, not a heading.
    assert sections_of("care.txt", "# seeds\nmillet\n") == [None, None]


def test_ini_and_toml_tables_and_indented_blocks_are_sections() -> None:
    assert sections_of("aviary.ini", "[heating]\nmin_temp = 12\n[[perches]]\nheight = 2\n") == [
        None,
        "[heating]",
        None,
        "[[perches]]",
    ]
    yaml = "lights:\n  dawn: 06:30\n  dusk:\n    time: 19:00\nwater: daily\n"
    assert sections_of("aviary.yaml", yaml) == [None, "lights:", "lights:", "lights: > dusk:", None]
    python = "class Perch:\n    def height(self):\n        return 2\n\nLIMIT = 3\n"
    assert sections_of("perch.py", python) == [
        None,
        "class Perch:",
        "class Perch: > def height(self):",
        "class Perch: > def height(self):",
        None,
    ]


def test_a_csv_rows_section_is_its_header() -> None:
    assert sections_of("feed.csv", "date,bird,grams\n2026-01-02,owl,40\n") == [None, "date,bird,grams"]


def test_a_key_under_a_matching_table_is_shown_with_it(aviary: tuple[FileTools, Path]) -> None:
    tools, root = aviary
    toml = '[heating]\nmin_temp = 12\nmode = "night"\n\n[water]\nchange = "daily"\n'
    (root / "aviary.toml").write_text(toml)
    assert tools.search_text("heating") == (
        "Matches for 'heating' in .:\naviary.toml:1: [heating]\n  2: min_temp = 12\n  3: mode = \"night\""
    )
    assert tools.search_text("change") == (
        "Matches for 'change' in .:\naviary.toml:6: change = \"daily\"  (under '[water]')"
    )


def test_a_yaml_key_that_matches_opens_its_block_up_to_the_next_key_at_its_level(
    aviary: tuple[FileTools, Path],
) -> None:
    tools, root = aviary
    (root / "lights.yaml").write_text("lights:\n  dawn: 06:30\n  dusk: 19:00\nwater:\n  change: daily\n")
    assert tools.search_text("lights") == (
        "Matches for 'lights' in .:\nlights.yaml:1: lights:\n  2: dawn: 06:30\n  3: dusk: 19:00"
    )


def test_a_search_that_finds_few_lines_shows_the_lines_around_each(aviary: tuple[FileTools, Path]) -> None:
    tools, root = aviary
    (root / "log.txt").write_text("Nest box cleaned\nRonja checked the owls\nall fine, 3 eggs\n")
    assert tools.search_text("owls") == (
        "Matches for 'owls' in .:\n"
        "log.txt-1- Nest box cleaned\n"
        "log.txt:2: Ronja checked the owls\n"
        "log.txt-3- all fine, 3 eggs"
    )
    # More lines than that: the matches alone.
    (root / "many.txt").write_text("owl\nbreak\n" * 6)
    shown = tools.search_text("owl", path="many.txt").splitlines()
    assert shown[1:] == [f"many.txt:{2 * n + 1}: owl" for n in range(6)]


def test_a_csv_match_names_its_columns(aviary: tuple[FileTools, Path]) -> None:
    tools, root = aviary
    rows = "".join(f"2026-01-{day:02},finch,{day}\n" for day in range(1, 9))
    (root / "feed.csv").write_text("date,bird,grams\n" + rows + "2026-01-09,owl,40\n")
    assert tools.search_text("owl") == (
        "Matches for 'owl' in .:\n"
        "feed.csv-9- 2026-01-08,finch,8\n"
        "feed.csv:10: 2026-01-09,owl,40  (under 'date,bird,grams')"
    )


def test_a_code_not_found_is_not_split_into_its_parts(aviary: tuple[FileTools, Path]) -> None:
    tools, root = aviary
    (root / "rings.txt").write_text("ring R-0017 on the owl\nring R-0018 on a finch\nroom 21\n")
    found = tools.search_text("R-0021")
    assert found.startswith("No matches for 'R-0021' in .")
    assert "rings.txt" not in found
    # A phrase of words still falls back to lines with its words.
    assert "rings.txt:1:" in tools.search_text("owl ring")
