"""The workspace boundary: every escape is refused, through Workspace and through every tool, and nothing
outside the workspace is read or written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from localagent.core.cancel import CancelToken
from localagent.errors import LocalagentError
from localagent.tools.base import ToolError
from localagent.tools.files import NOTHING_FOUND_ADVICE, FileTools
from localagent.tools.workspace import Workspace, WorkspaceError

SECRET = "SENTINEL-5f1c9e secret outside the workspace"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """tmp/outside (a secret file and an empty canary dir), tmp/ws (the workspace) with links pointing out."""
    outside = tmp_path / "outside"
    (outside / "canary").mkdir(parents=True)
    secret = outside / "secret.txt"
    secret.write_text(SECRET + "\n")
    os.utime(secret, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.txt").write_text("inside\n")
    (ws / "deep" / "er").mkdir(parents=True)
    (ws / "link_file").symlink_to(secret)
    (ws / "link_dir").symlink_to(outside)
    (ws / "deep" / "er" / "up").symlink_to(
        Path("..", "..", "..", "outside")
    )  # relative link, three levels up
    (ws / "dangling").symlink_to(outside / "canary" / "created.txt")
    (ws / "inside_link").symlink_to(ws / "src" / "a.txt")
    (tmp_path / "ws_alias").symlink_to(ws)
    return {"tmp": tmp_path, "outside": outside, "secret": secret, "ws": ws, "alias": tmp_path / "ws_alias"}


def escape_paths(layout: dict[str, Path]) -> list[str]:
    outside, secret = layout["outside"], layout["secret"]
    return [
        "..",
        "../outside/secret.txt",
        "./../outside/secret.txt",
        "src/../../outside/secret.txt",
        "a/../../outside/canary/x.txt",
        "src/./../../outside/canary/x.txt",
        "..\\outside\\secret.txt",
        str(secret),
        str(outside / "canary" / "x.txt"),
        "/etc/passwd",
        "/",
        "/proc/self/root/etc/passwd",
        f"{layout['alias']}/../outside/secret.txt",
        "link_file",
        "link_dir",
        "link_dir/secret.txt",
        "link_dir/canary/x.txt",
        "deep/er/up/secret.txt",
        "deep/er/up/canary/x.txt",
        "dangling",
        "~",
        "~/x.txt",
        "~root/.bashrc",
        "C:\\Windows\\win.ini",
        "c:/x.txt",
        "\\\\server\\share\\x.txt",
        "//server/share/x.txt",
    ]


INVALID_PATHS = ["", "   ", "src/a\0.txt", "\0", "a" * 300, "/".join(["abc"] * 1500)]


def snapshot(directory: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every entry below `directory` with its content and mtime, to prove nothing changed."""
    result: dict[str, tuple[bytes | None, int]] = {}
    for path in sorted(directory.rglob("*")):
        info = path.lstat()
        result[str(path)] = (path.read_bytes() if path.is_file() else None, info.st_mtime_ns)
    return result


def test_escape_paths_are_refused(layout: dict[str, Path]) -> None:
    workspace = Workspace(layout["ws"])
    paths = escape_paths(layout)
    assert len(set(paths)) >= 10
    for path in paths:
        with pytest.raises(ToolError, match="outside the workspace"):
            workspace.resolve(path)


@pytest.mark.parametrize("path", INVALID_PATHS)
def test_malformed_paths_are_refused(layout: dict[str, Path], path: str) -> None:
    with pytest.raises(ToolError, match="Invalid path"):
        Workspace(layout["ws"]).resolve(path)


def test_escapes_are_refused_through_a_symlinked_root(layout: dict[str, Path]) -> None:
    workspace = Workspace(layout["alias"])
    for path in escape_paths(layout):
        with pytest.raises(ToolError, match="outside the workspace"):
            workspace.resolve(path)


