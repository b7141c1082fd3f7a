"""Progress on stderr for long work: assembling the embedded model, loading it, running a suite."""

from __future__ import annotations

import sys

import click


class ProgressReporter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._bar_label: str | None = None

    def model_assembly(self, done: int, total: int) -> None:
        self._show(f"writing the model file [{_bar(done, total)}] {done / 1e6:.0f}/{total / 1e6:.0f} MB")

    def count(self, what: str, done: int, total: int, note: str = "") -> None:
        """A bar for work counted in items, e.g. tasks 3/48, with a note on the last item."""
        self._show(f"{what} [{_bar(done, total)}] {done}/{total} {note}".rstrip())

    def _show(self, label: str) -> None:
        if self.enabled:
            click.echo("\r\x1b[K" + label, nl=False, err=True)
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


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // max(total, 1)
    return "#" * filled + "." * (width - filled)
