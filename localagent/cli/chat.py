"""`localagent chat`: an interactive session that keeps its history (and, locally, its KV cache)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from localagent import paths
from localagent.cancel import CancelToken
from localagent.cli.agent_setup import WORKSPACE_OPTION, YES_OPTION, open_agent, opening_messages
from localagent.cli.interrupt import cancel_on_interrupt
from localagent.cli.line_input import LineReader
from localagent.cli.options import backend_options
from localagent.messages import HISTORY, Message, UserMessage

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
    agent = open_agent(params, workspace, yes=yes, transcript=None, show=True)
    runner, tools = agent.runner, agent.tool_names
    fresh: list[Message] = []
    history = list(fresh)
    click.echo(f"localagent chat on {agent.backend_name}. {HELP}", err=True)
    lines = LineReader(paths.chat_history_path())
    try:
        while True:
            line = lines.read("you")
            if line is None:
                break
            if not line.strip():
                continue
            if line.startswith("/"):
                if _command(line.strip(), history, fresh, tools) == "quit":
                    break
                continue
            cancel = CancelToken()
            with cancel_on_interrupt(cancel, lambda: click.echo("\ncancelling…", err=True)):
                asked = (
                    [*history, UserMessage(content=line)] if history else opening_messages(line, agent.root)
                )
                result = runner.run(asked, cancel)
            history = result.messages
            if result.answer:
                click.echo(result.answer)
            if result.status != "final":
                click.echo(
                    click.style(
                        f"({result.status}{': ' + result.error if result.error else ''})", fg="yellow"
                    ),
                    err=True,
                )
    finally:
        lines.close()
        agent.transcript.close()
        click.echo(f"transcript: {agent.transcript_path}", err=True)
        if agent.transcript.failure:
            click.echo(f"localagent: error: {agent.transcript.failure}", err=True)
    sys.exit(1 if agent.transcript.failure else 0)


def _command(line: str, history: list[Message], fresh: list[Message], tool_names: list[str]) -> str | None:
    name, _, argument = line.partition(" ")
    if name in ("/quit", "/exit"):
        return "quit"
    if name == "/reset":
        history[:] = fresh
        click.echo("history cleared", err=True)
    elif name == "/tools":
        click.echo(", ".join(tool_names) or "(no tools)", err=True)
    elif name == "/save":
        if not argument.strip():
            click.echo("usage: /save FILE", err=True)
            return None
        target = Path(argument.strip()).expanduser()
        try:
            target.write_text(
                json.dumps(HISTORY.dump_python(history, mode="json"), ensure_ascii=False, indent=2)
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
