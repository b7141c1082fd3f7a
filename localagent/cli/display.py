"""Showing a run as it happens: thoughts dimmed, each tool call with its arguments, results shortened,
and each liberty taken reading a reply.

Everything goes to stderr, so stdout holds only the answer (or the JSON result). How a run ended is
said once, by the command (`run`, `chat`), not here. On a terminal a live line counts each model
turn's seconds and tokens; with `steps` off (`--quiet`, `--json`) that line is all that is shown.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from typing import TextIO

import click

from localagent.cli.live_line import LiveLine
from localagent.core.events import (
    Event,
    FormatError,
    ReasoningDelta,
    ReplyNote,
    RunFinished,
    TokensGenerated,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from localagent.tools.base import Tool

SCREEN_LIMIT = 300


def changes_line(changed: Sequence[str], tools: Sequence[Tool]) -> str | None:
    """What the run changed on disk, said after its answer (which may claim more); None when no
    tool offered could change a file."""
    if not any(tool.changes_files for tool in tools):
        return None
    return f"Changed: {', '.join(changed)}" if changed else "No file was changed."


def sources_line(sources: Sequence[str]) -> str:
    """The places an answer rests on, said after it, dimmed."""
    return f"Sources: {', '.join(sources)}"


def colors_allowed() -> bool:
    """False when the person asked for no colors (NO_COLOR, no-color.org) or the terminal has none."""
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def shorten(text: str, limit: int = SCREEN_LIMIT) -> str:
    """One screen-friendly line; the transcript keeps the whole text."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}… ({len(text)} chars)"


# A thought that has not grown for this long is over: the live line may take the next line.
THOUGHT_PAUSE_SECONDS = 1.0


class RunDisplay:
    def __init__(self, stream: TextIO, color: bool | None = None, steps: bool = True) -> None:
        self.stream = stream
        # Read-only tools report from worker threads, where click's context (and its color) is unknown.
        self.color = False if color is None and not colors_allowed() else color
        self.steps = steps
        self._in_reasoning = False
        self._last_reasoning = 0.0
        self._lock = threading.RLock()
        self.live = LiveLine(stream, self._write, self._lock)

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._show(event)

    def _show(self, event: Event) -> None:
        if isinstance(event, TokensGenerated):
            self.live.tokens(event.tokens)
            return
        if isinstance(event, TurnStarted):
            self.live.start(self._live_line_fits)
        elif isinstance(event, TurnFinished | RunFinished):
            self.live.stop()
        if not self.steps:
            return
        self.live.erase()
        if isinstance(event, ReasoningDelta):
            if not self._in_reasoning:
                self._write(click.style("Thought: ", dim=True))
                self._in_reasoning = True
            self._write(click.style(event.text, dim=True))
            self._last_reasoning = time.monotonic()
            return
        self._end_reasoning()
        if isinstance(event, TurnStarted):
            note = " (tools off: final answer required)" if event.tool_choice == "none" else ""
            self._line(click.style(f"── step {event.step}{note}", dim=True))
        elif isinstance(event, ToolStarted):
            arguments = json.dumps(event.arguments, ensure_ascii=False) if event.arguments is not None else ""
            self._line(
                click.style("→ ", fg="cyan") + click.style(event.name, bold=True) + f" {shorten(arguments)}"
            )
        elif isinstance(event, ToolFinished):
            marker = click.style("✗ ", fg="red") if event.is_error else click.style("← ", fg="green")
            again = " (repeated call)" if event.repeated else ""
            self._line(marker + click.style(shorten(event.content) + again, dim=not event.is_error))
        elif isinstance(event, ReplyNote):
            self._line(click.style(f"(reading the reply: {event.text})", dim=True))
        elif isinstance(event, FormatError):
            self._line(
                click.style(f"! malformed reply ({event.problem}): ", fg="yellow")
                + shorten(event.feedback, 160)
            )

    def notice(self, text: str) -> None:
        with self._lock:
            self.live.erase()
            self._end_reasoning()
            self._line(click.style(f"note: {text}", fg="yellow"))

    def close(self) -> None:
        self.live.close()

    def _live_line_fits(self) -> bool:
        """Whether the cursor is at the start of a line, ending a thought that stopped growing."""
        if self._in_reasoning and time.monotonic() - self._last_reasoning >= THOUGHT_PAUSE_SECONDS:
            self._end_reasoning()
        return not self._in_reasoning

    def _end_reasoning(self) -> None:
        if self._in_reasoning:
            self._write("\n")
            self._in_reasoning = False

    def _line(self, text: str) -> None:
        self._write(text + "\n")

    def _write(self, text: str) -> None:
        click.echo(text, file=self.stream, nl=False, color=self.color)
