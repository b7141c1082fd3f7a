"""The built-in file tools: outputs, caps and their notices, atomic writes and the exactly-once edit rule."""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import ToolFinished
from localagent.core.messages import ToolRequest
from localagent.loop.tool_execution import ToolExecutor, deny_all
from localagent.tools import files
from localagent.tools.base import InvalidArguments, Tool, ToolError
from localagent.tools.files import (
    LINE_CHAR_LIMIT,
    LIST_LIMIT,
    NOTHING_FOUND_ADVICE,
    READ_CHAR_LIMIT,
    SEARCH_MATCH_LIMIT,
    SECTION_LINES_SHOWN,
    SECTIONS_OPENED,
    FileTools,
)
from localagent.tools.workspace import Workspace
from localagent.turn.prompts import REPEATED_CALL


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    print('hello')\n")
    (root / "README.md").write_text("# Demo\nhello world\n")
    (root / "docs").mkdir()
    return root


@pytest.fixture
def tools(ws: Path) -> FileTools:
    return FileTools(Workspace(ws))


def files_in(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


# list_dir


def test_list_dir_sorts_with_directories_first_and_marked(tools: FileTools) -> None:
    assert tools.list_dir() == "Directory . (3 entries):\ndocs/\nsrc/\nREADME.md"
    assert tools.list_dir("src") == "Directory src (2 entries):\npkg/\nmain.py"


def test_list_dir_of_an_empty_directory(tools: FileTools) -> None:
    assert tools.list_dir("docs") == "Directory docs is empty."


def test_list_dir_is_capped_with_a_notice(tools: FileTools, ws: Path) -> None:
    for number in range(LIST_LIMIT + 5):
        (ws / "docs" / f"note{number:04}.txt").write_text("x")
    output = tools.list_dir("docs").splitlines()
    assert output[0] == f"Directory docs ({LIST_LIMIT + 5} entries):"
    assert len(output) == LIST_LIMIT + 2
    assert output[-1].startswith(f"[Only the first {LIST_LIMIT} of {LIST_LIMIT + 5} entries are shown.")


def test_list_dir_errors_say_what_to_do(tools: FileTools) -> None:
    with pytest.raises(ToolError, match=r"No such directory: nope\. Call list_dir with path '\.'"):
        tools.list_dir("nope")
    with pytest.raises(ToolError, match=r"README\.md is a file, not a directory\. Use read_file"):
        tools.list_dir("README.md")


# read_file


def test_read_file_numbers_lines(tools: FileTools) -> None:
    assert tools.read_file("src/main.py") == (
        "src/main.py, lines 1-4 of 4:\n1: import os\n2: \n3: def main():\n4:     print('hello')"
    )


def test_a_short_file_is_shown_whole_whatever_the_start_line(tools: FileTools) -> None:
    whole = "src/main.py, lines 1-4 of 4:\n1: import os\n2: \n3: def main():\n4:     print('hello')"
    assert tools.read_file("src/main.py", start_line=3) == whole
    assert tools.read_file("src/main.py", start_line=9) == whole


def test_a_long_file_is_read_on_from_a_line(tools: FileTools, ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {number} " + "x" * 70 + "\n" for number in range(1, 501)))
    assert tools.read_file("big.txt", start_line=499).splitlines() == [
        "big.txt, lines 499-500 of 500:",
        "499: line 499 " + "x" * 70,
        "500: line 500 " + "x" * 70,
    ]
    with pytest.raises(ToolError, match=r"start_line 501 is past the end of big\.txt, which has 500 lines"):
        tools.read_file("big.txt", start_line=501)


def test_read_file_truncates_with_a_notice_that_says_how_to_read_on(tools: FileTools, ws: Path) -> None:
    lines = [f"line {number} " + "x" * 70 for number in range(1, 501)]
    (ws / "big.txt").write_text("\n".join(lines) + "\n")
    output = tools.read_file("big.txt")
    assert len(output) < READ_CHAR_LIMIT + 400
    match = re.search(r"call read_file with start_line=(\d+)\.\]$", output)
    assert match, output[-300:]
    next_line = int(match.group(1))
    assert output.startswith(f"big.txt, lines 1-{next_line - 1} of 500:\n")
    assert f"[Truncated: lines {next_line}-500 are not shown" in output
    assert f"\n{next_line - 1}: line {next_line - 1} " in output
    assert f"\n{next_line}: " not in output
    # Following the notice continues exactly where the first call stopped.
    following = tools.read_file("big.txt", start_line=next_line)
    assert following.splitlines()[1].startswith(f"{next_line}: line {next_line} ")


def test_read_file_cuts_a_huge_line(tools: FileTools, ws: Path) -> None:
    (ws / "minified.js").write_text("a" * (LINE_CHAR_LIMIT * 50) + "\nsecond\n")
    output = tools.read_file("minified.js")
    assert output.splitlines() == [
        "minified.js, lines 1-2 of 2:",
        "1: " + "a" * LINE_CHAR_LIMIT + " [line cut]",
        "2: second",
    ]


def test_read_file_refuses_binary_files(tools: FileTools, ws: Path) -> None:
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match=r"image\.png is a binary file; read_file can only read text files"):
        tools.read_file("image.png")


def test_read_file_errors(tools: FileTools, ws: Path) -> None:
    (ws / "empty.txt").write_text("")
    assert tools.read_file("empty.txt") == "empty.txt is empty (0 lines)."
    with pytest.raises(ToolError, match=r"No such file: src/nope\.py\. Use list_dir"):
        tools.read_file("src/nope.py")
    with pytest.raises(ToolError, match="src is a directory, not a file"):
        tools.read_file("src")


def test_a_file_named_in_other_letter_case_is_found_when_it_is_the_only_match(
    tools: FileTools, ws: Path
) -> None:
    (ws / "Guide").mkdir()
    (ws / "Guide" / "MEMOS.md").write_text("one\n")
    assert tools.read_file("guide/memos.md").splitlines()[0] == "Guide/MEMOS.md, lines 1-1 of 1:"
    assert (
        tools.replace_in_file("guide/Memos.MD", "one", "two")
        == "Replaced the text at line 1 of Guide/MEMOS.md."
    )
    assert (ws / "Guide" / "MEMOS.md").read_text() == "two\n"
    (ws / "Guide" / "memos.md").write_text("other\n")  # two candidates: the exact name wins, else none
    assert tools.read_file("guide/memos.md").startswith("Guide/memos.md")
    with pytest.raises(ToolError, match=r"No such file: Guide/Memos\.md"):
        tools.read_file("Guide/Memos.md")


def test_read_file_refuses_a_fifo_instead_of_blocking(tools: FileTools, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolError, match="pipe is not a regular file"):
        tools.read_file("pipe")


def test_a_symlink_loop_is_a_clear_error(tools: FileTools, ws: Path) -> None:
    (ws / "loop_a").symlink_to("loop_b")
    (ws / "loop_b").symlink_to("loop_a")
    with pytest.raises(ToolError, match="Cannot access loop_a: Too many levels of symbolic links"):
        tools.read_file("loop_a")
    with pytest.raises(ToolError, match="Cannot access loop_a: Too many levels of symbolic links"):
        tools.write_file("loop_a", "x")
    assert tools.search_text("x") == "No matches for 'x' in . (2 files searched).\n" + NOTHING_FOUND_ADVICE


# search_text


def test_search_text_finds_literal_text(tools: FileTools) -> None:
    assert tools.search_text("hello") == (
        "Matches for 'hello' in . (2 matching lines in 2 files):\n"
        "README.md:2: hello world  (under '# Demo')\nsrc/main.py:4: print('hello')"
    )
    # Literal by default: the parenthesis is not a regex group.
    assert (
        tools.search_text("print(")
        == "Matches for 'print(' in . (1 matching line):\nsrc/main.py:4: print('hello')"
    )


def test_plain_search_ignores_case_and_a_regex_does_only_with_a_capital_letter(tools: FileTools) -> None:
    assert tools.search_text("HELLO WORLD") == (
        "Matches for 'HELLO WORLD' in . (1 matching line):\nREADME.md:2: hello world  (under '# Demo')"
    )
    assert tools.search_text("HELLO", regex=True).startswith("No matches for 'HELLO'")
    assert tools.search_text("hel+o w", regex=True) == (
        "Matches for 'hel+o w' in . (1 matching line):\nREADME.md:2: hello world  (under '# Demo')"
    )
    # An escape is no capital letter of the text: \S still ignores case, a literal capital does not.
    assert tools.search_text(r"HEL\S+", path="README.md", regex=True).startswith("No matches")
    assert tools.search_text(r"\Wdemo", path="README.md", regex=True) == (
        "Matches for '\\\\Wdemo' in README.md (1 matching line):\nREADME.md:1: # Demo\n  2: hello world"
    )


def test_a_phrase_not_found_as_written_falls_back_to_lines_with_all_its_words(
    tools: FileTools, ws: Path
) -> None:
    (ws / "bins.py").write_text("SPARE_PART_LIMIT = 5\nspare = 1\n")
    assert tools.search_text("spare-part limit") == (
        "No line holds 'spare-part limit' as written; lines in . with all of its words (1 matching line):\n"
        "bins.py:1: SPARE_PART_LIMIT = 5"
    )


def test_a_question_phrase_falls_back_to_lines_with_most_of_its_words(tools: FileTools, ws: Path) -> None:
    (ws / "club.md").write_text("# Chess club, 4 March\nPresent: Ilka, Tove\n# Quiz club, 1 May\n")
    assert tools.search_text("chess club meetings in March") == (
        "No line holds all the words of 'chess club meetings in March'; lines in . with most of them "
        "(1 matching line):\n"
        "club.md:1: # Chess club, 4 March\n"
        "  2: Present: Ilka, Tove"
    )
    # Half the words is enough; lines with more of them come first.
    assert tools.search_text("quiz chess club in May") == (
        "No line holds all the words of 'quiz chess club in May'; lines in . with most of them "
        "(2 matching lines):\n"
        "club.md:3: # Quiz club, 1 May\nclub.md:1: # Chess club, 4 March\n  2: Present: Ilka, Tove"
    )


def test_two_key_words_fall_back_to_lines_with_either(tools: FileTools, ws: Path) -> None:
    (ws / "relay.toml").write_text('[logging]\nlevel = "notice"\nport = 80\n')
    assert tools.search_text("the log level", path="relay.toml") == (
        "No line holds all the words of 'the log level'; lines in relay.toml with most of them "
        "(2 matching lines):\n"
        'relay.toml:1: [logging]\nrelay.toml:2: level = "notice"'
    )


def test_a_code_not_found_as_written_is_found_with_other_separators_never_by_its_parts(
    tools: FileTools, ws: Path
) -> None:
    (ws / "loans.csv").write_text("loan,tool,days\nL0917,ladder,2\nL-0918,drill,1\nL09170,saw,3\n")
    assert tools.search_text("L-0917", path="loans.csv") == (
        "No line holds 'L-0917' as written; lines in loans.csv with it written another way "
        "(1 matching line):\n"
        "loans.csv:2: L0917,ladder,2"
    )
    # Lines holding only "l" or only "0919" are not that code.
    (ws / "notes.txt").write_text("Lend the ladder to Cato.\nShelf 0919 is full.\n")
    assert tools.search_text("L-0919") == "No matches for 'L-0919' in . (4 files searched)."


def test_a_search_for_a_file_name_points_at_the_file(tools: FileTools) -> None:
    assert tools.search_text("main.py") == (
        "No line holds all the words of 'main.py'; lines in . with most of them (1 matching line):\n"
        "src/main.py:3: def main():\n"
        "Files whose names contain it: src/main.py. Read one with read_file."
    )
    assert tools.search_text("settings.py") == (
        "No matches for 'settings.py' in . (2 files searched).\n" + NOTHING_FOUND_ADVICE
    )


def test_a_regex_for_file_names_points_at_the_files(tools: FileTools, ws: Path) -> None:
    (ws / "orders").mkdir()
    for month in ("01", "02"):
        (ws / "orders" / f"2023-{month}.csv").write_text("order_id,sku\n1,KT-1\n")
    assert tools.search_text(".csv", path="orders", regex=True) == (
        "No matches for '.csv' in orders (2 files searched).\n"
        "Files whose names contain it: orders/2023-01.csv, orders/2023-02.csv. Read one with read_file.\n"
        + NOTHING_FOUND_ADVICE
    )


def test_plain_words_searched_as_a_regex_still_fall_back_to_some_of_the_words(
    tools: FileTools, ws: Path
) -> None:
    (ws / "relay.toml").write_text('[logging]\nlevel = "notice"\n')
    assert tools.search_text("log level", regex=True).startswith(
        "No line holds all the words of 'log level'; lines in . with most of them (2 matching lines):\n"
        "relay.toml:1: [logging]"
    )
    assert tools.search_text("log.level", regex=True).startswith("No matches for 'log.level'")


def test_a_small_file_searched_in_vain_is_shown_whole(tools: FileTools, ws: Path) -> None:
    assert tools.search_text("timeout", path="src/main.py") == (
        "No matches for 'timeout' in src/main.py (1 file searched). The whole file instead:\n"
        + tools.read_file("src/main.py")
    )
    (ws / "big.txt").write_text("line of text\n" * 400)
    assert tools.search_text("timeout", path="big.txt") == (
        "No matches for 'timeout' in big.txt (1 file searched).\n" + NOTHING_FOUND_ADVICE
    )


def test_a_match_in_markdown_names_its_heading_and_other_files_do_not(tools: FileTools, ws: Path) -> None:
    (ws / "CHANGELOG.md").write_text("# Changelog\n\n## 0.7.0\n- Add the `export` command.\n")
    (ws / "relay.toml").write_text("# export settings\nexport = true\n")
    assert tools.search_text("export") == (
        "Matches for 'export' in . (3 matching lines in 2 files):\n"
        "CHANGELOG.md:4: - Add the `export` command.  (under '## 0.7.0')\n"
        "relay.toml:1: # export settings\n"
        "relay.toml:2: export = true"
    )
    # A heading that matches is shown with the lines of its section.
    assert tools.search_text("0.7.0") == (
        "Matches for '0.7.0' in . (1 matching line):\n"
        "CHANGELOG.md:3: ## 0.7.0\n  4: - Add the `export` command."
    )


def test_a_heading_that_matches_shows_the_first_lines_of_its_section(tools: FileTools, ws: Path) -> None:
    rules = "".join(f"Rule {number} about expenses.\n\n" for number in range(1, SECTION_LINES_SHOWN + 3))
    (ws / "spending.md").write_text(f"# Expenses\n\n{rules}# Leave\nNo expenses here.\n")
    shown = tools.search_text("expenses", path="spending.md").splitlines()
    # Blank lines are left out, and lines of the section are shown once, under the heading, even
    # when they match; matches after the lines shown are matches again, up to the next heading's.
    assert shown[1:4] == [
        "spending.md:1: # Expenses",
        "  3: Rule 1 about expenses.",
        "  5: Rule 2 about expenses.",
    ]
    assert len(shown) == 2 + SECTION_LINES_SHOWN + 3
    rule = SECTION_LINES_SHOWN + 1  # the first rule left out of the section
    assert shown[-3] == f"spending.md:{2 * rule + 1}: Rule {rule} about expenses.  (under '# Expenses')"
    assert shown[-1] == f"spending.md:{2 * SECTION_LINES_SHOWN + 8}: No expenses here.  (under '# Leave')"
    # Only the first few headings that match open their sections.
    (ws / "notes.md").write_text(
        "".join(f"# Note {number}\nbody {number}\n" for number in range(SECTIONS_OPENED + 1))
    )
    shown = tools.search_text("note", path="notes.md").splitlines()
    assert (
        shown.count("notes.md:1: # Note 0") == 1
        and f"  {2 * SECTIONS_OPENED}: body {SECTIONS_OPENED - 1}" in shown
    )
    assert shown[-1] == f"notes.md:{2 * SECTIONS_OPENED + 1}: # Note {SECTIONS_OPENED}"


def test_search_text_with_a_regex_and_a_path(tools: FileTools) -> None:
    assert tools.search_text(r"^def \w+\(", path="src", regex=True) == (
        "Matches for '^def \\\\w+\\\\(' in src (1 matching line):\nsrc/main.py:3: def main():"
    )
    assert tools.search_text("import", path="src/main.py") == (
        "Matches for 'import' in src/main.py (1 matching line):\nsrc/main.py:1: import os"
    )


def test_search_text_bad_regex_is_a_clear_error(tools: FileTools) -> None:
    with pytest.raises(ToolError, match=r"Invalid regular expression '\(unclosed'.*set regex to false"):
        tools.search_text("(unclosed", regex=True)


def test_search_text_stops_a_catastrophic_pattern_with_a_clear_error(
    tools: FileTools, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a|aa)+$ tries every way to split the a's before failing at '!': about 2**40 on this line.
    (ws / "aaa.txt").write_text("a" * 40 + "!\n")
    monkeypatch.setattr(files, "SEARCH_REGEX_SECONDS", 0.2)
    with pytest.raises(ToolError) as caught:
        tools.search_text("(a|aa)+$", path="aaa.txt", regex=True)
    assert str(caught.value) == (
        "The regular expression '(a|aa)+$' was stopped after 0.2 s on one line: it backtracks too much. "
        "Use a simpler pattern without nested repeats like (a|aa)+, "
        "or set regex to false to search plain text."
    )


def test_search_text_no_matches(tools: FileTools) -> None:
    assert (
        tools.search_text("absent")
        == "No matches for 'absent' in . (2 files searched).\n" + NOTHING_FOUND_ADVICE
    )


def test_search_text_skips_binary_files_and_vcs_cache_and_venv_directories(
    tools: FileTools, ws: Path
) -> None:
    (ws / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    for directory in (".git", ".venv", "node_modules", "src/__pycache__"):
        (ws / directory).mkdir()
        (ws / directory / "file.txt").write_text("needle\n")
    (ws / "src" / "found.txt").write_text("a needle here\n")
    assert (
        tools.search_text("needle")
        == "Matches for 'needle' in . (1 matching line):\nsrc/found.txt:1: a needle here"
    )
    # Asked for by name, a directory the walk leaves out is searched.
    assert (
        tools.search_text("needle", path=".git")
        == "Matches for 'needle' in .git (1 matching line):\n.git/file.txt:1: needle"
    )


def test_search_text_is_capped_with_a_notice_that_counts_every_matching_line(
    tools: FileTools, ws: Path
) -> None:
    (ws / "many.txt").write_text("match\n" * (SEARCH_MATCH_LIMIT + 30))
    output = tools.search_text("match", path="many.txt").splitlines()
    assert len(output) == SEARCH_MATCH_LIMIT + 2
    assert output[0] == f"Matches for 'match' in many.txt ({SEARCH_MATCH_LIMIT + 30} matching lines):"
    assert output[SEARCH_MATCH_LIMIT] == f"many.txt:{SEARCH_MATCH_LIMIT}: match"
    assert output[-1] == (
        f"[Shown: the first {SEARCH_MATCH_LIMIT} of the {SEARCH_MATCH_LIMIT + 30} matching lines. "
        "Use a more specific pattern or a smaller path to see others.]"
    )


def test_search_text_counts_the_matching_lines_of_every_file(tools: FileTools, ws: Path) -> None:
    (ws / "hives").mkdir()
    (ws / "hives" / "north.txt").write_text("swarm seen\ncalm\n" * 40)  # 40 matching lines
    (ws / "hives" / "south.txt").write_text("swarm seen\n" * 25 + "Swarm caught\n")  # 26
    output = tools.search_text("swarm", path="hives").splitlines()
    # every matching line is counted, also those of a file no line of which is shown
    assert output[0] == "Matches for 'swarm' in hives (66 matching lines in 2 files):"
    assert output[-1].startswith(f"[Shown: the first {SEARCH_MATCH_LIMIT} of the 66 matching lines.")
    assert sum(line.startswith("hives/") for line in output) == SEARCH_MATCH_LIMIT
    one = tools.search_text("caught", path="hives").splitlines()
    assert one == ["Matches for 'caught' in hives (1 matching line):", "hives/south.txt:26: Swarm caught"]


def test_search_text_counts_the_matching_lines_shown_under_a_heading(tools: FileTools, ws: Path) -> None:
    (ws / "log.md").write_text("# Swarms\nSwarm 1 in May\nSwarm 2 in June\n\n# Other\nA swarm in July\n")
    assert tools.search_text("swarm", path="log.md").splitlines()[0] == (
        "Matches for 'swarm' in log.md (4 matching lines):"
    )


def test_search_text_refuses_an_empty_pattern(tools: FileTools) -> None:
    with pytest.raises(ToolError, match="pattern is empty"):
        tools.search_text("")


# write_file


def test_write_file_creates_parent_directories(tools: FileTools, ws: Path) -> None:
    assert (
        tools.write_file("notes/2024/todo.txt", "one\ntwo\n")
        == "Created notes/2024/todo.txt (2 lines, 8 characters)."
    )
    assert (ws / "notes" / "2024" / "todo.txt").read_text() == "one\ntwo\n"


def test_write_file_only_creates_and_leaves_a_file_that_exists_as_it_was(tools: FileTools, ws: Path) -> None:
    target = ws / "run.sh"
    target.write_text("#!/bin/sh\necho one\necho two\n")
    tools.read_file("run.sh")
    with pytest.raises(
        ToolError,
        match=r"run\.sh already exists, and write_file only creates new files\. "
        r"Nothing was changed\. Change it with replace_in_file: old is the exact text to replace",
    ):
        tools.write_file("run.sh", "#!/bin/sh\necho one\necho three\n")
    assert target.read_text() == "#!/bin/sh\necho one\necho two\n"


def test_write_file_of_lines_new_to_a_file_names_the_call_that_adds_them(tools: FileTools, ws: Path) -> None:
    target = ws / "run.sh"
    target.write_text("#!/bin/sh\necho one\necho two")
    with pytest.raises(ToolError) as refused:
        tools.write_file("run.sh", "echo three\n")
    assert str(refused.value) == (
        "run.sh already exists, and write_file only creates new files. Nothing was changed. None of "
        'your lines is in it yet; to add them at its end, call replace_in_file with {"path": "run.sh", '
        '"old": "", "new": "echo three\\n"}'
    )
    assert target.read_text() == "#!/bin/sh\necho one\necho two"
    # The call it names works as it stands: an addition at the end needs no read first.
    added = tools.replace_in_file("run.sh", "", "echo three\n")
    assert added == "Added the text at the end of run.sh, from line 4."
    assert target.read_text() == "#!/bin/sh\necho one\necho two\necho three\n"


def test_write_file_does_not_echo_long_content_or_a_file_it_cannot_read(tools: FileTools, ws: Path) -> None:
    (ws / "run.sh").write_text("#!/bin/sh\n")
    (ws / "blob.bin").write_bytes(b"\0\1\2")
    for path, content in (("run.sh", "echo x\n" * 200), ("blob.bin", "one line\n")):
        with pytest.raises(ToolError, match="Change it with replace_in_file: old is the exact text"):
            tools.write_file(path, content)
    assert (ws / "run.sh").read_text() == "#!/bin/sh\n"
    assert (ws / "blob.bin").read_bytes() == b"\0\1\2"


def test_an_edit_replaces_the_file_atomically_and_keeps_the_mode(tools: FileTools, ws: Path) -> None:
    target = ws / "run.sh"
    target.write_text("old\n")
    target.chmod(0o751)
    inode = target.stat().st_ino
    tools.read_file("run.sh")
    tools.replace_in_file("run.sh", "old", "#!/bin/sh\necho new")
    assert target.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    # A new inode: the content was renamed into place, not rewritten in the old file.
    assert target.stat().st_ino != inode
    assert files_in(ws) == ["README.md", "docs", "run.sh", "src", "src/main.py", "src/pkg"]


def test_write_file_gives_a_new_file_the_umask_mode(tools: FileTools, ws: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        tools.write_file("new.txt", "x")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((ws / "new.txt").stat().st_mode) == 0o644


def test_write_file_keeps_content_bytes_exactly(tools: FileTools, ws: Path) -> None:
    tools.write_file("crlf.txt", "a\r\nb\r\nünï\n")
    assert (ws / "crlf.txt").read_bytes() == "a\r\nb\r\nünï\n".encode()


def test_write_file_refuses_directories_and_vcs_files(tools: FileTools, ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    with pytest.raises(ToolError, match=r"src is a directory\. Give the path of a file"):
        tools.write_file("src", "x")
    with pytest.raises(ToolError, match=r"'newdir/' ends with '/'\. Give the path of a file"):
        tools.write_file("newdir/", "x")
    with pytest.raises(ToolError, match=r"\.git/hooks/pre-commit is inside \.git"):
        tools.write_file(".git/hooks/pre-commit", "#!/bin/sh\nrm -rf ~\n")
    with pytest.raises(ToolError, match=r"\.git/config is inside \.git; files there cannot be changed"):
        tools.write_file(".git/config", "[core]\nfsmonitor = evil\n")
    with pytest.raises(ToolError, match=r"Cannot create the directory for README\.md/x\.txt"):
        tools.write_file("README.md/x.txt", "x")
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / "newdir").exists()


# replace_in_file


def test_replace_in_file_replaces_exactly_one_match(tools: FileTools, ws: Path) -> None:
    target = ws / "src" / "main.py"
    target.chmod(0o600)
    tools.read_file("src/main.py")
    assert tools.replace_in_file("src/main.py", "print('hello')", "print('bye')") == (
        "Replaced the text at line 4 of src/main.py."
    )
    assert target.read_text() == "import os\n\ndef main():\n    print('bye')\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert files_in(ws / "src") == ["main.py", "pkg"]


@pytest.mark.parametrize(
    ("content", "old", "message"),
    [
        ("a = 1\nb = 2\n", "c = 3", r"old was not found in f.py\. Nothing was changed\. Read the file again"),
        (
            "x = 1\nx = 1\nx = 1\n",
            "x = 1",
            r"old appears 3 times in f.py, but it must appear exactly once\. Nothing was changed\. "
            r"It is on line 1: 'x = 1'; line 2: 'x = 1'; line 3: 'x = 1'\. "
            r"To replace every place, call replace_in_file with "
            r'\{"path": "f.py", "old": "x = 1", "new": "x", "replace_all": true\}; to change one place',
        ),
        ("aaa\n", "aa", r"old appears 2 times in f.py.* It is on line 1: 'aaa'\. Copy more of the line you"),
        ("def f():\n    return 1\n", "2: return 1", r"Leave out the line numbers"),
        (
            "# To do\n- [ ] Call the locksmith\n",
            "- [ ] Call the locksmith  (under '# To do')",
            r"Leave out the '\(under",
        ),
        ("def f():\n    return 1\n", "return 1  ", r"spaces or newlines at the start or end"),
        (
            '__version__ = "0.7.3"\n',
            "version = '0.7.3'",
            r"The closest line is line 1: '__version__ = \"0\.7\.3\"'",
        ),
    ],
)
def test_replace_in_file_refuses_without_changing_anything(
    tools: FileTools, ws: Path, content: str, old: str, message: str
) -> None:
    target = ws / "f.py"
    target.write_text(content)
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    tools.read_file("f.py")
    with pytest.raises(ToolError, match=message):
        tools.replace_in_file("f.py", old, "x")
    assert target.read_text() == content
    assert target.stat().st_mtime_ns == 1_000_000_000
    assert files_in(ws).count("f.py") == 1 and not any(name.endswith(".tmp") for name in files_in(ws))


def test_old_in_several_places_names_the_lines_and_the_call_that_replaces_them_all(
    tools: FileTools, ws: Path
) -> None:
    target = ws / "crew.md"
    target.write_text("# Crew\nSkipper: Maud Keller\nCook: Piet\n\nOn watch: Maud Keller\n")
    tools.read_file("crew.md")
    with pytest.raises(ToolError) as refused:
        tools.replace_in_file("crew.md", "Maud Keller", "Maud Brink")
    assert "It is on line 2: 'Skipper: Maud Keller'; line 5: 'On watch: Maud Keller'." in str(refused.value)
    call = str(refused.value).split("call replace_in_file with ", 1)[1].split("; to change", 1)[0]
    named = json.loads(call)
    assert target.read_text().count("Maud Keller") == 2
    assert tools.replace_in_file(**named) == "Replaced the text in 2 places in crew.md, at lines 2, 5."
    assert target.read_text() == "# Crew\nSkipper: Maud Brink\nCook: Piet\n\nOn watch: Maud Brink\n"


def test_old_in_more_places_than_are_named_says_how_many_more(tools: FileTools, ws: Path) -> None:
    (ws / "rota.txt").write_text("".join(f"day {n}: Maud Keller\n" for n in range(1, 9)))
    tools.read_file("rota.txt")
    with pytest.raises(ToolError, match=r"line 5: 'day 5: Maud Keller'; and 3 more lines\. To replace every"):
        tools.replace_in_file("rota.txt", "Maud Keller", "Maud Brink")


def test_a_replacement_says_which_other_files_still_hold_the_old_text(tools: FileTools, ws: Path) -> None:
    (ws / "crew.md").write_text("# Crew\nSkipper: Maud Keller\n")
    (ws / "log").mkdir()
    (ws / "log" / "trip.txt").write_text(
        "day 1: Maud Keller at the helm\nday 2: calm\nday 3: Maud Keller again\n"
    )
    (ws / "log" / "fuel.txt").write_text("day 1: 40 litres\n")
    tools.read_file("crew.md")
    assert tools.replace_in_file("crew.md", "Maud Keller", "Maud Brink") == (
        "Replaced the text at line 2 of crew.md. The old text is still in log/trip.txt (lines 1, 3)."
    )
    tools.read_file("log/trip.txt")
    report = tools.replace_in_file("log/trip.txt", "Maud Keller", "Maud Brink", replace_all=True)
    assert report == "Replaced the text in 2 places in log/trip.txt, at lines 1, 3."
    tools.read_file("log/fuel.txt")
    assert tools.replace_in_file("log/fuel.txt", "40 litres", "45 litres") == (
        "Replaced the text at line 1 of log/fuel.txt."
    )


def test_replace_all_replaces_every_place_and_says_on_which_lines(tools: FileTools, ws: Path) -> None:
    target = ws / "crew.md"
    target.write_text("# Crew\nSkipper: Maud Keller\nCook: Piet\n\nOn watch: Maud Keller\n")
    tools.read_file("crew.md")
    assert tools.replace_in_file("crew.md", "Maud Keller", "Maud Brink", replace_all=True) == (
        "Replaced the text in 2 places in crew.md, at lines 2, 5."
    )
    assert target.read_text() == "# Crew\nSkipper: Maud Brink\nCook: Piet\n\nOn watch: Maud Brink\n"
    # Once is once, with or without replace_all.
    assert tools.replace_in_file("crew.md", "Piet", "Piet Galley", replace_all=True) == (
        "Replaced the text at line 3 of crew.md."
    )


def test_replace_all_refuses_a_text_that_overlaps_itself(tools: FileTools, ws: Path) -> None:
    (ws / "f.txt").write_text("aaa\n")
    tools.read_file("f.txt")
    with pytest.raises(ToolError, match=r"old overlaps itself in f\.txt.*Nothing was changed"):
        tools.replace_in_file("f.txt", "aa", "b", replace_all=True)
    assert (ws / "f.txt").read_text() == "aaa\n"


def test_adding_at_the_end_needs_no_read_and_keeps_every_line(tools: FileTools, ws: Path) -> None:
    target = ws / "log.csv"
    target.write_text("day,km\nmon,4\ntue,6")  # no newline at the end
    assert (
        tools.replace_in_file("log.csv", "", "wed,5\n")
        == "Added the text at the end of log.csv, from line 4."
    )
    assert target.read_text() == "day,km\nmon,4\ntue,6\nwed,5\n"
    # Replacing text still needs the file read first: old must be copied from it.
    (ws / "other.csv").write_text("day,km\n")
    with pytest.raises(ToolError, match=r"You have not read other\.csv yet"):
        tools.replace_in_file("other.csv", "day", "date")


def test_replace_in_file_matches_plain_newlines_in_a_crlf_file(tools: FileTools, ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    tools.read_file("win.txt")
    tools.replace_in_file("win.txt", "one\ntwo", "1\n2")
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_replace_in_file_matches_text_quoted_the_other_way_and_keeps_the_files_quotes(
    tools: FileTools, ws: Path
) -> None:
    (ws / "relay.toml").write_text("[logging]\nlevel = \"notice\"\nname = 'app'\n")
    tools.read_file("relay.toml")
    assert tools.replace_in_file("relay.toml", "level = 'notice'", "level = 'error'") == (
        "Replaced the text at line 2 of relay.toml."
    )
    assert (ws / "relay.toml").read_text() == "[logging]\nlevel = \"error\"\nname = 'app'\n"
    # Only a single match counts, as for text written exactly.
    (ws / "two.txt").write_text('a = "x"\nb = "x"\n')
    tools.read_file("two.txt")
    with pytest.raises(ToolError, match="old was not found"):
        tools.replace_in_file("two.txt", "'x'", "'y'")


def test_replace_in_file_matches_a_key_copied_without_its_quotes_and_keeps_them(
    tools: FileTools, ws: Path
) -> None:
    (ws / "toggles.json").write_text('{\n  "wide_layout": true,\n  "beta_search": false\n}\n')
    tools.read_file("toggles.json")
    assert tools.replace_in_file("toggles.json", "beta_search: false", "beta_search: true") == (
        "Replaced the text at line 3 of toggles.json, where old matches without its quote marks; "
        "the line now reads '  \"beta_search\": true'."
    )
    assert (ws / "toggles.json").read_text() == '{\n  "wide_layout": true,\n  "beta_search": true\n}\n'
    # A change that puts in or takes out a quote mark is not guessed at; nor is a second match.
    for content, old, new in [
        ('"name": "app"\n', "name: app", 'name: "web"'),
        ('"name": "app"\n', 'name": app', "name: web"),
        ('"k": 1\n"k": 1\n', "k: 1", "k: 2"),
    ]:
        (ws / "other.json").write_text(content)
        tools.read_file("other.json")
        with pytest.raises(ToolError, match="old was not found"):
            tools.replace_in_file("other.json", old, new)
        assert (ws / "other.json").read_text() == content


def test_an_edit_that_copies_the_heading_note_of_a_search_is_refused(tools: FileTools, ws: Path) -> None:
    (ws / "todo.md").write_text("# To do\n- [ ] Call the locksmith\n")
    shown = tools.search_text("locksmith")
    assert shown.endswith("todo.md:2: - [ ] Call the locksmith  (under '# To do')")
    with pytest.raises(InvalidArguments, match=r"Leave it out of new"):
        _check_edit_of(tools, "Call the locksmith", "Call the locksmith  (under '# To do')")
    with pytest.raises(ToolError, match=r"Leave out the '\(under"):
        tools.replace_in_file(
            "todo.md", "- [ ] Call the locksmith  (under '# To do')", "- [x] Call the locksmith"
        )
    tools.replace_in_file("todo.md", "- [ ] Call the locksmith", "- [x] Call the locksmith")
    assert (ws / "todo.md").read_text() == "# To do\n- [x] Call the locksmith\n"


def _check_edit_of(tools: FileTools, old: str, new: str) -> None:
    [edit] = [tool for tool in tools.tools() if tool.name == "replace_in_file"]
    edit.validate({"path": "todo.md", "old": old, "new": new})  # the check before approval is asked


def test_files_are_edited_only_once_the_model_has_seen_them(tools: FileTools, ws: Path) -> None:
    main = (ws / "src" / "main.py").read_text()
    with pytest.raises(ToolError, match=r"You have not read src/main\.py yet\. Read it with read_file first"):
        tools.replace_in_file("src/main.py", "import os", "import sys")
    assert (ws / "src" / "main.py").read_text() == main
    # A search that shows lines of a file is enough to copy the text to replace from.
    tools.search_text("import", path="src")
    tools.replace_in_file("src/main.py", "import os", "import sys")
    # So is having written the file.
    tools.write_file("new.txt", "one\n")
    tools.replace_in_file("new.txt", "one", "two")
    assert (ws / "new.txt").read_text() == "two\n"


def test_a_file_changed_on_disk_since_it_was_read_is_read_again_before_an_edit(
    tools: FileTools, ws: Path
) -> None:
    tools.read_file("README.md")
    tools.replace_in_file("README.md", "hello", "hi")  # its own edits keep it up to date
    (ws / "README.md").write_text("# Someone else's title\n")  # as an editor would, meanwhile
    with pytest.raises(ToolError, match=r"README\.md has changed since you read it\. Read it again with"):
        tools.replace_in_file("README.md", "Someone", "Nobody")
    assert (ws / "README.md").read_text() == "# Someone else's title\n"
    tools.read_file("README.md")
    tools.replace_in_file("README.md", "Someone", "Nobody")
    assert (ws / "README.md").read_text() == "# Nobody else's title\n"


_LINE = st.text("ab =_'\"0.7", max_size=10)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=8), _LINE)
def test_the_closest_line_is_the_first_of_the_lines_most_like_old(lines: list[str], old: str) -> None:
    scored = [
        (difflib.SequenceMatcher(None, old.strip(), line.strip()).ratio(), number, line)
        for number, line in enumerate(lines, start=1)
        if line.strip()
    ]
    best = max(scored, default=None, key=lambda item: item[0])  # the first of equals
    expected = (best[1], best[2]) if old.strip() and best and best[0] >= 0.7 else None
    assert files._closest_line("\n".join(lines), old) == expected


def test_replace_in_file_refuses_binary_and_non_utf8_files(tools: FileTools, ws: Path) -> None:
    (ws / "data.bin").write_bytes(b"abc\x00def")
    (ws / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ToolError, match=r"data\.bin is a binary file"):
        tools.replace_in_file("data.bin", "abc", "x")
    with pytest.raises(ToolError, match=r"latin1\.txt is not UTF-8 text"):
        tools.replace_in_file("latin1.txt", "caf", "x")


# as tools the runner calls


def test_tools_have_small_schemas_and_the_right_flags(tools: FileTools) -> None:
    by_name = {tool.name: tool for tool in tools.tools()}
    changing = ["write_file", "replace_in_file", "tick_box", "add_item", "set_key"]
    assert list(by_name) == ["list_dir", "read_file", "search_text", *changing]
    assert [name for name, tool in by_name.items() if tool.changes_files] == changing
    read = by_name["read_file"].spec.parameters
    assert read["required"] == ["path"]
    assert set(read["properties"]) == {"path", "start_line"}
    for tool in by_name.values():
        assert tool.spec.description
        assert "cancel" not in tool.spec.parameters["properties"]
        assert all(field.get("description") for field in tool.spec.parameters["properties"].values())


def test_arguments_are_validated_against_the_schema(tools: FileTools) -> None:
    read = next(tool for tool in tools.tools() if tool.name == "read_file")
    with pytest.raises(InvalidArguments, match="start_line"):
        read.run({"path": "README.md", "start_line": 0}, CancelToken())
    with pytest.raises(InvalidArguments, match="Extra inputs are not permitted"):
        read.run({"path": "README.md", "lines": 3}, CancelToken())
    with pytest.raises(InvalidArguments, match="end_line"):
        read.run({"path": "README.md", "end_line": 2}, CancelToken())


def test_the_runner_reports_an_escape_as_a_tool_error(tools: FileTools, tmp_path: Path) -> None:
    events: list[object] = []
    executor = ToolExecutor(tools={tool.name: tool for tool in tools.tools()}, on_event=events.append)
    request = ToolRequest(id="1", name="read_file", arguments={"path": "../secret.txt"})
    [message] = executor.run_step([request], CancelToken())
    assert message.is_error
    assert message.content.startswith("Tool error: Path '../secret.txt' is outside the workspace.")
    assert any(isinstance(event, ToolFinished) for event in events)


@pytest.mark.parametrize(("before", "after"), [("x\n", "x\ny\n"), ("x", "x\ny\n"), ("", "y\n")])
def test_an_empty_old_adds_new_at_the_end(tools: FileTools, ws: Path, before: str, after: str) -> None:
    (ws / "f.txt").write_text(before)
    tools.read_file("f.txt")
    assert tools.replace_in_file("f.txt", "", "y\n").startswith(
        "Added the text at the end of f.txt, from line"
    )
    assert (ws / "f.txt").read_text() == after


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("x", "x", "old and new are the same, so nothing would change."),
        ("", "", "old and new are the same, so nothing would change."),
    ],
)
def test_an_edit_that_changes_nothing_is_refused_before_anyone_is_asked(
    tools: FileTools, ws: Path, old: str, new: str, reason: str
) -> None:
    (ws / "f.txt").write_text("x\n")
    asked: list[str] = []

    def approve(tool: Tool, request: ToolRequest) -> bool:
        asked.append(tool.name)
        return True

    executor = ToolExecutor({tool.name: tool for tool in tools.tools()}, lambda event: None, approve)
    request = ToolRequest(id="1", name="replace_in_file", arguments={"path": "f.txt", "old": old, "new": new})
    [message] = executor.run_step([request], CancelToken())
    assert (message.is_error, message.content) == (
        True,
        f"Tool error: invalid arguments for replace_in_file: {reason}",
    )
    assert asked == []
    assert (ws / "f.txt").read_text() == "x\n"


