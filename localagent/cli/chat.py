"""`localagent chat`: an interactive session that keeps its history (and, locally, its KV cache)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from localagent.agent import Agent
from localagent.cli.agent_setup import WORKSPACE_OPTION, YES_OPTION, open_agent
from localagent.cli.display import changes_line
from localagent.cli.interrupt import cancel_on_interrupt
from localagent.cli.line_input import LineReader
from localagent.cli.options import backend_options, settings_from
from localagent.core import paths
from localagent.core.cancel import CancelToken
from localagent.core.messages import HISTORY, Message
from localagent.loop.transcript import default_transcript_path

HELP = "Commands: /tools, /reset, /save FILE, /help, /quit (or Ctrl-D)."


@click.command()
@backend_options
@WORKSPACE_OPTION
@YES_OPTION
def chat(workspace: Path, yes: bool, **params: Any) -> None:
    """Talk with the agent, one task after another, keeping the conversation.

    Lines are edited as in a shell (arrows, Ctrl-A, Ctrl-E, ...); Up recalls earlier lines, kept in
    ~/.local/state/localagent/chat_history. Ctrl-C cancels the current answer; Ctrl-D or /quit ends
    the session.
    """
    path = default_transcript_path(paths.transcripts_dir())
    agent = open_agent(
        settings_from(params), workspace, yes=yes, transcript=path, show=True, interactive=True
    )
    history: list[Message] | None = None  # None: the next task opens a new conversation
    click.echo(f"localagent chat on {agent.load().name}. {HELP}", err=True)
    lines = LineReader(paths.chat_history_path())
    try:
        while True:
            line = lines.read("you")
            if line is None:
                break
            if not line.strip():
                continue
            if line.startswith("/"):
                command = _command(line.strip(), history or [], agent)
                if command == "quit":
                    break
                if command == "reset":
                    history = None
                continue
            cancel = CancelToken()
            with cancel_on_interrupt(cancel, lambda: click.echo("\ncancelling…", err=True)):
                result = agent.run(line, history=history, cancel=cancel)
            history = result.messages
            if result.answer:
                click.echo(result.answer)
            if changes := changes_line(result.changed, agent.tools):
                click.echo(changes, err=True)
            if result.status != "final":
                click.echo(
                    click.style(
                        f"({result.status}{': ' + result.error if result.error else ''})", fg="yellow"
                    ),
                    err=True,
                )
    finally:
        lines.close()
        agent.close()
        click.echo(f"transcript: {path}", err=True)
        if agent.transcript_failure:
            click.echo(f"localagent: error: {agent.transcript_failure}", err=True)
    sys.exit(1 if agent.transcript_failure else 0)


def _command(line: str, history: Sequence[Message], agent: Agent) -> str | None:
    """Run a slash command; "quit" and "reset" are left to the session."""
    name, _, argument = line.partition(" ")
    if name in ("/quit", "/exit"):
        return "quit"
    if name == "/reset":
        click.echo("history cleared", err=True)
        return "reset"
    if name == "/tools":
        click.echo(", ".join(tool.name for tool in agent.tools) or "(no tools)", err=True)
    elif name == "/save":
        if not argument.strip():
            click.echo("usage: /save FILE", err=True)
            return None
        target = Path(argument.strip()).expanduser()
        try:
            target.write_text(
                json.dumps(HISTORY.dump_python(list(history), mode="json"), ensure_ascii=False, indent=2)
            )
        except OSError as error:
            click.echo(f"cannot save to {target}: {error.strerror}", err=True)
        else:
            click.echo(f"saved {len(history)} messages to {target}", err=True)
    elif name == "/help":
        click.echo(HELP, err=True)
    else:
        click.echo(f"unknown command {name}. {HELP}", err=True)
    return None
