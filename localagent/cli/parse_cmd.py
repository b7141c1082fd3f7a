"""`localagent parse`: read one model output on stdin and print the turn result as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from localagent.cli.common import TOOL_CHOICE, TOOLS_FILE, read_tool_specs, tool_choice_option
from localagent.errors import RecoverableTurnError
from localagent.messages import Final
from localagent.texttag.parser import parse_reply


@click.command()
@TOOLS_FILE
@TOOL_CHOICE
@click.option("--tolerant", is_flag=True, help="Accept the loose shapes models write without a grammar.")
def parse(tools_file: Path | None, tool_choice: str, tolerant: bool) -> None:
    """Parse one text-tag reply from stdin; print the result as JSON.

    Exit status 0 for a final answer or tool requests, 1 when the reply is unusable.
    """
    specs = read_tool_specs(tools_file)
    choice = tool_choice_option(tool_choice, specs)
    text = sys.stdin.read()
    counter = iter(range(1, 1_000_000))
    try:
        parsed = parse_reply(text, specs, choice, tolerant=tolerant, new_id=lambda: f"call_{next(counter)}")
    except RecoverableTurnError as error:
        click.echo(json.dumps({"kind": "error", "message": error.feedback}, ensure_ascii=False, indent=2))
        sys.exit(1)
    result = parsed.result
    if isinstance(result, Final):
        payload = {"kind": "final", "content": result.content, "reasoning": result.reasoning}
    else:
        payload = {
            "kind": "tool_requests",
            "requests": [
                {"id": r.id, "name": r.name, "arguments": r.arguments, "parse_error": r.parse_error}
                for r in result.requests
            ],
            "reasoning": result.reasoning,
        }
        if result.content:
            payload["content"] = result.content
    if parsed.notes:
        payload["notes"] = list(parsed.notes)
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
