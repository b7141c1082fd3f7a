"""`localagent eval`: offline benchmarks. `eval tasks` runs the task suite through the whole agent;
`eval bfcl` asks the Berkeley Function Calling Leaderboard's AST categories, one model turn each."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from localagent.cli.options import backend_options, settings_from
from localagent.errors import LocalagentError
from localagent.evaluation.bfcl_data import CATEGORIES, BfclDataError, check_category, default_data_dir
from localagent.evaluation.tasks import CATEGORIES as TASK_CATEGORIES
from localagent.models import DEFAULT_MODEL

if TYPE_CHECKING:
    from localagent.evaluation.bfcl_run import QuestionResult
    from localagent.evaluation.task_run import SuiteRun, TaskResult

_LABELS = {"grammar": "grammar", "no_grammar": "no grammar"}


@click.group(name="eval")
def eval_group() -> None:
    """Offline evaluations: the task suite through the whole agent, and BFCL."""


@eval_group.command()
@click.option("--category", default="simple", show_default=True, help=f"One of: {', '.join(CATEGORIES)}.")
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions. [default: all]")
@click.option("--no-grammar", is_flag=True, help="Run only the column without the grammar.")
@click.option(
    "--max-tokens",
    type=click.IntRange(16, 2048),
    default=384,
    show_default=True,
    help="Tokens the model may write per reply.",
)
@click.option("--model", "-m", default=DEFAULT_MODEL, show_default=True, help="Model name or .gguf path.")
@click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path),
    help="A BFCL v3 folder. [default: tests/external/bfcl of the checkout, else "
    "../shared/external/bfcl next to it]",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures and per-question results as JSON.")
def bfcl(
    category: str,
    limit: int | None,
    no_grammar: bool,
    max_tokens: int,
    model: str,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Ask BFCL questions, one model turn each, and score the calls by BFCL's AST rules.

    Prints, with the grammar and without it, the valid-structure rate (a final answer, or calls to
    offered functions with arguments that fit their schemas), the AST accuracy and the seconds per
    question. For irrelevance a reply is right when it calls nothing.
    """
    from localagent.cli.progress import ProgressReporter
    from localagent.evaluation.bfcl_data import load_cases
    from localagent.evaluation.bfcl_eval import COLUMNS, evaluate_bfcl
    from localagent.models import resolve_model

    check_category(category)
    folder = data_dir or default_data_dir()
    if folder is None:
        raise BfclDataError(
            "no BFCL data found (looked for tests/external/bfcl in the checkout and "
            "../shared/external/bfcl next to it); pass --data DIR"
        )
    if not folder.is_dir():
        raise BfclDataError(f"BFCL data folder not found: {folder}")
    cases = load_cases(folder, category, limit)
    reporter = ProgressReporter(enabled=not as_json)
    resolved = resolve_model(model, progress=reporter.model_assembly)
    reporter.done()
    columns = ["no_grammar"] if no_grammar else list(COLUMNS)

    def progress(column: str, number: int, total: int, result: QuestionResult) -> None:
        if not as_json:
            verdict = "right" if result.correct else ("wrong" if result.valid_structure else "invalid")
            click.echo(
                f"[{_LABELS[column]}] question {number}/{total} {result.id}: {verdict} "
                f"({result.seconds:.1f} s)",
                err=True,
            )

    figures = evaluate_bfcl(
        resolved, category, cases, data_dir=folder, columns=columns, max_tokens=max_tokens, progress=progress
    )
    click.echo(json.dumps(figures, indent=2) if as_json else render_table(figures))


def render_table(figures: dict[str, Any]) -> str:
    columns = figures["columns"]
    lines = [
        f"BFCL {figures['category']}: {figures['questions']} questions, model {figures['model']}, "
        f"up to {figures['max_tokens']} tokens per reply",
        "",
        f"{'':<22}" + "".join(f"{_LABELS[name]:>12}" for name in columns),
    ]
    rows = [
        ("valid structure", "valid_structure_rate", "{:.1%}"),
        ("AST accuracy", "ast_accuracy", "{:.1%}"),
        ("seconds per question", "seconds_per_question", "{:.2f}"),
        ("  median", "median_seconds", "{:.2f}"),
    ]
    for label, key, style in rows:
        lines.append(
            f"{label:<22}" + "".join(f"{style.format(column[key]):>12}" for column in columns.values())
        )
    return "\n".join(lines)