def test_the_executor_records_each_change_made_once_and_no_refused_one(tools: FileTools, ws: Path) -> None:
    (ws / "lock.md").write_text("gate: shut\n")

    def open_sluice() -> str:
        """Opens the sluice (a change with no path)."""
        return "opened"

    sluice = Tool.from_function(open_sluice, changes_files=True)
    own = {tool.name: tool for tool in [*tools.tools(), sluice]}
    executor = ToolExecutor(own, lambda event: None, lambda tool, request: tool.name != "write_file")
    calls = [
        ("replace_in_file", {"path": "lock.md", "old": "gate: shut", "new": "gate: open"}),
        ("write_file", {"path": "log.txt", "content": "opened"}),  # not approved
        ("replace_in_file", {"path": "lock.md", "old": "nowhere", "new": "x"}),  # refused
        ("open_sluice", {}),
        ("replace_in_file", {"path": "lock.md", "old": "gate: open", "new": "gate: shut"}),
    ]
    tools.read_file("lock.md")
    for number, (name, arguments) in enumerate(calls):
        executor.run_step([ToolRequest(id=str(number), name=name, arguments=arguments)], CancelToken())
    assert executor.changed == ["lock.md", "open_sluice"]
    assert not (ws / "log.txt").exists()


def test_a_cancelled_search_stops(tools: FileTools) -> None:
    cancel = CancelToken()
    cancel.cancel()
    search = next(tool for tool in tools.tools() if tool.name == "search_text")
    with pytest.raises(Cancelled):
        search.run({"pattern": "hello"}, cancel)


