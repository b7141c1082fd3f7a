"""The diff shown before an edit is approved is the change `replace_in_file` would make."""

from __future__ import annotations

from pathlib import Path

import click

from localagent.cli.approval import TerminalApprover
from localagent.core.messages import ToolRequest
from localagent.tools.workspace import Workspace


def shown(tmp_path: Path, old: str, new: str, replace_all: bool = False) -> str:
    approver = TerminalApprover(Workspace(tmp_path))
    arguments = {"path": "f.json", "old": old, "new": new, "replace_all": replace_all}
    request = ToolRequest(id="1", name="replace_in_file", arguments=arguments)
    return click.unstyle(approver.describe(request))


def test_the_diff_shows_an_edit_matched_without_quotes_or_with_swapped_ones(tmp_path: Path) -> None:
    (tmp_path / "f.json").write_text('{\n  "beta": false,\n  "name": "app"\n}\n')
    assert '-  "beta": false,\n+  "beta": true,' in shown(tmp_path, "beta: false", "beta: true")
    assert '-  "name": "app"\n+  "name": "web"' in shown(tmp_path, "name': 'app'", "name': 'web'")


def test_the_diff_says_why_an_edit_would_fail(tmp_path: Path) -> None:
    (tmp_path / "f.json").write_text('{"a": 1, "b": 1}\n')
    assert "f.json: old appears 2 times in f.json" in shown(tmp_path, ": 1", ": 2")


def test_the_diff_of_an_edit_with_replace_all_shows_every_place(tmp_path: Path) -> None:
    (tmp_path / "f.json").write_text('{"a": 1, "b": 1}\n')
    assert '-{"a": 1, "b": 1}\n+{"a": 2, "b": 2}' in shown(tmp_path, ": 1", ": 2", replace_all=True)


def described(tmp_path: Path, name: str, **arguments: str) -> str:
    request = ToolRequest(id="1", name=name, arguments={"path": "chores.md", **arguments})
    return click.unstyle(TerminalApprover(Workspace(tmp_path)).describe(request))


def test_the_diff_of_a_list_edit_is_the_line_it_ticks_or_adds(tmp_path: Path) -> None:
    (tmp_path / "chores.md").write_text("- [ ] Descale the kettle\n- [ ] Oil the hinges\n")
    assert "-- [ ] Oil the hinges\n+- [x] Oil the hinges" in described(tmp_path, "tick_box", item="hinges")
    assert "+- [ ] Defrost the freezer" in described(tmp_path, "add_item", item="Defrost the freezer")
    assert "chores.md: No open box of chores.md holds 'windows'." in described(
        tmp_path, "tick_box", item="windows"
    )
