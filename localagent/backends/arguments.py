"""Tool-call arguments that arrive as a raw JSON string, as in the OpenAI chat protocol."""

from __future__ import annotations

import json
from typing import Any

from localagent.core.messages import ToolRequest


def parse_tool_call(request_id: str, name: str, raw_arguments: str) -> ToolRequest:
    """A tool request; arguments that are not a JSON object become a `parse_error` for the model.

    Never raises. Empty arguments mean no arguments, written back as "{}".
    """
    if not raw_arguments.strip():
        return ToolRequest(id=request_id, name=name, arguments={}, raw_arguments="{}")
    try:
        value = json.loads(raw_arguments)
    except json.JSONDecodeError as error:
        # Some messages end in " at" already ("Invalid control character at").
        reason = f"{error.msg.removesuffix(' at')} at character {error.pos}"
    else:
        if isinstance(value, dict):
            return ToolRequest(id=request_id, name=name, arguments=value, raw_arguments=raw_arguments)
        reason = f"expected a JSON object, got {_json_type(value)}"
    return ToolRequest(
        id=request_id,
        name=name,
        raw_arguments=raw_arguments,
        parse_error=f"Invalid JSON arguments for tool {name}: {reason}",
    )


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
