"""Small pieces several commands share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from localagent.core.messages import ToolChoice, parse_tool_choice
from localagent.core.user_files import read_user_text
from localagent.errors import UserFileError
from localagent.models.registry import DEFAULT_MODEL
from localagent.tools.spec import ToolSpec, load_tool_specs

F = TypeVar("F", bound=Callable[..., Any])


def read_tool_specs(path: Path | None) -> list[ToolSpec]:
    """Function specs from a JSON file, or the built-in default tools when no file is given.

    A file that cannot be used raises UserFileError with one line naming it, the tool and the pointer.
    """
    if path is None:
        from localagent.tools.loading import select_tools
        from localagent.tools.workspace import Workspace

        return [tool.spec for tool in select_tools(None, Workspace(Path.cwd()))]
    text = read_user_text(path, "tools file", UserFileError)
    try:
        return load_tool_specs(text)
    except ValueError as error:
        raise UserFileError(f"tools file {path}: {error}") from None


def tool_choice_option(text: str, specs: list[ToolSpec]) -> ToolChoice:
    choice = parse_tool_choice(text)
    if not isinstance(choice, str) and choice.name not in {spec.name for spec in specs}:
        known = ", ".join(spec.name for spec in specs) or "(none)"
        raise click.UsageError(f"--tool-choice {text!r} is not auto, none, required or a tool name ({known})")
    return choice


def int_option(name: str, low: int, high: int, *, default: int | None, help: str) -> Callable[[F], F]:
    """A whole-number flag from `low` to `high`; --help shows its default."""
    show = default is not None
    return click.option(name, type=click.IntRange(low, high), default=default, show_default=show, help=help)


MODEL = click.option(
    "--model", "-m", default=DEFAULT_MODEL, show_default=True, help="Model name or .gguf path."
)
TOOLS_FILE = click.option(
    "--tools-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="OpenAI-style function specs (a JSON list). [default: the built-in default tools]",
)
TOOL_CHOICE = click.option(
    "--tool-choice", default="auto", show_default=True, help="auto, none, required, or a tool name."
)
