"""`localagent run TASK`: one task, start to answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from localagent.cli.agent_setup import WORKSPACE_OPTION, YES_OPTION, open_agent
from localagent.cli.display import changes_line, colors_allowed, shorten, sources_line
from localagent.cli.interrupt import cancel_on_interrupt
from localagent.cli.options import backend_options, settings_from
from localagent.core import paths
from localagent.core.cancel import CancelToken
from localagent.core.messages import HISTORY
from localagent.loop.runner import RunResult
from localagent.loop.transcript import default_transcript_path


@click.command()
@click.argument("task")
@backend_options
@WORKSPACE_OPTION
@YES_OPTION
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object: status, answer, steps, changed, sources, usage, messages, transcript.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the answer.")
@click.option(
    "--transcript",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write the JSONL transcript. [default: ~/.local/state/localagent/transcripts/]",
)
def run(
    task: str, workspace: Path, yes: bool, as_json: bool, quiet: bool, transcript: Path | None, **params: Any
) -> None:
    """Run TASK to a final answer, using tools as needed.

    Exit status: 0 when the run ends with a final answer, 1 when it ends otherwise (step limit,
    tool failures, cancelled, error) or its transcript could not be written, 2 for bad usage.
    """
    if not task.strip():
        raise click.UsageError('TASK is empty: say what to do, as in: localagent run "What is 17 * 23?"')
    silent = as_json or quiet
    path = transcript or default_transcript_path(paths.transcripts_dir())
    agent = open_agent(settings_from(params), workspace, yes=yes, transcript=path, show=not silent)
    cancel = CancelToken()

    def first_interrupt() -> None:
        if not silent:
            click.echo("\ncancelling… (Ctrl-C again to quit now)", err=True)

    try:
        with cancel_on_interrupt(cancel, first_interrupt):
            result = agent.run(task, cancel=cancel)
        changes = None if silent else changes_line(result.changed, agent.tools)
    finally:
        agent.close()
    report(result, path, as_json=as_json, changes=changes)
    if agent.transcript_failure:
        click.echo(f"localagent: error: {agent.transcript_failure}", err=True)
    sys.exit(0 if result.status == "final" and not agent.transcript_failure else 1)


def report(result: RunResult, transcript: Path, *, as_json: bool, changes: str | None = None) -> None:
    if as_json:
        payload = {
            "status": result.status,
            "answer": result.answer,
            "steps": result.steps,
            "changed": list(result.changed),
            "sources": list(result.sources),
            "usage": result.usage.model_dump(),
            "messages": HISTORY.dump_python(result.messages, mode="json"),
            "transcript": str(transcript),
        }
        if result.error:
            payload["error"] = result.error
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    if result.answer:
        click.echo(result.answer)
    if result.sources:
        # dimmed where the terminal shows colours; click drops the style on a pipe
        click.echo(
            click.style(sources_line(result.sources), dim=True),
            err=True,
            color=None if colors_allowed() else False,
        )
    if changes:
        click.echo(changes, err=True)
    if result.status != "final":
        reason = f": {shorten(result.error)}" if result.error else ""  # one line; the transcript has it all
        click.echo(
            f"localagent: run ended with status {result.status}{reason} (transcript: {transcript})", err=True
        )
