"""The command reference in README.md, generated from the real `--help` of every command.

`python -m localagent.cli.helpdoc --write [README.md]`, run in the checkout, refreshes it; a test
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


def readme_with_reference(readme: str) -> str:
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)
    return pattern.sub(lambda _: f"{START}\n{reference()}{END}", readme)


def main() -> None:
    names = [argument for argument in sys.argv[1:] if argument != "--write"]
    readme = Path(names[0] if names else "README.md")
    current = readme.read_text(encoding="utf-8")
    updated = readme_with_reference(current)
    if "--write" in sys.argv:
        readme.write_text(updated, encoding="utf-8")
    elif updated != current:
        sys.exit(f"{readme}'s command reference is out of date: run python -m localagent.cli.helpdoc --write")


if __name__ == "__main__":
    main()
