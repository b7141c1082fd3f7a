"""`localagent parse`: read one model output on stdin and print the turn result as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from localagent.cli.common import TOOL_CHOICE, TOOLS_FILE, read_tool_specs, tool_choice_option
from localagent.core.messages import Final, ToolChoice, ToolRequest
from localagent.errors import RecoverableTurnError
from localagent.formats.react.parser import parse_reply
from localagent.loop.runner import RunnerSettings
from localagent.loop.tool_execution import choice_refusal, request_problem, too_many_requests
from localagent.tools.base import Tool
from localagent.tools.loading import select_tools
from localagent.tools.spec import dialect_note
from localagent.tools.workspace import Workspace


@click.command()
@TOOLS_FILE
@TOOL_CHOICE
@click.option("--tolerant", is_flag=True, help="Accept the loose shapes models write without a grammar.")
def parse(tools_file: Path | None, tool_choice: str, tolerant: bool) -> None:
    """Parse one text-tag reply from stdin; print the result as JSON.

    Each tool request carries `tool_error`: what the runner would answer instead of running it (an
    unknown tool, arguments that fail the schema, a call the tool choice does not allow), or null.
    Exit status 0 for a final answer or tool requests that would all run, 1 otherwise.
    """
    tools = _tools(tools_file)
    specs = [tool.spec for tool in tools.values()]
    choice = tool_choice_option(tool_choice, specs)
    dialect = dialect_note(specs)
    if dialect:
        click.echo(f"note: {dialect}", err=True)
    text = sys.stdin.read()
    counter = iter(range(1, 1_000_000))
    try:
        parsed = parse_reply(text, specs, choice, tolerant=tolerant, new_id=lambda: f"call_{next(counter)}")
    except RecoverableTurnError as error:
        click.echo(json.dumps({"kind": "error", "message": error.feedback}, ensure_ascii=False, indent=2))
        sys.exit(1)
    result = parsed.result
    refused = False
    if isinstance(result, Final):
        payload: dict[str, Any] = {"kind": "final", "content": result.content, "reasoning": result.reasoning}
    else:
        requests = []
        for index, request in enumerate(result.requests):
            tool_error = _runner_answer(request, index, tools, choice)
            refused = refused or tool_error is not None
            requests.append(
                {
                    "id": request.id,
                    "name": request.name,
                    "arguments": request.arguments,
                    "parse_error": request.parse_error,
                    "tool_error": tool_error,
                }
            )
        payload = {"kind": "tool_requests", "requests": requests, "reasoning": result.reasoning}
        if result.content:
            payload["content"] = result.content
    if parsed.notes:
        payload["notes"] = list(parsed.notes)
    click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    sys.exit(1 if refused else 0)


def _tools(tools_file: Path | None) -> dict[str, Tool]:
    """The built-in default tools, or tools that validate like a hand-written schema but never run."""
    if tools_file is None:
        tools = select_tools(None, Workspace(Path.cwd()))
    else:
        tools = [Tool.from_spec(spec, _never_run) for spec in read_tool_specs(tools_file)]
    return {tool.name: tool for tool in tools}


def _never_run(**arguments: Any) -> str:
    raise AssertionError("parse never runs a tool")


def _runner_answer(
    request: ToolRequest, index: int, tools: dict[str, Tool], choice: ToolChoice
) -> str | None:
    """The tool message the runner would send instead of running the request, in the runner's order."""
    return (
        choice_refusal(request, choice)
        or too_many_requests(index, RunnerSettings().max_requests_per_step)
        or request_problem(request, tools)
    )
