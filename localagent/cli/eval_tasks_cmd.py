"""`localagent eval tasks`: the task suite through the whole agent, with a table or JSON of results.

The suite, its checks and the running live in localagent/evaluation (tasks, task_checks, task_run).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from localagent.cli.common import int_option
from localagent.cli.options import backend_options, settings_from
from localagent.cli.progress import ProgressReporter
from localagent.errors import LocalagentError
from localagent.evaluation.tasks import CATEGORIES, SPLITS

if TYPE_CHECKING:
    from localagent.core.cancel import CancelToken
    from localagent.evaluation.task_run import OnResult, SuiteRun, TaskResult

F = TypeVar("F", bound=Callable[..., Any])


def task_selection(function: F) -> F:
    """--category, --task, --split, --workspace and --limit: which tasks of the suite run."""
    options = [
        click.option(
            "--category",
            "categories",
            multiple=True,
            metavar="NAME",
            help=f"Only tasks of this category (repeatable): {', '.join(CATEGORIES)}.",
        ),
        click.option(
            "--task",
            "task_ids",
            multiple=True,
            metavar="ID",
            help="Only this task id or glob, like 'edit-*' (repeatable).",
        ),
        click.option(
            "--split",
            "splits",
            multiple=True,
            type=click.Choice(SPLITS),
            help="Only tasks of this split (repeatable): dev to tune on, held_out to judge a change on.",
        ),
        click.option(
            "--workspace",
            "workspaces",
            multiple=True,
            metavar="NAME",
            help="Only tasks asked about this fixture workspace (repeatable).",
        ),
        click.option("--limit", type=click.IntRange(1), help="Only the first N chosen tasks. [default: all]"),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def report_options(function: F) -> F:
    """--transcripts and --json: where each task's transcript goes, and how the results are printed."""
    function = click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print all figures, per-task results and transcript paths as JSON.",
    )(function)
    return click.option(
        "--transcripts",
        type=click.Path(path_type=Path, file_okay=False),
        help="Folder for one JSONL transcript per task. "
        "[default: a new folder under ~/.local/state/localagent/transcripts/]",
    )(function)


@click.command(name="tasks")
@backend_options
@task_selection
@click.option(
    "--add-tools",
    "extra_tools",
    default="",
    metavar="LIST",
    help="Tools added to every task's own (a --tools value), to measure a tool before it becomes a default.",
)
@int_option(
    "--concurrency",
    1,
    32,
    default=1,
    help="Tasks run at once; above 1 only with --api-base (a local model runs one task at a time).",
)
@report_options
def tasks(
    categories: tuple[str, ...],
    task_ids: tuple[str, ...],
    splits: tuple[str, ...],
    workspaces: tuple[str, ...],
    extra_tools: str,
    limit: int | None,
    concurrency: int,
    transcripts: Path | None,
    as_json: bool,
    **params: Any,
) -> None:
    """Run the built-in task suite through the agent and judge each run.

    Everyday questions about folders of files (read, search, list, compute, edit, multi-file, no tool
    needed, impossible), each in a fresh copy of its workspace, file changes approved without asking.
    Prints per task: success, steps, model turns, tool errors, format errors, identical calls in one
    reply, seconds and tokens; then totals by split (dev and held_out, always apart), by category and
    overall. Each task names its own tools. Ctrl-C stops the suite and prints the tasks that finished.
    """
    from localagent.evaluation.tasks import load_suite

    if params.get("tools") is not None:
        raise LocalagentError("--tools does not apply to eval tasks: each task names its own tools")
    settings = settings_from(params)
    suite = load_suite()
    chosen = suite.select(categories, task_ids, limit, splits, workspaces)
    if concurrency > 1 and not settings.api_base:
        raise LocalagentError(
            f"--concurrency {concurrency} needs --api-base: a local model runs one task at a time"
        )
    folder = transcripts_folder(transcripts)
    progress = ProgressReporter(enabled=True)
    # The model loads once and the MCP servers start once for the whole suite; their notes are kept
    # to show once at the end.
    from localagent.agent import Agent
    from localagent.cli.agent_setup import load_agent
    from localagent.evaluation.task_run import run_suite

    notices: list[str] = []
    with Agent(settings=settings, on_notice=notices.append) as agent:
        backend = load_agent(agent, progress).name
        if not as_json:
            click.echo(f"{len(chosen)} tasks on {backend}; transcripts in {folder}", err=True)

        def run(cancel: CancelToken, show: OnResult) -> SuiteRun:
            return run_suite(
                chosen,
                agent,
                workspaces=suite.workspaces,
                transcripts=folder,
                concurrency=concurrency,
                cancel=cancel,
                on_result=show,
                extra_tools=extra_tools,
            )

        outcome = run_with_progress(len(chosen), progress, run)
    for note in dict.fromkeys(notices):
        click.echo(f"note: {note}", err=True)
    print_results(
        outcome, backend, folder, as_json, {"settings": settings.record(), "added_tools": extra_tools}
    )


