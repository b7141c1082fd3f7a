"""The tools of an agent's MCP servers: started together, offered as localagent Tools, stopped together.

A server that will not start, or a tool whose name or schema cannot be served, is left out with one
line; the agent goes on with the tools that work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
import mcp_types

from localagent.core.cancel import CancelToken
from localagent.mcp_servers.connection import EventLoopThread, McpConnection, McpServerError
from localagent.mcp_servers.spec import McpServer
from localagent.schema_grammar.compiler import schema_grammar
from localagent.tools.base import Tool, drop_titles, jsonschema_validator
from localagent.tools.spec import ToolSpec

Notice = Callable[[str], None]
# A result longer than this is cut, as read_file cuts a long file: a small model's context is short.
RESULT_CHAR_LIMIT = 8000


@dataclass(frozen=True)
class ServedTool:
    tool: Tool
    server: str  # the server's label, for messages


class McpToolset:
    def __init__(self, servers: Sequence[McpServer], notice: Notice) -> None:
        self._events = EventLoopThread()
        self._connections = [McpConnection(spec, self._events) for spec in servers]
        self.tools: list[ServedTool] = []
        # All servers start at once; each takes a second or more to import its SDK.
        starting = [(connection, connection.start()) for connection in self._connections]
        for connection, started in starting:
            try:
                listed = connection.wait_started(started)
            except McpServerError as error:
                notice(str(error))
                continue
            for item in listed:
                try:
                    self.tools.append(ServedTool(served_tool(connection, item), connection.spec.label))
                except UnusableTool as problem:
                    notice(str(problem))

    def close(self) -> None:
        for connection in self._connections:
            connection.close()
        self._events.close()


class UnusableTool(Exception):
    pass


def served_tool(connection: McpConnection, listed: mcp_types.Tool) -> Tool:
    """A localagent Tool that calls `listed` on its server; its schema serves the grammar and validation."""
    name = connection.spec.tool_name(listed.name)
    left_out = f"{connection.label}: tool {listed.name!r} left out"
    if name is None:
        raise UnusableTool(
            f"{left_out}: a tool name must be letters, digits, _ . - and at most 64 characters long"
        )
    problem = schema_problem(listed.input_schema)
    if problem:
        raise UnusableTool(f"{left_out}: its input schema {problem}")
    schema = drop_titles(listed.input_schema)
    spec = ToolSpec(name=name, description=listed.description or listed.title or "", parameters=schema)

    def invoke(arguments: dict[str, Any], cancel: CancelToken) -> str:
        return _shortened(connection.call(listed.name, arguments, cancel))

    read_only = listed.annotations is not None and listed.annotations.read_only_hint is True
    # A tool that may change things asks for approval, as write_file does.
    return Tool(spec, jsonschema_validator(schema), invoke, changes_files=not read_only)


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why the grammar and the validator cannot serve `schema`, or None when they can."""
    if schema.get("type") != "object":
        return "does not describe an object"
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(
            schema
        )
    except jsonschema.SchemaError as error:
        return f"is not valid JSON Schema: {error.message}"
    try:
        schema_grammar(schema)
    except (ValueError, LookupError, RecursionError) as error:
        return f"cannot be turned into a grammar: {error}"
    return None


def _shortened(text: str) -> str:
    if len(text) <= RESULT_CHAR_LIMIT:
        return text
    return (
        f"{text[:RESULT_CHAR_LIMIT]}\n[Truncated: the result has {len(text)} characters; "
        f"only the first {RESULT_CHAR_LIMIT} are shown.]"
    )
