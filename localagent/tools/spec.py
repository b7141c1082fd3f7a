"""What a model is told about a tool: its name, description and JSON schema."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")


class ToolSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    # A narrower schema for the grammar only (paths that exist, say); the model is shown, and the
    # arguments are validated against, `parameters`.
    grammar_parameters: dict[str, Any] | None = None

    @property
    def grammar_schema(self) -> dict[str, Any]:
        return self.grammar_parameters if self.grammar_parameters is not None else self.parameters

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not TOOL_NAME.match(name):
            raise ValueError(
                f"tool name {name!r} must start with a letter or _, use only letters, digits, _ . -, "
                "and be at most 64 characters long"
            )
        return name

    @classmethod
    def from_openai(cls, item: dict[str, Any]) -> ToolSpec:
        """Accept `{"type": "function", "function": {...}}` or the bare function object."""
        function = item.get("function", item) if item.get("type", "function") == "function" else item
        return cls(
            name=function["name"],
            description=function.get("description", ""),
            parameters=function.get("parameters") or {"type": "object", "properties": {}},
        )

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def compact_schema(self) -> str:
        return json.dumps(self.parameters, separators=(",", ":"), ensure_ascii=False)


def load_tool_specs(text: str) -> list[ToolSpec]:
    """Read a JSON list of OpenAI-style function specs; raise ValueError with a readable reason."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON: {error}") from None
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise ValueError("expected a JSON list of function specs")
    specs = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"item {position} is not an object")
        try:
            specs.append(ToolSpec.from_openai(item))
        except (KeyError, ValueError) as error:
            raise ValueError(f"item {position}: {error}") from None
    return specs
