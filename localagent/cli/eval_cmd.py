"""`localagent eval`: offline benchmarks. `eval tasks` runs the task suite through the whole agent,
`eval peers` through a peer agent on a served model; `eval bfcl` asks the Berkeley Function Calling
Leaderboard's AST categories, one model turn each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from localagent.cli.common import MODEL, int_option
from localagent.cli.eval_peers_cmd import peers
from localagent.cli.eval_tasks_cmd import tasks
from localagent.cli.options import setting_option
from localagent.evaluation.bfcl_data import CATEGORIES, BfclDataError, check_category
from localagent.settings import Settings

if TYPE_CHECKING:
    from localagent.evaluation.bfcl_run import QuestionResult

_LABELS = {"grammar": "grammar", "no_grammar": "no grammar"}


@click.group(name="eval")
def eval_group() -> None:
    """Offline evaluations: the task suite through the whole agent or a peer agent, and BFCL."""


eval_group.add_command(tasks)
eval_group.add_command(peers)


@eval_group.command(name="compare")
@click.argument("before", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("after", type=click.Path(path_type=Path, dir_okay=False))
def compare_runs(before: Path, after: Path) -> None:
    """Compare two JSON results of `eval tasks`, split by split, on the tasks both finished.

    Prints success, median and p90 seconds and model turns per task for each run, the tasks the
    second run won and lost, and whether its net gain is larger than the noise band
    (2·√ of the tasks whose outcome differs): a change is kept when it wins on held_out.
    """
    from localagent.evaluation.compare import compare, read_run, render

    click.echo(render(compare(read_run(before), read_run(after)), before.name, after.name))


@eval_group.command()
@click.option("--category", default="simple", show_default=True, help=f"One of: {', '.join(CATEGORIES)}.")
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions. [default: all]")
@click.option("--no-grammar", is_flag=True, help="Run only the column without the grammar.")
@int_option("--max-tokens", 16, 2048, default=384, help="Tokens the model may write per reply.")
@MODEL
@click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="A BFCL v3 folder: BFCL_v3_<category>.json and possible_answer/ from the gorilla repository.",
)
@setting_option("tool_format")
@click.option("--json", "as_json", is_flag=True, help="Print the figures and per-question results as JSON.")
def bfcl(
    category: str,
    limit: int | None,
    no_grammar: bool,
    max_tokens: int,
    model: str,
    data_dir: Path,
    tool_format: str | None,
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
    from localagent.models.registry import resolve_model
    from localagent.tools.spec import dialect_note

    check_category(category)
    folder = data_dir
    if not folder.is_dir():
        raise BfclDataError(f"BFCL data folder not found: {folder}")
    cases = load_cases(folder, category, limit)
    dialect = dialect_note([f.spec() for case in cases for f in case.question.functions])
    if dialect and not as_json:
        click.echo(f"note: {dialect}", err=True)
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
        resolved,
        category,
        cases,
        data_dir=folder,
        columns=columns,
        max_tokens=max_tokens,
        progress=progress,
        tool_format=tool_format or Settings.model_fields["tool_format"].default,
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
