"""The command reference in docs/commands.md, generated from the real `--help` of every command.

`python -m localagent.cli.helpdoc --write [FILE]`, run in the checkout, refreshes it (FILE defaults to
docs/commands.md); without `--write` it exits non-zero when the reference is out of date. A test
checks it is current.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from localagent.cli import cli

START, END = "<!-- help:start -->", "<!-- help:end -->"
DEFAULT_TARGET = Path("docs") / "commands.md"


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name in sorted(group.commands):
        command = group.commands[name]
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, (*prefix, name)))
        else:
            paths.append((*prefix, name))
    return paths


def help_text(path: tuple[str, ...]) -> str:
    """Exactly what `localagent ... --help` prints, at a fixed width."""
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="localagent", terminal_width=100)
    if result.exit_code != 0:
        raise RuntimeError(f"localagent {' '.join(path)} --help failed: {result.output}")
    return result.output.rstrip("\n")


def reference() -> str:
    blocks = []
    for path in command_paths(cli):
        title = " ".join(("localagent", *path))
        blocks.append(f"### `{title} --help`\n\n```text\n{help_text(path)}\n```\n")
    return "\n".join(blocks)


def with_reference(document: str) -> str:
    """`document` with the generated reference between its help:start and help:end markers."""
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(document):
        raise ValueError(f"the document has no {START} ... {END} markers")
    return pattern.sub(lambda _: f"{START}\n{reference()}{END}", document)


def main() -> None:
    names = [argument for argument in sys.argv[1:] if argument != "--write"]
    target = Path(names[0]) if names else DEFAULT_TARGET
    current = target.read_text(encoding="utf-8")
    try:
        updated = with_reference(current)
    except ValueError as error:
        sys.exit(f"{target}: {error}")
    if "--write" in sys.argv:
        target.write_text(updated, encoding="utf-8")
    elif updated != current:
        sys.exit(f"{target}'s command reference is out of date: run python -m localagent.cli.helpdoc --write")


if __name__ == "__main__":
    main()
