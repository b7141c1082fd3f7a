"""Reading a reply in the tool-call format: calls in their wrappers, or an answer in plain text.

Strict mode reads what the grammar made the model write, wrapper for wrapper. Tolerant mode reads
what a model writes without a grammar: calls in `<tool_call>` tags, in ```json fences or as a bare
JSON object, with `arguments` (or `parameters`) as an object or as a JSON string.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent import prompts
from localagent.errors import RecoverableTurnError
from localagent.formats.base import ParsedReply
from localagent.formats.tool_call_grammar import Wrapper, call_prefix
from localagent.messages import Final, NamedToolChoice, ToolChoice, ToolRequest, ToolRequests
from localagent.texttag.loose_json import JsonUnreadable, load_json, read_json_object
from localagent.tools.spec import ToolSpec

_TOLERANT_BLOCKS = (
    re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|$)", re.DOTALL),
    re.compile(r"```(?:json)?[ \t]*\n(?P<body>\s*\{.*?)\s*(?:```|$)", re.DOTALL),
)


@dataclass
class _Reading:
    preface: str
    bodies: list[str] = field(default_factory=list)
    answer: str | None = None
    notes: list[str] = field(default_factory=list)


def new_request_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def parse_tool_call_reply(
    text: str,
    tools: Sequence[ToolSpec],
    tool_choice: ToolChoice,
    wrapper: Wrapper,
    *,
    constrained: bool,
    cut_off: bool = False,
    token_limit: int | None = None,
    new_id: Callable[[], str] = new_request_id,
) -> ParsedReply:
    tool_names = [tool.name for tool in tools]
    shapes = prompts.tool_call_reply_shapes(tool_names, tool_choice)
    reading = _strict(text, wrapper) if constrained else _tolerant(text)
    if cut_off and (reading.answer is not None or not reading.bodies or _opens_another_call(text, wrapper)):
        raise RecoverableTurnError(
            prompts.cut_off(token_limit, in_call=bool(reading.bodies)), text, "cut_off"
        )
    if reading.bodies:
        requests = [_request(body, new_id, reading.notes, repair=not constrained) for body in reading.bodies]
        result = ToolRequests(requests=requests, reasoning=reading.preface or None)
        return ParsedReply(result, tuple(reading.notes))
    answer = reading.answer or ""
    if not answer.strip():
        raise RecoverableTurnError(prompts.empty_reply(shapes), text, "empty")
    if tool_choice == "required" or isinstance(tool_choice, NamedToolChoice):
        raise RecoverableTurnError(prompts.required_call(tool_choice, shapes), text, "no_required_call")
    return ParsedReply(Final(content=answer), tuple(reading.notes))


def _strict(text: str, wrapper: Wrapper) -> _Reading:
    """Calls as the grammar writes them; anything else is the answer."""
    opener = wrapper.open or "{"
    start = text.find(opener)
    if start < 0 or (start > 0 and "\n" not in text[:start]):
        return _Reading(preface="", answer=text)
    reading = _Reading(preface=text[:start])
    rest = text[start:]
    while rest.startswith(opener):
        body_start = len(wrapper.open)
        end = _object_end(rest, body_start)
        if end is None:
            break
        reading.bodies.append(rest[body_start:end])
        rest = rest[end + len(wrapper.close) :]
        rest = rest.removeprefix("\n")
    return reading


def _tolerant(text: str) -> _Reading:
    for block in _TOLERANT_BLOCKS:
        matches = list(block.finditer(text))
        bodies = [match["body"] for match in matches if _looks_like_call(match["body"])]
        if bodies:
            return _Reading(preface=text[: matches[0].start()].strip(), bodies=bodies)
    stripped = text.strip()
    if stripped.startswith("{") and _looks_like_call(stripped):
        return _Reading(preface="", bodies=[stripped], notes=["read a bare JSON object as a tool call"])
    return _Reading(preface="", answer=stripped)


def _looks_like_call(body: str) -> bool:
    return bool(re.match(r'\s*\{\s*["\']name["\']\s*:', body))


def _object_end(text: str, start: int) -> int | None:
    """The index just past the JSON object that starts at `start`, or None if it does not close."""
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        character = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character == "{":
            depth += 1
        elif character == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _opens_another_call(text: str, wrapper: Wrapper) -> bool:
    """Whether a cut-off reply ends inside a call rather than right after one."""
    closing = wrapper.close or "}"
    return not text.rstrip().endswith(closing.strip())


def _request(body: str, new_id: Callable[[], str], notes: list[str], *, repair: bool) -> ToolRequest:
    request_id = new_id()
    try:
        read = read_json_object(body) if repair else None
        value = read.value if read is not None else load_json(body)
    except JsonUnreadable as error:
        return _unreadable(request_id, _guess_name(body), body, str(error))
    if read is not None:
        notes.extend(f"{repaired} in a tool call" for repaired in read.repairs)
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return ToolRequest(id=request_id, name="", raw_arguments=body, parse_error=prompts.NO_FUNCTION_NAME)
    name = value["name"]
    arguments: Any = value.get("arguments", value.get("parameters", {}))
    raw = _raw_arguments(body, name, arguments)
    if isinstance(arguments, str):
        try:
            arguments = load_json(arguments) if arguments.strip() else {}
        except JsonUnreadable as error:
            return ToolRequest(
                id=request_id,
                name=name,
                raw_arguments=raw,
                parse_error=prompts.invalid_json(name, str(error)),
            )
    if not isinstance(arguments, dict):
        reason = "the arguments must be a JSON object"
        return ToolRequest(
            id=request_id, name=name, raw_arguments=raw, parse_error=prompts.invalid_json(name, reason)
        )
    return ToolRequest(id=request_id, name=name, arguments=arguments, raw_arguments=raw)


def _unreadable(request_id: str, name: str, raw: str, reason: str) -> ToolRequest:
    return ToolRequest(
        id=request_id, name=name, raw_arguments=raw, parse_error=prompts.invalid_json(name, reason)
    )


def _raw_arguments(body: str, name: str, arguments: Any) -> str:
    """The arguments exactly as written when the body has the grammar's layout, else as compact JSON."""
    prefix = call_prefix(name)
    if body.startswith(prefix) and body.endswith("}"):
        return body[len(prefix) : -1]
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _guess_name(body: str) -> str:
    match = re.search(r'["\']name["\']\s*:\s*["\']([^"\']+)', body)
    return match.group(1) if match else ""


def render_calls(requests: Sequence[ToolRequest], wrapper: Wrapper) -> str:
    """Calls as the grammar makes the model write them, so the prompt repeats the reply byte for byte."""
    return "\n".join(
        f"{wrapper.open}{call_prefix(request.name)}{request.raw_arguments or '{}'}}}{wrapper.close}"
        for request in requests
    )
