"""Showing a run as it happens: thoughts dimmed, each tool call with its arguments, results shortened.

Everything goes to stderr, so stdout holds only the answer (or the JSON result).
"""

from __future__ import annotations

import json
from typing import TextIO

import click

from localagent.events import (
    Event,
    FormatError,
    ReasoningDelta,
    RunFinished,
    ToolFinished,
    ToolStarted,
    TurnStarted,
)

SCREEN_LIMIT = 300


def shorten(text: str, limit: int = SCREEN_LIMIT) -> str:
    """One screen-friendly line; the transcript keeps the whole text."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}… ({len(text)} chars)"


class RunDisplay:
    def __init__(self, stream: TextIO, color: bool | None = None) -> None:
        self.stream = stream
        self.color = color
        self._in_reasoning = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, ReasoningDelta):
            if not self._in_reasoning:
                self._write(click.style("Thought: ", dim=True))
                self._in_reasoning = True
            self._write(click.style(event.text, dim=True))
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
        elif isinstance(event, FormatError):
            self._line(
                click.style(f"! malformed reply ({event.problem}): ", fg="yellow")
                + shorten(event.feedback, 160)
            )
        elif isinstance(event, RunFinished) and event.status != "final":
            reason = f": {event.error}" if event.error else ""
            self._line(click.style(f"run ended: {event.status}{reason}", fg="yellow"))

    def notice(self, text: str) -> None:
        self._end_reasoning()
        self._line(click.style(f"note: {text}", fg="yellow"))

    def _end_reasoning(self) -> None:
        if self._in_reasoning:
            self._write("\n")
            self._in_reasoning = False

    def _line(self, text: str) -> None:
        self._write(text + "\n")

    def _write(self, text: str) -> None:
        click.echo(text, file=self.stream, nl=False, color=self.color)
