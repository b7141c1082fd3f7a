"""`localagent grammar`: show the generated grammars; check and test grammar files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from localagent.cli.common import TOOL_CHOICE, TOOLS_FILE, read_tool_specs, tool_choice_option
from localagent.texttag.grammar import GrammarOptions, build_grammar


@click.group()
def grammar() -> None:
    """Show the generated text-tag grammars; check and test grammar files."""


@grammar.command()
@TOOLS_FILE
@TOOL_CHOICE
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["lark", "gbnf"]),
    default="lark",
    show_default=True,
    help="Lark (lark, llguidance, vLLM) or GBNF (llama.cpp).",
)
@click.option(
    "--prompt-format",
    type=click.Choice(["plain", "chat"]),
    default="plain",
    show_default=True,
    help="plain: actions end at 'Observation:' and answers at a blank line; chat: both end at end of turn.",
)
@click.option(
    "--max-actions",
    type=click.IntRange(1, 64),
    default=8,
    show_default=True,
    help="Actions allowed in one reply.",
)
def show(
    tools_file: Path | None, tool_choice: str, output_format: str, prompt_format: str, max_actions: int
) -> None:
    """Print the grammar generated for a tool set and tool choice."""
    specs = read_tool_specs(tools_file)
    choice = tool_choice_option(tool_choice, specs)
    options = GrammarOptions(max_actions=max_actions, prompt_format=prompt_format)  # type: ignore[arg-type]
    generated = build_grammar(specs, choice, options)
    click.echo(generated.lark if output_format == "lark" else generated.gbnf, nl=False)
    for note in generated.loose:
        click.echo(f"// approximated: {note}", err=True)


@grammar.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
def check(files: tuple[Path, ...]) -> None:
    """Compile each .lark or .gbnf FILE with lark, llguidance and llama.cpp's GBNF parser.

    Errors are reported with line and column. Exit status 1 when any engine rejects any file.
    """
    from localagent.grammar_checks.files import ENGINES, GrammarFile, check_file

    failed = False
    for path in files:
        problems = check_file(GrammarFile.read(path))
        for engine in ENGINES:
            found = [p for p in problems[engine] if not p.message.startswith("warning: ")]
            warnings = [p for p in problems[engine] if p.message.startswith("warning: ")]
            state = click.style("ok", fg="green") if not found else click.style("error", fg="red")
            click.echo(f"{path}: {engine}: {state}")
            for problem in found + warnings:
                where = (
                    f"{path}:{problem.line}:{problem.column}: " if problem.line is not None else f"{path}: "
                )
                click.echo(f"  {where}{problem.message}")
            failed = failed or bool(found)
    sys.exit(1 if failed else 0)


@grammar.command(name="test")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--cases",
    "cases_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help='JSON Lines: one {"text": ..., "expect": "accept" | "reject"} per line.',
)
def test_cases(file: Path, cases_path: Path) -> None:
    """Run sample texts through FILE in every engine and compare with what each case expects.

    Prints a table; exit status 1 on any mismatch.
    """
    from localagent.grammar_checks.files import ENGINES, GrammarFile, accepts, check_file

    grammar_file = GrammarFile.read(file)
    cases = read_cases(cases_path)
    broken = {
        engine
        for engine, found in check_file(grammar_file).items()
        if any(not p.message.startswith("warning: ") for p in found)
    }
    header = f"{'#':>3}  {'expect':<7}" + "".join(f"{engine:>12}" for engine in ENGINES) + "  text"
    click.echo(header)
    mismatches = 0
    for number, (text, expect) in enumerate(cases, start=1):
        cells = []
        for engine in ENGINES:
            if engine in broken:
                cells.append(click.style(f"{'no grammar':>12}", fg="red"))
                mismatches += 1
                continue
            verdict = "accept" if accepts(grammar_file, engine, text) else "reject"
            good = verdict == expect
            mismatches += not good
            cells.append(click.style(f"{verdict:>12}", fg="green" if good else "red"))
        shown = text if len(text) <= 50 else text[:47] + "..."
        click.echo(f"{number:>3}  {expect:<7}" + "".join(cells) + f"  {shown!r}")
    click.echo(f"{len(cases)} cases, {mismatches} mismatches")
    sys.exit(1 if mismatches else 0)


def read_cases(path: Path) -> list[tuple[str, str]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise click.UsageError(f"cannot read cases file {path}: {error.strerror}") from None
    cases = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as error:
            raise click.UsageError(f"{path}:{number}: not valid JSON: {error.msg}") from None
        if (
            not isinstance(case, dict)
            or not isinstance(case.get("text"), str)
            or case.get("expect")
            not in (
                "accept",
                "reject",
            )
        ):
            raise click.UsageError(
                f'{path}:{number}: expected {{"text": "...", "expect": "accept" or "reject"}}'
            )
        cases.append((case["text"], case["expect"]))
    if not cases:
        raise click.UsageError(f"{path} has no cases")
    return cases
