"""What `run` and `chat` share: their options, and building a runner from settings and a workspace."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from localagent import paths, prompts
from localagent.backends.factory import open_backend
from localagent.cli.approval import TerminalApprover
from localagent.cli.display import RunDisplay
from localagent.cli.options import settings_from
from localagent.cli.progress import ProgressReporter
from localagent.events import ignore_event
from localagent.messages import Message, SystemMessage, UserMessage
from localagent.runner import Runner, RunnerSettings
from localagent.settings import Settings
from localagent.tools.files import workspace_listing
from localagent.tools.loading import select_tools
from localagent.tools.spec import dialect_note
from localagent.tools.workspace import Workspace
from localagent.transcript import Transcript, default_transcript_path

WORKSPACE_OPTION = click.option(
    "--workspace",
    "-w",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="Directory the file tools may read and change; nothing outside it.",
)
YES_OPTION = click.option("--yes", "-y", is_flag=True, help="Approve file changes without asking.")


def opening_messages(task: str, workspace: Path, listing: bool = True) -> list[Message]:
    """A run's first messages: the instructions, then the task after a view of the workspace.

    The instructions are the same for every run, so a local model's KV snapshot of them (with the
    tools) is reused across runs; what depends on the workspace comes after them.
    """
    files = workspace_listing(Workspace(workspace)) if listing else None
    return [
        SystemMessage(content=prompts.SYSTEM_PROMPT),
        UserMessage(content=prompts.first_task(task, files)),
    ]


@dataclass
class Agent:
    settings: Settings
    root: Path
    runner: Runner
    transcript: Transcript
    transcript_path: Path
    display: RunDisplay
    backend_name: str
    tool_names: list[str]


def open_agent(
    params: dict[str, Any], workspace: Path, *, yes: bool, transcript: Path | None, show: bool
) -> Agent:
    """Settings, tools, backend, transcript and runner; `show` streams the run on stderr."""
    settings = settings_from(params)
    workspace_root = Workspace(workspace.resolve())
    tools = select_tools(settings.tools, workspace_root)
    display = RunDisplay(sys.stderr)
    dialect = dialect_note([tool.spec for tool in tools])
    if dialect and show:
        display.notice(dialect)
    progress = ProgressReporter(enabled=show)
    if not settings.api_base and not settings.model.startswith("script:"):
        progress.stage(f"loading {settings.model}")
    backend = open_backend(settings, progress.model_assembly, display.notice if show else None)
    progress.done()
    path = transcript or default_transcript_path(paths.transcripts_dir())
    try:
        record = Transcript(path)
    except OSError as error:
        raise click.UsageError(f"cannot write the transcript to {path}: {error.strerror}") from None
    record.write_note("settings", backend=backend.name, settings=settings.model_dump(mode="json"))
    runner = Runner(
        backend,
        tools,
        RunnerSettings(max_steps=settings.max_steps),
        on_event=display if show else ignore_event,
        approve=TerminalApprover(workspace_root, auto_approve=yes),
        transcript=record,
    )
    return Agent(
        settings, workspace_root.root, runner, record, path, display, backend.name, [t.name for t in tools]
    )
