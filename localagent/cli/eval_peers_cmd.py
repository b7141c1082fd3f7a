"""`localagent eval peers`: a peer agent (smolagents' CodeAgent or ToolCallingAgent) on the task
suite, with the model a server runs, for a baseline on the same model as localagent's own figures.

The running lives in localagent/evaluation/peer_run.py; smolagents is an optional extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from localagent.cli.eval_tasks_cmd import print_results, report_options, run_with_progress, task_selection
from localagent.cli.options import settings_from, settings_options
from localagent.cli.progress import ProgressReporter
from localagent.errors import LocalagentError

if TYPE_CHECKING:
    from localagent.core.cancel import CancelToken
    from localagent.evaluation.task_run import OnResult, SuiteRun

PEER_SETTINGS = ("model", "api_base", "api_key_env", "max_steps", "max_tokens")
PEERS_EXTRA = "pip install 'localagent[peers]'"


@click.command(name="peers")
@click.option(
    "--agent",
    type=click.Choice(["code", "toolcalling"]),
    required=True,
    help="smolagents' CodeAgent (writes Python that calls the tools) or ToolCallingAgent (tool calls).",
)
@settings_options(PEER_SETTINGS)
@task_selection
@report_options
def peers(
    agent: str,
    categories: tuple[str, ...],
    task_ids: tuple[str, ...],
    splits: tuple[str, ...],
    workspaces: tuple[str, ...],
    limit: int | None,
    transcripts: Path | None,
    as_json: bool,
    **params: Any,
) -> None:
    """Run the task suite through a peer agent, smolagents', on a model a server runs.

    For a baseline on the same model: start `localagent serve`, then run this with its --api-base.
    The peer gets each task's question, localagent's own tools (the ones the task names, run
    in-process on a fresh copy of its workspace) and the same checks, and the report and JSON are
    those of `eval tasks`, so `eval compare` reads them. It may make --max-steps model calls a task,
    the last one the answer smolagents asks for at its step limit. Needs smolagents: pip install
    'localagent[peers]'.
    """
    settings = settings_from(params, PEER_SETTINGS)
    if not settings.api_base:
        raise click.UsageError("--api-base is required: the URL of the server that runs the model")
    try:
        from localagent.evaluation.peer_run import PeerSettings, openai_server_model, run_peer_suite
    except ImportError as error:
        raise LocalagentError(
            f"eval peers needs smolagents ({error.name} is missing): {PEERS_EXTRA}"
        ) from None
    from localagent.backends.factory import api_key
    from localagent.evaluation.tasks import load_suite

    suite = load_suite()
    chosen = suite.select(categories, task_ids, limit, splits, workspaces)
    key = api_key(settings) or "none"  # OpenAI's client wants one; a local server reads none
    _check_server(settings.api_base, key)
    from localagent.cli.eval_tasks_cmd import transcripts_folder

    folder = transcripts_folder(transcripts)
    backend = f"smolagents-{agent}:{settings.model} at {settings.api_base}"
    if not as_json:
        click.echo(f"{len(chosen)} tasks on {backend}; transcripts in {folder}", err=True)
    model = openai_server_model(
        settings.api_base, settings.model, api_key(settings) or "none", settings.max_tokens
    )
    peer = PeerSettings(agent=agent, max_steps=settings.max_steps)  # type: ignore[arg-type]

    def run(cancel: CancelToken, show: OnResult) -> SuiteRun:
        return run_peer_suite(
            chosen, suite.workspaces, model, peer, transcripts=folder, cancel=cancel, on_result=show
        )

    outcome = run_with_progress(len(chosen), ProgressReporter(enabled=True), run)
    described = {"agent": agent, "settings": settings.record()}
    print_results(outcome, backend, folder, as_json, described)


def _check_server(api_base: str, key: str) -> None:
    """A server must answer before the first task, or every task would fail the same way."""
    import openai

    client = openai.OpenAI(base_url=api_base, api_key=key, timeout=10, max_retries=0)
    try:
        client.models.list()
    except openai.OpenAIError as error:
        raise LocalagentError(f"no OpenAI-compatible server answers at {api_base}: {error}") from None
    finally:
        client.close()
