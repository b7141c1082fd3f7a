"""`localagent grammar`: show the generated grammars; check and test grammar files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from localagent.cli.common import TOOL_CHOICE, TOOLS_FILE, int_option, read_tool_specs, tool_choice_option
from localagent.core.user_files import read_user_text
from localagent.errors import UserFileError
from localagent.formats.react.grammar import GrammarOptions, ReplyGrammar, build_grammar
from localagent.models.registry import DEFAULT_MODEL, load_registry
from localagent.settings import Settings
from localagent.tools.spec import dialect_note

PROMPT_FORMAT = click.option(
    "--prompt-format",
    type=click.Choice(["plain", "chat"]),
    help="plain: actions end at 'Observation:' and answers at a blank line; chat: both end at end of turn. "
    "[default: the default model's]",
)
MAX_ACTIONS = int_option(
    "--max-actions", 1, 64, default=None, help="Actions allowed in one reply. [default: as in runs]"
)


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
@PROMPT_FORMAT
@MAX_ACTIONS
def show(
    tools_file: Path | None,
    tool_choice: str,
    output_format: str,
    prompt_format: str | None,
    max_actions: int | None,
) -> None:
    """Print the grammar generated for a tool set and tool choice, by default the one that runs on the
    default model use (stderr says which)."""
    generated = _generated(tools_file, tool_choice, prompt_format, max_actions)
    click.echo(generated.lark if output_format == "lark" else generated.gbnf, nl=False)
    for note in generated.loose:
        click.echo(f"// approximated: {note}", err=True)


def _generated(
    tools_file: Path | None, tool_choice: str, prompt_format: str | None, max_actions: int | None
) -> ReplyGrammar:
    """The grammar for these tools and options; options left out are those of the default model's runs."""
    specs = read_tool_specs(tools_file)
    choice = tool_choice_option(tool_choice, specs)
    prompt_format = prompt_format or default_prompt_format()
    max_actions = max_actions or Settings().max_actions
    options = GrammarOptions(max_actions=max_actions, prompt_format=prompt_format)  # type: ignore[arg-type]
    click.echo(
        f"// {prompt_format} prompt format, at most {max_actions} action{'s' if max_actions > 1 else ''} "
        f"a reply (as runs on {DEFAULT_MODEL} use, unless set by --prompt-format and --max-actions)",
        err=True,
    )
    dialect = dialect_note(specs)
    if dialect:
        click.echo(f"// note: {dialect}", err=True)
    return build_grammar(specs, choice, options)


def default_prompt_format() -> str:
    entry = load_registry().get(DEFAULT_MODEL)
    return entry.prompt_format if entry is not None else "plain"


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
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@TOOLS_FILE
@TOOL_CHOICE
@PROMPT_FORMAT
@MAX_ACTIONS
@click.option(
    "--cases",
    "cases_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help='JSON Lines: one {"text": ..., "expect": "accept" | "reject"} per line.',
)
def test_cases(
    file: Path | None,
    cases_path: Path,
    tools_file: Path | None,
    tool_choice: str,
    prompt_format: str | None,
    max_actions: int | None,
) -> None:
    """Run sample texts through FILE in every engine and compare with what each case expects.

    Without FILE, the grammar generated for --tools-file and --tool-choice is tested, by default the
    one that runs on the default model use (stderr says which). Prints a table; exit status 1 when a
    case gets another verdict than it expects in any engine, or when an engine cannot compile FILE
    (its error is shown and its column left out).
    """
    from localagent.grammar_checks.files import ENGINES, GrammarFile, accepts, check_file

    if file is None:
        generated = _generated(tools_file, tool_choice, prompt_format, max_actions)
        grammar_file = GrammarFile(Path("generated.lark"), "lark", generated.lark)
        file = grammar_file.path
    else:
        grammar_file = GrammarFile.read(file)
    cases = read_cases(cases_path)
    working = []
    for engine, found in check_file(grammar_file).items():
        errors = [p for p in found if not p.message.startswith("warning: ")]
        if errors:
            where = f"{file}:{errors[0].line}:{errors[0].column}" if errors[0].line is not None else f"{file}"
            click.echo(click.style(f"{engine}: cannot compile {where}: {errors[0].message}", fg="red"))
        else:
            working.append(engine)
    mismatches = 0
    if working:
        click.echo(f"{'#':>3}  {'expect':<7}" + "".join(f"{engine:>12}" for engine in working) + "  text")
    for number, (text, expect) in enumerate(cases, start=1):
        if not working:
            break
        verdicts = ["accept" if accepts(grammar_file, engine, text) else "reject" for engine in working]
        mismatches += any(verdict != expect for verdict in verdicts)
        cells = "".join(
            click.style(f"{verdict:>12}", fg="green" if verdict == expect else "red") for verdict in verdicts
        )
        shown = text if len(text) <= 50 else text[:47] + "..."
        click.echo(f"{number:>3}  {expect:<7}{cells}  {shown!r}")
    broken = len(ENGINES) - len(working)
    summary = f"{_count(len(cases), 'case')}, {_count(mismatches, 'mismatch')}"
    if not working:
        summary = f"{_count(len(cases), 'case')} not run: no engine compiles {file}"
    elif broken:
        summary += f"; {_count(broken, 'engine')} cannot compile {file}"
    click.echo(summary)
    sys.exit(1 if mismatches or broken else 0)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}{'es' if noun.endswith('h') else 's'}"


def read_cases(path: Path) -> list[tuple[str, str]]:
    lines = read_user_text(path, "cases file", UserFileError).splitlines()
    cases = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserFileError(f"{path}:{number}: not valid JSON: {error.msg}") from None
        if (
            not isinstance(case, dict)
            or not isinstance(case.get("text"), str)
            or case.get("expect")
            not in (
                "accept",
                "reject",
            )
        ):
            wanted = '{"text": "...", "expect": "accept" or "reject"}'
            raise UserFileError(f"{path}:{number}: expected {wanted}")
        cases.append((case["text"], case["expect"]))
    if not cases:
        raise UserFileError(f"{path} has no cases")
    return cases
