"""Small pieces several commands share."""

from __future__ import annotations

from pathlib import Path

import click

from localagent.errors import UserFileError
from localagent.messages import ToolChoice, parse_tool_choice
from localagent.tools.spec import ToolSpec, load_tool_specs


def read_tool_specs(path: Path | None) -> list[ToolSpec]:
    """Function specs from a JSON file, or the built-in default tools when no file is given.

    A file that cannot be used raises UserFileError with one line naming it, the tool and the pointer.
    """
    if path is None:
        from localagent.tools.loading import select_tools
        from localagent.tools.workspace import Workspace

        return [tool.spec for tool in select_tools(None, Workspace(Path.cwd()))]
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UserFileError(f"cannot read tools file {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserFileError(f"tools file {path} is not UTF-8 text") from None
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


TOOLS_FILE = click.option(
    "--tools-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="OpenAI-style function specs (a JSON list). [default: the built-in default tools]",
)
TOOL_CHOICE = click.option(
    "--tool-choice", default="auto", show_default=True, help="auto, none, required, or a tool name."
)
