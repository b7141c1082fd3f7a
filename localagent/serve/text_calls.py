"""Earlier tool calls that a client sends back as text, read as the calls they were.

Some clients keep no `tool_calls` in their history: smolagents writes each step's calls into an
assistant message as `Calling tools:\\n[{'id': ..., 'type': 'function', 'function': {'name': ...,
'arguments': {...}}}]` (a Python list) and their results into the next user message, as
`Observation:\\n...` (after `Call id: ...` for an error). Others echo the model's own
`<tool_call>{"name": ..., "arguments": ...}</tool_call>` text. Shown to the model as written, a call
would read as an answer; read here, it is rendered as a call and the next user message as its result.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from localagent.backends.arguments import parse_tool_call
from localagent.core.messages import ToolRequest

_CALLING_TOOLS = re.compile(r"(?:^|\n)Calling tools:\n(\[.*\])\s*\Z", re.DOTALL)
_TAGGED_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
# What a client writes before a call's result: smolagents' `Call id: ID` line and `Observation:` label.
_RESULT_LABELS = re.compile(r"\A(?:Call id: \S+\n)?(?:Observation:\n?)?")


def calls_in_text(text: str, where: int) -> tuple[str, list[ToolRequest]] | None:
    """The rest of the text and the calls, when `text` (message `where`) holds calls written out;
    else None. A call written without an id gets one from where it stands."""
    listed = _CALLING_TOOLS.search(text)
    if listed:
        rest, found = text[: listed.start()], _listed_calls(listed[1])
    else:
        rest = _TAGGED_CALL.sub("", text)
        found = [_call(_loads(tagged[1]), "") for tagged in _TAGGED_CALL.finditer(text)]
    calls = [call for call in found if call is not None]
    if not calls or len(calls) != len(found):
        return None
    named = [
        call if call.id else call.model_copy(update={"id": f"call_text_{where}_{n}"})
        for n, call in enumerate(calls)
    ]
    return rest.strip(), named


def result_text(text: str) -> str:
    """A call's result as the client wrote it, without the labels it put before it."""
    return _RESULT_LABELS.sub("", text, count=1).strip("\n")


def _listed_calls(listed: str) -> list[ToolRequest | None]:
    items = _loads(listed)
    if not isinstance(items, list):
        return [None]
    return [_call(item.get("function"), item.get("id")) if isinstance(item, dict) else None for item in items]


def _loads(text: str) -> Any:
    """JSON, or the Python literal that `str()` of a list of dicts writes."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _call(function: Any, call_id: Any) -> ToolRequest | None:
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None
    arguments = function.get("arguments", {})
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
    return parse_tool_call(call_id if isinstance(call_id, str) and call_id else "", function["name"], raw)
