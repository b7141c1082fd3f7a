"""The `localagent` command line."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from localagent import __version__
from localagent.cli.display import colors_allowed
from localagent.errors import LocalagentError

# What str.splitlines breaks a line at, shown escaped: a key of a user's file may hold one.
_LINE_BREAKS = {ord("\n"): "\\n", ord("\r"): "\\r"}
_LINE_BREAKS |= {code: f"\\x{code:02x}" for code in (0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x85)}
_LINE_BREAKS |= {0x2028: "\\u2028", 0x2029: "\\u2029"}


def _one_line(message: str) -> str:
    return message.translate(_LINE_BREAKS)


class _CommandLine(click.Group):
    """The command group whose `main` gives every error one line, never a traceback: exit status 2
    for user mistakes, 1 for failures at run time (a model that cannot be fetched), 130 when
    interrupted. Click's `CliRunner` runs it as the `localagent` script does."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any) -> None:
        extra["standalone_mode"] = False
        try:
            super().main(args, prog_name or "localagent", **extra)
        except click.exceptions.Abort:
            click.echo("aborted", err=True)
            sys.exit(130)
        except click.ClickException as error:
            error.show()
            sys.exit(error.exit_code)
        except LocalagentError as error:
            click.echo(f"localagent: error: {_one_line(str(error))}", err=True)
            sys.exit(error.exit_code)
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(1)


@click.group(name="localagent", cls=_CommandLine, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="localagent")
@click.pass_context
def cli(context: click.Context) -> None:
    """An offline-first ReAct agent: grammar-constrained text tags on a local GGUF model, or native
    tool calls on any OpenAI-compatible API with --api-base."""
    if not colors_allowed():
        context.color = False  # every click.echo and click.style below this context follows it


def _register() -> None:
    from localagent.cli.bench_cmd import bench
    from localagent.cli.chat import chat
    from localagent.cli.eval_cmd import eval_group
    from localagent.cli.grammar_cmd import grammar
    from localagent.cli.models_cmd import models
    from localagent.cli.parse_cmd import parse
    from localagent.cli.run import run
    from localagent.cli.serve_cmd import serve

    for command in (run, chat, serve, parse, grammar, models, bench, eval_group):
        cli.add_command(command)


_register()


def main() -> None:
    """Entry point of the `localagent` script and `python -m localagent`."""
    cli.main()
