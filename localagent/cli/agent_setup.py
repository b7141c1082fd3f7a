"""What `run`, `chat` and `eval tasks` share: their workspace flags, and an Agent shown on the terminal.

The Agent (localagent/agent.py) assembles the run; the command line only gives it a display, an
approval prompt and a progress line while the model loads.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from localagent.agent import Agent
from localagent.cli.approval import TerminalApprover
from localagent.cli.display import RunDisplay
from localagent.cli.progress import ProgressReporter
from localagent.settings import Settings
from localagent.tools.workspace import Workspace
from localagent.turn.model_turn import ModelTurn

WORKSPACE_OPTION = click.option(
    "--workspace",
    "-w",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=".",
    show_default=True,
    help="Directory the file tools may read and change; nothing outside it.",
)
YES_OPTION = click.option("--yes", "-y", is_flag=True, help="Approve file changes without asking.")


def open_agent(
    settings: Settings, workspace: Path, *, yes: bool, transcript: Path, show: bool, interactive: bool = False
) -> Agent:
    """The agent for one command, loaded; `show` streams its runs and notes on stderr. Without it, a
    terminal still gets a live line while the model works, erased when the answer comes."""
    display = RunDisplay(sys.stderr, steps=show)
    agent = Agent(
        settings=settings,
        workspace=workspace,
        approve=TerminalApprover(Workspace(workspace), auto_approve=yes),
        transcript=transcript,
        on_event=display,
        on_notice=display.notice if show else ignore_notice,
    )
    load_agent(agent, ProgressReporter(enabled=show), interactive)
    return agent


def load_agent(agent: Agent, progress: ProgressReporter, interactive: bool = False) -> ModelTurn:
    """Load the model and start the MCP servers, with a progress line on a terminal; `interactive`
    also waits for a local model's grammar engine, so the first question is answered at full speed."""
    settings = agent.settings
    if not settings.api_base and not settings.model.startswith("script:"):
        progress.stage(f"loading {settings.model}")
    elif settings.mcp:
        progress.stage("starting MCP servers")
    try:
        turn = agent.load(progress.model_assembly)
        from localagent.backends.local_generator import LocalGenerator  # llama.cpp only when local

        generator = getattr(turn, "generator", None)
        if interactive and isinstance(generator, LocalGenerator):
            generator.wait_until_ready()
        return turn
    finally:
        progress.done()


def ignore_notice(text: str) -> None:
    """Quiet output (--json, --quiet) leaves notes to the transcript."""
