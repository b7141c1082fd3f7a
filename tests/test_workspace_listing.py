"""The workspace listing in a run's first message: every path, with the first line that says something."""

from __future__ import annotations

from pathlib import Path

from localagent.tools.files import PREVIEW_CHARS, workspace_listing
from localagent.tools.workspace import Workspace
from localagent.turn import prompts


def make(root: Path, files: dict[str, bytes | str]) -> Workspace:
    root.mkdir(exist_ok=True)
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return Workspace(root)


def test_each_file_shows_its_first_line_that_holds_a_word(tmp_path: Path) -> None:
    workspace = make(
        tmp_path,
        {
            "prices.csv": "sku,price\nA-1,3.50\n",
            "flags.json": '{\n  "dark_mode": true\n}\n',
            "notes/todo.md": "\n---\n# To do\n- [ ] call Ann\n",
        },
    )
    assert workspace_listing(workspace) == (
        'flags.json: "dark_mode": true\nprices.csv: sku,price\nnotes/todo.md: # To do'
    )
    assert workspace_listing(workspace, previews=False) == "flags.json\nprices.csv\nnotes/todo.md"


def test_binary_empty_and_wordless_files_show_only_their_path(tmp_path: Path) -> None:
    workspace = make(tmp_path, {"a.bin": b"PNG\x00\x01", "b.txt": "", "c.txt": "{\n}\n---\n"})
    assert workspace_listing(workspace) == "a.bin\nb.txt\nc.txt"


def test_a_long_first_line_is_cut_with_an_ellipsis(tmp_path: Path) -> None:
    workspace = make(tmp_path, {"long.txt": "word " * 40})
    line = workspace_listing(workspace)
    assert line.startswith("long.txt: word word") and line.endswith("…")
    assert len(line) <= len("long.txt: ") + PREVIEW_CHARS


def test_a_big_workspace_is_cut_at_the_limit_with_a_note(tmp_path: Path) -> None:
    workspace = make(tmp_path, {f"f{index:02}.txt": f"file {index}\n" for index in range(5)})
    assert workspace_listing(workspace, limit=3) == (
        "f00.txt: file 0\nf01.txt: file 1\nf02.txt: file 2\n(more files not shown)"
    )


def test_an_empty_folder_gets_no_listing_so_the_task_stands_alone(tmp_path: Path) -> None:
    # "(no files)" before "What is 17 * 23?" made the default model answer that it could not
    # calculate without files.
    empty = make(tmp_path / "empty", {})
    assert workspace_listing(empty) == ""
    assert prompts.first_task("What is 17 * 23?", workspace_listing(empty)) == "What is 17 * 23?"


def test_hidden_files_are_left_out(tmp_path: Path) -> None:
    workspace = make(tmp_path, {"notes.txt": "milk\n", "run.jsonl": '{"type": "settings"}\n'})
    outside = tmp_path.parent / "elsewhere.jsonl"
    listing = workspace_listing(workspace, hidden=[tmp_path / "run.jsonl", outside])
    assert listing == "notes.txt: milk"