def test_paths_inside_are_resolved(layout: dict[str, Path]) -> None:
    ws = layout["ws"].resolve()
    workspace = Workspace(layout["ws"])
    assert workspace.resolve(".") == ws
    assert workspace.resolve("src/a.txt") == ws / "src" / "a.txt"
    assert workspace.resolve("src/../src/a.txt") == ws / "src" / "a.txt"
    assert workspace.resolve("  src/a.txt\n") == ws / "src" / "a.txt"
    assert workspace.resolve("src\\a.txt") == ws / "src" / "a.txt"
    assert workspace.resolve(str(ws / "src" / "a.txt")) == ws / "src" / "a.txt"
    assert workspace.resolve(f"{layout['alias']}/src/a.txt") == ws / "src" / "a.txt"
    assert workspace.resolve("inside_link") == ws / "src" / "a.txt"
    assert workspace.resolve("new/dir/file.txt") == ws / "new" / "dir" / "file.txt"
    assert workspace.resolve("./~notes.txt") == ws / "~notes.txt"
    # Leaving through a link and coming back in lands inside, which is where the file really is.
    assert workspace.resolve("link_dir/../ws/src/a.txt") == ws / "src" / "a.txt"


def test_paths_are_shown_relative_to_the_root(layout: dict[str, Path]) -> None:
    workspace = Workspace(layout["alias"])
    assert workspace.relative(workspace.resolve(".")) == "."
    assert workspace.relative(workspace.resolve(str(layout["ws"] / "src" / "a.txt"))) == "src/a.txt"


def test_root_must_be_an_existing_directory(layout: dict[str, Path]) -> None:
    with pytest.raises(WorkspaceError, match="not an existing directory") as error:
        Workspace(layout["tmp"] / "missing")
    assert isinstance(error.value, LocalagentError)
    with pytest.raises(WorkspaceError):
        Workspace(layout["ws"] / "src" / "a.txt")


def test_no_tool_reads_or_writes_outside(layout: dict[str, Path]) -> None:
    workspace = Workspace(layout["ws"])
    tools = {tool.name: tool for tool in FileTools(workspace).tools()}
    before_outside = snapshot(layout["outside"])
    before_ws = snapshot(layout["ws"])
    cancel = CancelToken()
    calls = []
    for path in [*escape_paths(layout), *INVALID_PATHS]:
        calls += [
            ("list_dir", {"path": path}),
            ("read_file", {"path": path}),
            ("search_text", {"pattern": "SENTINEL", "path": path}),
            ("write_file", {"path": path, "content": "HACKED"}),
            ("write_file", {"path": f"{path}/new.txt", "content": "HACKED"}),
            ("replace_in_file", {"path": path, "old": "SENTINEL", "new": "HACKED"}),
        ]
    for name, arguments in calls:
        with pytest.raises(ToolError) as error:
            tools[name].run(arguments, cancel)
        assert SECRET not in str(error.value), (name, arguments)

    assert snapshot(layout["outside"]) == before_outside
    assert list((layout["outside"] / "canary").iterdir()) == []
    assert snapshot(layout["ws"]) == before_ws
    assert layout["secret"].read_text() == SECRET + "\n"


def test_searching_the_whole_workspace_does_not_follow_links_out(layout: dict[str, Path]) -> None:
    tools = FileTools(Workspace(layout["ws"]))
    assert (
        tools.search_text("SENTINEL")
        == "No matches for 'SENTINEL' in . (2 files searched).\n" + NOTHING_FOUND_ADVICE
    )
    listing = tools.list_dir(".")
    assert "link_dir (link to outside the workspace; cannot be used)" in listing
    assert "secret" not in listing


def test_writes_through_an_inside_link_stay_inside(layout: dict[str, Path]) -> None:
    tools = FileTools(Workspace(layout["ws"]))
    tools.read_file("inside_link")
    tools.replace_in_file("inside_link", "inside", "changed")
    assert (layout["ws"] / "src" / "a.txt").read_text() == "changed\n"
    assert (layout["ws"] / "inside_link").is_symlink()


def test_write_to_a_hard_link_does_not_change_the_outside_file(layout: dict[str, Path]) -> None:
    # Hard links cannot be told apart by path; the atomic rename replaces the link, not the shared file.
    os.link(layout["secret"], layout["ws"] / "hard.txt")
    tools = FileTools(Workspace(layout["ws"]))
    tools.read_file("hard.txt")
    tools.replace_in_file("hard.txt", SECRET, "new")
    assert layout["secret"].read_text() == SECRET + "\n"
    assert (layout["ws"] / "hard.txt").read_text() == "new\n"
