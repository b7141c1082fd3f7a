"""Progress on stderr for long work: fetching or assembling a model file, loading it, running a suite."""

from __future__ import annotations

import shutil
import sys

import click


class ProgressReporter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._bar_label: str | None = None
        self._task = "writing the model file"
        self._position = (0, 0)

    def model_assembly(self, done: int, total: int) -> None:
        self._position = (done, total)
        self._show(f"{self._task} [{_bar(done, total, 24)}] {done / 1e6:.0f}/{total / 1e6:.0f} MB")

    def model_step(self, task: str) -> None:
        """Name what the model bar is waiting on now (a download), keeping the bytes written so far."""
        self._task = task
        self.model_assembly(*self._position)

    def count(self, what: str, done: int, total: int, note: str = "") -> None:
        """A bar for work counted in items, e.g. tasks 3/48, with a note on the last item."""
        self._show(f"{what} [{_bar(done, total)}] {done}/{total} {note}".rstrip())

    def stage(self, text: str) -> None:
        """A one-line note about slow work starting, cleared by done()."""
        if self.enabled:
            click.echo(click.style(f"{text}…", dim=True), nl=False, err=True)
            self._bar_label = text

    def done(self) -> None:
        if self._bar_label is not None:
            # Spaces rather than an erase sequence, which a dumb terminal would print as it is.
            click.echo("\r" + " " * (len(self._bar_label) + 1) + "\r", nl=False, err=True)
            self._bar_label = None

    def _show(self, label: str) -> None:
        if not self.enabled:
            return
        # One line that never wraps (\r returns to the start of the last line only); \x1b[K clears the rest.
        label = label[: shutil.get_terminal_size().columns - 1]
        click.echo("\r\x1b[K" + label, nl=False, err=True)
        self._bar_label = label


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // max(total, 1)
    return "#" * filled + "." * (width - filled)