@eval_group.command()
@backend_options
@click.option(
    "--category",
    "categories",
    multiple=True,
    metavar="NAME",
    help=f"Only tasks of this category (repeatable): {', '.join(TASK_CATEGORIES)}.",
)
@click.option(
    "--task",
    "task_ids",
    multiple=True,
    metavar="ID",
    help="Only this task id or glob, like 'edit-*' (repeatable).",
)
@click.option("--limit", type=click.IntRange(1), help="Only the first N chosen tasks. [default: all]")
@click.option(
    "--concurrency",
    type=click.IntRange(1, 32),
    default=1,
    show_default=True,
    help="Tasks run at once; above 1 only with --api-base (a local model runs one task at a time).",
)
@click.option(
    "--transcripts",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for one JSONL transcript per task. "
    "[default: a new folder under ~/.local/state/localagent/transcripts/]",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print all figures, per-task results and transcript paths as JSON.",
)
def tasks(
    categories: tuple[str, ...],
    task_ids: tuple[str, ...],
    limit: int | None,
    concurrency: int,
    transcripts: Path | None,
    as_json: bool,
    **params: Any,
) -> None:
    """Run the built-in task suite through the agent and judge each run.

    Everyday questions about small folders of files (read, search, list, compute, edit, multi-file,
    no tool needed, impossible), each in a fresh copy of its workspace, file changes approved as with
    --yes. Prints per task: success, steps, tool errors, format errors, identical calls in one reply,
    seconds and tokens; then totals by category and overall. Each task names its own tools. Ctrl-C
    stops the suite and prints the tasks that finished.
    """
    from localagent.backends.factory import open_backend
    from localagent.cancel import CancelToken
    from localagent.cli.agent_setup import transcripts_dir
    from localagent.cli.interrupt import cancel_on_interrupt
    from localagent.cli.progress import ProgressReporter
    from localagent.evaluation.task_run import run_suite
    from localagent.evaluation.tasks import load_suite

    if params.get("tools") is not None:
        raise LocalagentError("--tools does not apply to eval tasks: each task names its own tools")
    settings = settings_from(params)
    suite = load_suite()
    chosen = suite.select(categories, task_ids, limit)
    if concurrency > 1 and not settings.api_base:
        raise LocalagentError(
            f"--concurrency {concurrency} needs --api-base: a local model runs one task at a time"
        )
    folder = transcripts or transcripts_dir() / time.strftime("tasks-%Y%m%d-%H%M%S")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LocalagentError(f"cannot create the transcripts folder {folder}: {error.strerror}") from None
    progress = ProgressReporter(enabled=True)
    if not settings.api_base and not settings.model.startswith("script:"):
        progress.stage(f"loading {settings.model}")
    notices: list[str] = []
    turn = open_backend(settings, progress.model_assembly, notices.append)
    progress.done()
    if not as_json:
        click.echo(f"{len(chosen)} tasks on {turn.name}; transcripts in {folder}", err=True)
    finished: list[TaskResult] = []

    def show(result: TaskResult) -> None:
        finished.append(result)
        mark = "✓" if result.success else "✗"
        progress.count("tasks", len(finished), len(chosen), f"{mark} {result.id}")

    cancel = CancelToken()

    def first_interrupt() -> None:
        progress.done()
        click.echo("\nstopping: the running tasks are cancelled… (Ctrl-C again to quit now)", err=True)

    with cancel_on_interrupt(cancel, first_interrupt):
        outcome = run_suite(
            chosen,
            turn,
            workspaces=suite.workspaces,
            max_steps=settings.max_steps,
            transcripts=folder,
            concurrency=concurrency,
            cancel=cancel,
            on_result=show,
        )
    progress.done()
    for note in dict.fromkeys(notices):
        click.echo(f"note: {note}", err=True)
    if as_json:
        payload = {
            "backend": turn.name,
            "settings": settings.model_dump(mode="json"),
            "transcripts": str(folder),
            "cancelled": outcome.cancelled,
            **outcome.summary(),
            "tasks": [result.as_json() for result in outcome.results],
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        click.echo(render_task_report(outcome, turn.name, folder))
    if outcome.cancelled:
        sys.exit(130)


# Each task names its own tools: the shared --tools flag is refused, and hidden from the help.
next(param for param in tasks.params if param.name == "tools").hidden = True


def render_task_report(outcome: SuiteRun, backend: str, folder: Path) -> str:
    summary = outcome.summary()
    header = (
        f"{'task':<30}{'ok':>3}{'steps':>7}{'tool err':>10}{'fmt err':>9}{'identical':>11}"
        f"{'seconds':>9}{'tokens in/out':>16}"
    )
    lines = [header]
    for r in outcome.results:
        lines.append(
            f"{r.id:<30}{'✓' if r.success else '✗':>3}{r.steps:>7}{r.tool_errors:>10}{r.format_errors:>9}"
            f"{r.identical_calls:>11}{r.seconds:>9.1f}{f'{r.prompt_tokens}/{r.completion_tokens}':>16}"
        )
    failures = [r for r in outcome.results if not r.success]
    if failures:
        lines += ["", "why tasks failed:"]
        lines += [f"  {r.id}: {_first_reason(r)}" for r in failures]
    lines += ["", f"{'category':<14}{'tasks':>6}{'success':>9}{'median s':>10}"]
    for name, totals in summary["categories"].items():
        lines.append(
            f"{name:<14}{totals['tasks']:>6}{totals['success_rate']:>9.1%}{totals['median_seconds']:>10.1f}"
        )
    overall = summary["overall"]
    lines += [
        "",
        f"overall: {overall['successes']}/{overall['tasks']} tasks succeeded "
        f"({overall['success_rate']:.1%}), median {overall['median_seconds']:.1f} s per task, {backend}",
        f"{overall['identical_calls']} identical calls in one reply, {overall['repeated_calls']} repeated "
        f"calls across steps, {overall['tool_failure_runs']} runs ended in tool_failures",
        f"transcripts: {folder}",
    ]
    if outcome.cancelled:
        lines.append("cancelled: the tasks not shown did not finish")
    return "\n".join(lines)


def _first_reason(result: TaskResult) -> str:
    if result.status != "final" and result.error:
        return f"{result.status}: {result.error}"
    return result.problems[0] if result.problems else result.status