# a repeated search


def search_twice(tools: FileTools, **arguments: object) -> str:
    """The second of two identical search_text calls in two steps, as the runner answers it."""
    executor = ToolExecutor({tool.name: tool for tool in tools.tools()}, lambda event: None, deny_all, 8)
    for step in range(2):
        request = ToolRequest(id=f"call-{step}", name="search_text", arguments=dict(arguments))
        (message,) = executor.run_step([request], CancelToken())
    return message.content


def test_a_repeated_search_shows_the_files_it_found_lines_in_whole(tools: FileTools, ws: Path) -> None:
    (ws / "meetings").mkdir()
    (ws / "meetings" / "a.md").write_text("# Chess club, 4 March\nPresent: Ilka, Tove\n")
    (ws / "meetings" / "b.md").write_text("# Chess club, 11 March\nPresent: Ilka, Brede\n")
    assert search_twice(tools, pattern="chess club", path="meetings") == "\n".join(
        [
            REPEATED_CALL,
            "The files with those lines, whole:",
            tools.read_file("meetings/a.md"),
            tools.read_file("meetings/b.md"),
        ]
    )


def test_a_repeated_search_that_found_nothing_shows_the_files_it_searched(tools: FileTools) -> None:
    assert search_twice(tools, pattern="copper", path="src") == "\n".join(
        [REPEATED_CALL, "The files it searched, whole:", tools.read_file("src/main.py")]
    )


