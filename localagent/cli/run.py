"""`localagent run TASK`: one task, start to answer."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from localagent.backends.factory import open_backend
from localagent.cancel import CancelToken
from localagent.cli.approval import TerminalApprover
from localagent.cli.display import RunDisplay
from localagent.cli.interrupt import cancel_on_interrupt
from localagent.cli.options import backend_options, settings_from
from localagent.cli.progress import ProgressReporter
from localagent.events import ignore_event
from localagent.messages import HISTORY, Message, SystemMessage, UserMessage
from localagent.runner import Runner, RunnerSettings, RunResult
from localagent.tools.loading import select_tools
from localagent.tools.workspace import Workspace
from localagent.transcript import Transcript, default_transcript_path


def transcripts_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "localagent" / "transcripts"


def agent_instructions(workspace: Path) -> str:
    return f"You are a careful assistant. You work in the directory {workspace}. Use a tool when it helps."


@click.command()
@click.argument("task")
@backend_options
@click.option(
    "--workspace",
    "-w",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="Directory the file tools may read and change; nothing outside it.",
)
@click.option("--yes", "-y", is_flag=True, help="Approve file changes without asking.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object: status, answer, steps, usage, messages, transcript.",
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
    tool failures, cancelled, error), 2 for bad usage.
    """
    settings = settings_from(params)
    root = workspace.resolve()
    tools = select_tools(settings.tools, Workspace(root))
    silent = as_json or quiet
    display = RunDisplay(sys.stderr)
    progress = ProgressReporter(enabled=not silent)
    backend = open_backend(settings, progress.model_assembly, None if silent else display.notice)
    progress.done()
    path = transcript or default_transcript_path(transcripts_dir())
    try:
        record = Transcript(path)
    except OSError as error:
        raise click.UsageError(f"cannot write the transcript to {path}: {error.strerror}") from None
    cancel = CancelToken()
    runner = Runner(
        backend,
        tools,
        RunnerSettings(max_steps=settings.max_steps),
        on_event=ignore_event if silent else display,
        approve=TerminalApprover(root, auto_approve=yes),
        transcript=record,
    )
    history: list[Message] = [SystemMessage(content=agent_instructions(root)), UserMessage(content=task)]
    record.write_note("settings", backend=backend.name, settings=settings.model_dump(mode="json"))

    def first_interrupt() -> None:
        if not silent:
            click.echo("\ncancelling… (Ctrl-C again to quit now)", err=True)

    try:
        with cancel_on_interrupt(cancel, first_interrupt):
            result = runner.run(history, cancel)
    finally:
        record.close()
    report(result, path, as_json=as_json)
    sys.exit(0 if result.status == "final" else 1)


def report(result: RunResult, transcript: Path, *, as_json: bool) -> None:
    if as_json:
        payload = {
            "status": result.status,
            "answer": result.answer,
            "steps": result.steps,
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
    if result.status != "final":
        reason = f": {result.error}" if result.error else ""
        click.echo(
            f"localagent: run ended with status {result.status}{reason} (transcript: {transcript})", err=True
        )
