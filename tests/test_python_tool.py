"""run_python: snippets compute over the workspace's files, and every way out is refused with one line
while nothing on disk changes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from localagent.core.cancel import CancelToken
from localagent.tools import python_code
from localagent.tools.base import ToolError
from localagent.tools.loading import select_tools
from localagent.tools.python_code import PythonRunner
from localagent.tools.workspace import Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "rides").mkdir(parents=True)
    (root / "rides" / "june.csv").write_text("day,km\n1,12.5\n2,30\n3,7.25\n")
    (root / "kit.json").write_text('[{"item": "pump", "grams": 90}, {"item": "lamp", "grams": 45}]')
    (tmp_path / "secret.txt").write_text("outside the workspace")
    return root


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run(workspace: Path, code: str) -> str:
    return PythonRunner(Workspace(workspace)).run_python(code)


def test_a_snippet_reads_the_files_and_its_last_expression_is_shown(workspace: Path) -> None:
    code = (
        "import csv\nrows = list(csv.DictReader(open('rides/june.csv')))\nsum(float(r['km']) for r in rows)"
    )
    assert run(workspace, code) == "49.75"
    code = "import json, statistics\nprint(statistics.mean(k['grams'] for k in json.load(open('kit.json'))))"
    assert run(workspace, code) == "67.5"
    assert run(workspace, "x = 1") == "(the code printed nothing; print() the result)"


def test_errors_in_the_snippet_are_one_line_with_its_line_number(workspace: Path) -> None:
    with pytest.raises(
        ToolError, match=r"^the code failed: ZeroDivisionError: division by zero \(line 2\)\.$"
    ):
        run(workspace, "total = 3\ntotal / 0")
    with pytest.raises(ToolError, match=r"^the code failed: SyntaxError: .*\(line 1\)\.$"):
        run(workspace, "def (")


def test_a_file_it_cannot_find_gets_the_workspace_files_of_its_kind(workspace: Path) -> None:
    with pytest.raises(ToolError) as missing:
        run(workspace, "open('rides/july.csv')")
    assert str(missing.value) == (
        "the code failed: FileNotFoundError: [Errno 2] No such file or directory: 'rides/july.csv' "
        "(line 1). The workspace's .csv files: rides/june.csv."
    )
    with pytest.raises(ToolError, match=r"The workspace's files: kit\.json, rides/june\.csv\.$"):
        run(workspace, "open('notes.txt')")


def test_the_files_it_names_for_a_missing_one_are_those_the_other_tools_walk(workspace: Path) -> None:
    (workspace / ".gitignore").write_text("old/\n")
    for folder in ("old", ".venv", ".data"):
        (workspace / folder).mkdir()
        (workspace / folder / "may.csv").write_text("day,km\n1,5\n")
    with pytest.raises(ToolError, match=r"The workspace's \.csv files: \.data/may\.csv, rides/june\.csv\.$"):
        run(workspace, "open('rides/july.csv')")
    # An error of the snippet's own that ends with the same exit status is shown as it is.
    with pytest.raises(ToolError, match=r"^the code failed: exit status 4\.$"):
        run(workspace, "raise SystemExit(4)")


def test_a_block_after_a_semicolon_gets_a_line_saying_how_to_write_it(workspace: Path) -> None:
    one_line = "import csv; total = 0; for r in csv.DictReader(open('rides/june.csv')): total += 1"
    with pytest.raises(ToolError) as refused:
        run(workspace, one_line)
    assert str(refused.value) == (
        "the code failed: SyntaxError: invalid syntax (line 1). A for, with or if block cannot follow "
        "';' on the same line: start it on a new line (\\n in the code) and indent its body."
    )
    unclosed = r"^the code failed: SyntaxError: '\(' was never closed \(line 1\)\.$"
    with pytest.raises(ToolError, match=unclosed):
        run(workspace, "print(1 +")


ESCAPES = {
    "write a new file": ("open('notes.txt', 'w').write('x')", "writing files is not allowed"),
    "append to a file": ("open('rides/june.csv', 'a').write('4,1\\n')", "writing files is not allowed"),
    "write with os.open": (
        "import os\nos.write(os.open('x', os.O_WRONLY | os.O_CREAT), b'x')",
        "writing files is not allowed",
    ),
    "delete a file": ("import os\nos.remove('kit.json')", "deleting files is not allowed"),
    "delete a folder": ("import shutil\nshutil.rmtree('rides')", "deleting folders is not allowed"),
    "rename a file": ("import os\nos.rename('kit.json', 'k.json')", "renaming files is not allowed"),
    "open a socket": (
        "import socket\nsocket.create_connection(('127.0.0.1', 9))",
        "network access is not allowed",
    ),
    "start a process": ("import subprocess\nsubprocess.run(['true'])", "starting processes is not allowed"),
    "run a shell": (
        "import os\nos.system('touch escaped')",
        "starting or signalling processes is not allowed",
    ),
    "fork": ("import os\nos.fork()", "starting or signalling processes is not allowed"),
    "load native code": (
        "import ctypes\nctypes.CDLL(None).system(b'touch escaped')",
        "importing ctypes is not allowed",
    ),
    "read outside": ("open('../secret.txt').read()", "reading outside the workspace is not allowed"),
    "read an absolute path": ("open('/etc/hostname').read()", "reading outside the workspace is not allowed"),
    "list outside": ("import os\nos.listdir('/')", "looking outside the workspace is not allowed"),
}


@pytest.mark.parametrize(("code", "refusal"), ESCAPES.values(), ids=list(ESCAPES))
def test_every_way_out_is_refused_with_one_line_and_nothing_changes(
    workspace: Path, code: str, refusal: str
) -> None:
    before, outside_before = snapshot(workspace), snapshot(workspace.parent)
    with pytest.raises(ToolError) as refused:
        run(workspace, code)
    message = str(refused.value)
    assert message.startswith(f"refused: {refusal}") and message.endswith("Nothing was changed.")
    assert "\n" not in message
    assert snapshot(workspace) == before
    assert snapshot(workspace.parent) == outside_before


def test_a_link_out_of_the_workspace_is_refused(workspace: Path) -> None:
    (workspace / "link.txt").symlink_to(workspace.parent / "secret.txt")
    with pytest.raises(ToolError, match="reading outside the workspace is not allowed"):
        run(workspace, "open('link.txt').read()")


def test_the_environment_is_bare_and_site_packages_are_out_of_reach(workspace: Path) -> None:
    assert run(workspace, "import os\nsorted(os.environ)") == "['LANG', 'PYTHONIOENCODING']"
    with pytest.raises(ToolError, match="ModuleNotFoundError: No module named 'localagent'"):
        run(workspace, "import localagent")


def test_a_snippet_that_runs_too_long_is_stopped(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(python_code, "SECONDS", 1.0)
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"^the code ran for more than 1 seconds and was stopped\."):
        run(workspace, "print('started', flush=True)\nwhile True: pass")
    assert time.monotonic() - started < 5


def test_a_long_output_is_cut(workspace: Path) -> None:
    shown = run(workspace, "print('x' * 10000)")
    assert shown.endswith(f"[output cut at {python_code.OUTPUT_CHARS} characters; print less]")
    assert len(shown) < python_code.OUTPUT_CHARS + 100


def test_cancelling_the_run_stops_the_snippet(workspace: Path) -> None:
    cancel = CancelToken()
    threading.Timer(0.5, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(ToolError):
        PythonRunner(Workspace(workspace)).run_python("while True: pass", cancel=cancel)
    assert time.monotonic() - started < 3


def test_run_python_is_a_built_in_tool_but_not_a_default_one(workspace: Path) -> None:
    assert [t.name for t in select_tools("run_python", Workspace(workspace))] == ["run_python"]
    assert "run_python" not in [t.name for t in select_tools("default", Workspace(workspace))]
    tool = select_tools("run_python", Workspace(workspace))[0]
    assert not tool.changes_files
    assert tool.run({"code": "2 + 2"}, CancelToken()) == "4"
