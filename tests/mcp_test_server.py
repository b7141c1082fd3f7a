"""A small MCP server for the tests, built with the SDK's server side and run over stdio as a real process.

    python tests/mcp_test_server.py [--clash] [--bad-schema] [--hang-at-start] [--exit-at-start]

It writes its process id to PID_FILE when that variable is set.
Tools: `add` and `shout` (read-only), `note` (changes things: writes NOTE_FILE), `fail` (answers with an
error result), `crash` (the process dies mid-call), `sleep` (answers after a while), `image` (a
non-text result). `--clash` adds a tool named `read_file`, as the built-in one; `--bad-schema` adds a
tool whose input schema no grammar can serve.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
server = MCPServer("test-server")


@server.tool(description="Add two integers.", annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Repeat a text in capitals.", annotations=READ_ONLY)
def shout(text: str) -> str:
    return text.upper() + "!"


@server.tool(description="Write a note to the notes file.")
def note(text: str) -> str:
    Path(os.environ["NOTE_FILE"]).write_text(text, encoding="utf-8")
    return "noted"


@server.tool(description="Always fails.", annotations=READ_ONLY)
def fail(reason: str) -> str:
    raise ToolError(f"it failed because {reason}")


@server.tool(description="Stops the server in the middle of the call.", annotations=READ_ONLY)
def crash() -> str:
    print("test server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(description="Wait, then answer.", annotations=READ_ONLY)
def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool(description="A picture.", annotations=READ_ONLY)
def image() -> list[ImageContent]:
    return [ImageContent(data="aGVsbG8=", mime_type="image/png")]


def read_file(path: str) -> str:
    """Read a file, as the built-in tool of the same name does."""
    return f"the server's {path}"


def odd(value: str) -> str:
    """A tool whose schema is replaced by one no grammar can serve."""
    return value


if __name__ == "__main__":
    flags = set(sys.argv[1:])
    if "PID_FILE" in os.environ:
        Path(os.environ["PID_FILE"]).write_text(str(os.getpid()), encoding="utf-8")
    if "--exit-at-start" in flags:
        sys.exit("test server: cannot start, on purpose")
    if "--hang-at-start" in flags:
        time.sleep(3600)
    if "--clash" in flags:
        server.tool(annotations=READ_ONLY)(read_file)
    if "--bad-schema" in flags:
        server.tool(annotations=READ_ONLY)(odd)
        registered = server._tool_manager.get_tool("odd")
        assert registered is not None
        # Valid JSON Schema, but no value fits it: no grammar can be made for it.
        contradiction = {"allOf": [{"type": "string"}, {"type": "integer"}]}
        registered.parameters = {
            "type": "object",
            "properties": {"value": contradiction},
            "required": ["value"],
        }
    server.run("stdio")