def test_a_repeated_search_that_found_nothing_in_a_folder_searches_all_files(
    tools: FileTools, ws: Path
) -> None:
    (ws / "lock.md").write_text("# Lock\nThe sluice gate opens at dawn.\n")
    assert search_twice(tools, pattern="sluice", path="src") == "\n".join(
        [
            REPEATED_CALL,
            "It found nothing in src; the same search of all files:",
            "Matches for 'sluice' in . (1 matching line):",
            "lock.md:2: The sluice gate opens at dawn.  (under '# Lock')",
        ]
    )


def test_a_repeated_search_over_many_or_large_files_shows_only_the_note(tools: FileTools, ws: Path) -> None:
    for name in ("a", "b", "c"):
        (ws / "docs" / f"{name}.txt").write_text("nothing here\n")
    assert search_twice(tools, pattern="copper") == REPEATED_CALL
    (ws / "docs" / "big.txt").write_text("copper ladle\n" * 300)
    assert search_twice(tools, pattern="copper", path="docs/big.txt") == REPEATED_CALL


def test_an_edit_that_changes_nothing_on_an_open_box_names_the_call_that_ticks_it(
    tools: FileTools, ws: Path
) -> None:
    (ws / "chores.md").write_text(
        "# Chores\n\n- [x] Rake the lawn\n- [ ] Oil the porch hinge\n- [ ] Oil the wheelbarrow\n"
    )
    edit = next(tool for tool in tools.tools() if tool.spec.name == "replace_in_file")
    same = {"path": "chores.md", "old": "porch hinge", "new": "porch hinge"}
    with pytest.raises(InvalidArguments, match=r"the same, so nothing would change\.$"):
        edit.validate(same)  # not read yet: a call that needs the read is not offered
    tools.read_file("chores.md")
    for old in ("porch hinge", "- [ ] Oil the porch hinge"):
        with pytest.raises(InvalidArguments) as refused:
            edit.validate({"path": "chores.md", "old": old, "new": old})
        assert str(refused.value) == (
            "old and new are the same, so nothing would change. Line 4 of chores.md reads "
            "'- [ ] Oil the porch hinge'; to tick its box, call replace_in_file with "
            '{"path": "chores.md", "old": "- [ ] Oil the porch hinge", "new": "- [x] Oil the porch hinge"}'
        )
    # Words of two open boxes, of a ticked box, or of no box: the refusal alone.
    for old in ("Oil the", "Rake the lawn", "Chores"):
        with pytest.raises(InvalidArguments, match=r"the same, so nothing would change\.$"):
            edit.validate({"path": "chores.md", "old": old, "new": old})
    tools.replace_in_file("chores.md", "- [ ] Oil the porch hinge", "- [x] Oil the porch hinge")
    assert "- [x] Oil the porch hinge\n" in (ws / "chores.md").read_text()
