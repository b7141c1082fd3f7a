"""Reading the next line of a chat: readline's editing (arrows, Ctrl-A/E, ...) and a history kept
between sessions, when a person types at a terminal; plain reading otherwise."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from types import ModuleType

import click

from localagent.cli.display import colors_allowed

HISTORY_LENGTH = 1000
# Around an escape sequence in a readline prompt, so readline knows it takes no room on screen.
_INVISIBLE_START, _INVISIBLE_END = "\001", "\002"


class LineReader:
    def __init__(self, history: Path) -> None:
        self.history = history
        self._readline = _readline() if sys.stdin.isatty() and sys.stdout.isatty() else None
        if self._readline is not None:
            self._readline.set_history_length(HISTORY_LENGTH)
            with contextlib.suppress(OSError):
                self._readline.read_history_file(str(history))

    def read(self, word: str) -> str | None:
        """The next line after the prompt `word> `; None at Ctrl-D or Ctrl-C."""
        try:
            if self._readline is None:
                styled = click.style(word, bold=True)
                return click.prompt(styled, prompt_suffix="> ", default="", show_default=False, err=True)
            return input(self._prompt(word))
        except (EOFError, KeyboardInterrupt, click.exceptions.Abort):
            click.echo("", err=True)
            return None

    def close(self) -> None:
        if self._readline is None:
            return
        with contextlib.suppress(OSError):
            self.history.parent.mkdir(parents=True, exist_ok=True)
            self._readline.write_history_file(str(self.history))

    def _prompt(self, word: str) -> str:
        if not colors_allowed():
            return f"{word}> "
        start, end = click.style(word, bold=True).split(word)
        return f"{_INVISIBLE_START}{start}{_INVISIBLE_END}{word}{_INVISIBLE_START}{end}{_INVISIBLE_END}> "


def _readline() -> ModuleType | None:
    try:
        import readline
    except ImportError:  # not on every platform
        return None
    return readline
