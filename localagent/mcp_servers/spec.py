"""How to start an MCP server: a command line (`--mcp 'COMMAND ARGS…'`) or an `[[mcp]]` config table."""

from __future__ import annotations

import re
import shlex
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from localagent.tools.spec import TOOL_NAME


class McpServer(BaseModel):
    """One MCP server run over stdio; its tools join the agent's tool set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1, description="The program to run.")
    args: tuple[str, ...] = Field((), description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Variables added to the few the server inherits (PATH, HOME…)."
    )
    prefix: str = Field(
        "", description="Put before each of its tool names, e.g. 'time_', so they clash with no other tool."
    )
    name: str | None = Field(None, description="What messages call the server. [default: its command]")
    timeout: float = Field(30.0, gt=0, le=3600, description="Seconds the server may take to answer one call.")
    start_timeout: float = Field(
        60.0, gt=0, le=3600, description="Seconds the server may take to start and list its tools."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_command_line(cls, value: Any) -> Any:
        """`"python -m server --flag"` stands for the server that command line starts."""
        return parse_command(value) if isinstance(value, str) else value

    @field_validator("prefix")
    @classmethod
    def _usable_prefix(cls, prefix: str) -> str:
        if prefix and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]{0,31}", prefix):
            raise ValueError(
                f"prefix {prefix!r} must start with a letter or _ and hold only letters, digits, _ . -"
            )
        return prefix

    @property
    def label(self) -> str:
        """`name`, or the command line with the program's directory left out."""
        return self.name or shlex.join([PurePath(self.command).name, *self.args])

    def tool_name(self, name: str) -> str | None:
        """The name the agent gives the server's tool `name`, or None when no model could call it."""
        full = self.prefix + name
        return full if TOOL_NAME.match(full) else None


def parse_command(text: str) -> dict[str, Any]:
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise ValueError(f"cannot read the MCP server command {text!r}: {error}") from None
    if not words:
        raise ValueError("an MCP server command is empty")
    return {"command": words[0], "args": tuple(words[1:])}