def print_results(
    outcome: SuiteRun, backend: str, folder: Path, as_json: bool, described: dict[str, Any]
) -> None:
    """The report, or the JSON that `eval compare` reads (with what `described` adds); exit 130 when
    the suite was cancelled."""
    if as_json:
        payload = {
            "backend": backend,
            **described,
            "transcripts": str(folder),
            "cancelled": outcome.cancelled,
            **outcome.summary(),
            "tasks": [result.as_json() for result in outcome.results],
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        click.echo(render_task_report(outcome, backend, folder))
    if outcome.cancelled:
        sys.exit(130)


def transcripts_folder(chosen: Path | None) -> Path:
    from localagent.core.paths import transcripts_dir

    folder = chosen or transcripts_dir() / time.strftime("tasks-%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LocalagentError(f"cannot create the transcripts folder {folder}: {error.strerror}") from None
    return folder


def run_with_progress(
    total: int, progress: ProgressReporter, run: Callable[[CancelToken, OnResult], SuiteRun]
) -> SuiteRun:
    """`run(cancel, on_result)` with a progress bar; the first Ctrl-C cancels the running tasks and
    keeps the rest."""
    from localagent.cli.interrupt import cancel_on_interrupt
    from localagent.core.cancel import CancelToken

    finished = 0

    def show(result: TaskResult) -> None:
        nonlocal finished
        finished += 1
        progress.count("tasks", finished, total, f"{'✓' if result.success else '✗'} {result.id}")

    def first_interrupt() -> None:
        progress.done()
        click.echo("\nstopping: the running tasks are cancelled… (Ctrl-C again to quit now)", err=True)

    cancel = CancelToken()
    with cancel_on_interrupt(cancel, first_interrupt):
        outcome = run(cancel, show)
    progress.done()
    return outcome


# Each task names its own tools: the shared --tools flag is refused, and hidden from the help.
next(param for param in tasks.params if param.name == "tools").hidden = True


def render_task_report(outcome: SuiteRun, backend: str, folder: Path) -> str:
    summary = outcome.summary()
    header = (
        f"{'task':<36}{'split':>9}{'ok':>3}{'steps':>6}{'turns':>6}{'tool err':>9}{'fmt err':>8}"
        f"{'identical':>10}{'seconds':>9}{'tokens in/out':>15}"
    )
    lines = [header]
    for r in outcome.results:
        lines.append(
            f"{r.id:<36}{r.split:>9}{'✓' if r.success else '✗':>3}{r.steps:>6}{r.turns:>6}"
            f"{r.tool_errors:>9}{r.format_errors:>8}{r.identical_calls:>10}{r.seconds:>9.1f}"
            f"{f'{r.prompt_tokens}/{r.completion_tokens}':>15}"
        )
    failures = [r for r in outcome.results if not r.success]
    if failures:
        lines += ["", "why tasks failed:"]
        lines += [f"  {r.id}: {_first_reason(r)}" for r in failures]
    columns = f"{'tasks':>6}{'success':>9}{'median s':>10}{'p90 s':>8}{'turns':>7}{'tokens out':>12}"
    lines += ["", f"{'split':<14}{columns}"]
    lines += [_totals_line(name, totals) for name, totals in summary["splits"].items()]
    lines += ["", f"{'category':<14}{columns}"]
    lines += [_totals_line(name, totals) for name, totals in summary["categories"].items()]
    overall = summary["overall"]
    lines += [
        "",
        f"overall: {overall['successes']}/{overall['tasks']} tasks succeeded "
        f"({overall['success_rate']:.1%}), median {overall['median_seconds']:.1f} s and p90 "
        f"{overall['p90_seconds']:.1f} s per task, {backend}",
        f"{overall['identical_calls']} identical calls in one reply, {overall['repeated_calls']} repeated "
        f"calls across steps, {overall['tool_failure_runs']} runs ended in tool_failures",
        f"transcripts: {folder}",
    ]
    if outcome.cancelled:
        lines.append("cancelled: the tasks not shown did not finish")
    return "\n".join(lines)


def _totals_line(name: str, totals: dict[str, Any]) -> str:
    """One row of a totals table: success, seconds, model turns and generated tokens per task."""
    if not totals["tasks"]:
        return f"{name:<14}{0:>6}{'-':>9}"
    return (
        f"{name:<14}{totals['tasks']:>6}{totals['success_rate']:>9.1%}{totals['median_seconds']:>10.1f}"
        f"{totals['p90_seconds']:>8.1f}{totals['turns_per_task']:>7.1f}"
        f"{totals['generated_tokens_per_task']:>12.0f}"
    )


def _first_reason(result: TaskResult) -> str:
    if result.status != "final" and result.error:
        return f"{result.status}: {result.error}"
    return result.problems[0] if result.problems else result.status
