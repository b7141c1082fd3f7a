"""Asking the person before a tool changes files: yes, no, or always for that tool.

Ctrl-C (or Ctrl-D) at the question cancels the run at once: nothing is changed.
"""

from __future__ import annotations

import contextlib
import difflib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import click

from localagent.core.cancel import Cancelled
from localagent.core.messages import ToolRequest
from localagent.tools import config_keys, files, list_items
from localagent.tools.base import Tool, ToolError
from localagent.tools.workspace import Workspace


class TerminalApprover:
    def __init__(self, workspace: Workspace, auto_approve: bool = False) -> None:
        self.workspace = workspace
        self.auto_approve = auto_approve
        self._always: set[str] = set()

    def __call__(self, tool: Tool, request: ToolRequest) -> bool:
        if self.auto_approve or tool.name in self._always:
            return True
        if not sys.stdin.isatty():
            click.echo(
                f"{tool.name} needs approval; not a terminal, so it was declined (use --yes).", err=True
            )
            return False
        click.echo(self.describe(request), err=True)
        try:
            with _interrupt_raises():
                answer = click.prompt(
                    f"Allow {tool.name}? [y]es / [n]o / [a]lways for {tool.name}",
                    type=click.Choice(["y", "n", "a"], case_sensitive=False),
                    default="n",
                    show_choices=False,
                    err=True,
                ).lower()
        except (click.exceptions.Abort, KeyboardInterrupt):
            click.echo("", err=True)
            raise Cancelled() from None
        if answer == "a":
            self._always.add(tool.name)
        return answer in ("y", "a")

    def describe(self, request: ToolRequest) -> str:
        arguments = request.arguments or {}
        path = str(arguments.get("path", ""))
        change = _planned_change(request.name, arguments, path)
        return f"{request.name} {arguments}" if change is None else self._diff(path, change)

    def _diff(self, path: str, change: Callable[[str], str]) -> str:
        try:
            target = self.workspace.resolve(path)
            before = target.read_text(encoding="utf-8") if target.is_file() else ""
        except ToolError as refused:
            return f"{path}: {refused}"
        except (OSError, UnicodeDecodeError):
            before = ""
        try:
            after = change(before)
        except ToolError as refused:
            return f"{path}: {refused}"
        lines = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
        colored = []
        for line in lines:
            text = line.rstrip("\n")
            if line.startswith(("+++", "---")):
                colored.append(click.style(text, bold=True))
            else:
                color = "green" if line.startswith("+") else "red" if line.startswith("-") else None
                colored.append(click.style(text, fg=color))
        return "\n".join(colored) or f"(no change to {path})"


def _planned_change(name: str, arguments: dict[str, Any], path: str) -> Callable[[str], str] | None:
    """The file's text after the change, from its text before; None for a tool with no diff to show."""
    names = ("content", "old", "new", "item", "section", "key", "value")
    text = {name: str(arguments.get(name, "")) for name in names}
    if name == "write_file":
        return lambda before: text["content"]
    if name == "replace_in_file":
        replace_all = arguments.get("replace_all") is True
        return lambda before: files.replacement(before, text["old"], text["new"], path, replace_all).text
    if name == "tick_box":
        return lambda before: list_items.ticked(before, text["item"], path).text
    if name == "add_item":
        return lambda before: list_items.with_item_added(before, text["item"], text["section"], path).text
    if name == "set_key":
        return lambda before: config_keys.with_key_set(before, text["key"], text["value"], path).text
    return None


@contextlib.contextmanager
def _interrupt_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here, even where the run's own handler only sets a cancel flag:
    that handler returns to the blocked read, so the question would wait for Enter."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
