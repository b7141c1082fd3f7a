"""Progress for long work before a run starts: assembling the embedded model, loading it."""

from __future__ import annotations

import sys

import click


class ProgressReporter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._bar_label: str | None = None

    def model_assembly(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "." * (width - filled)
        label = f"writing the model file [{bar}] {done / 1e6:.0f}/{total / 1e6:.0f} MB"
        click.echo("\r" + label, nl=False, err=True)
        self._bar_label = label

    def stage(self, text: str) -> None:
        """A one-line note about slow work starting, cleared by done()."""
        if self.enabled:
            click.echo(click.style(f"{text}…", dim=True), nl=False, err=True)
            self._bar_label = text

    def done(self) -> None:
        if self._bar_label is not None:
            click.echo("\r\x1b[K", nl=False, err=True)  # clear the line
            self._bar_label = None
