"""`localagent serve`: the local model behind an OpenAI-compatible HTTP API."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from localagent.cli.common import int_option
from localagent.cli.options import settings_from, settings_options
from localagent.cli.progress import ProgressReporter

SERVE_SETTINGS = (
    "model",
    "tool_format",
    "max_actions",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "n_ctx",
    "decoder",
)


@click.command()
@settings_options(SERVE_SETTINGS)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Only this flag sets it (no config key or environment variable): "
    "other machines reach the server only when the command line says so.",
)
@int_option(
    "--port",
    0,
    65535,
    default=8080,
    help="Port to listen on; 0 takes a free one (the ready line says which).",
)
@click.option(
    "--api-key-env",
    "key_env",
    metavar="VAR",
    help="Require every request to carry the value of this environment variable as a bearer key.",
)
def serve(host: str, port: int, key_env: str | None, **params: Any) -> None:
    """Serve the local model over an OpenAI-compatible HTTP API, with grammar-constrained tool calls.

    POST /v1/chat/completions runs the local turn: the model writes its reply format under a
    grammar built from the request's tools and tool_choice, and the reply comes back as OpenAI
    tool_calls (streamed as they are written), content and reasoning_content. POST /v1/completions
    generates under a grammar sent as `grammar` (GBNF) or `structured_outputs.grammar` (Lark).
    GET /v1/models lists the installed models. Requests run one at a time, and each reuses the KV
    cache the last one left. The --max-tokens, --temperature, --top-p and --seed values are the
    defaults for requests that leave them out. Ctrl-C stops the server (exit status 0).
    """
    from localagent.serve.startup import start

    settings = settings_from(params, SERVE_SETTINGS)
    key = _api_key(key_env)
    progress = ProgressReporter(enabled=True)
    start(settings, host=host, port=port, api_key=key, progress=progress, say=_say)
    _say("stopped")


def _api_key(variable: str | None) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable, "")
    if not value:
        raise click.UsageError(
            f"--api-key-env {variable}: the environment variable {variable} is not set or empty"
        )
    return value


def _say(text: str) -> None:
    click.echo(f"localagent serve: {text}", err=True)
    sys.stderr.flush()
