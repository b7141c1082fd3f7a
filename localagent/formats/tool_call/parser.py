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

from localagent.core.messages import Final, NamedToolChoice, ToolChoice, ToolRequest, ToolRequests
from localagent.errors import RecoverableTurnError
from localagent.formats.base import ParsedReply
from localagent.formats.loose_json import JsonUnreadable, load_json, matching_bracket, read_json_object
from localagent.formats.tool_call.grammar import Wrapper, call_prefix
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

# Each way of writing a call: its opening, its close, and whether a JSON object in it must start
# with "name" to be one: in <tool_call> tags any object is a call (one without a name gets that
# error), in a fence it may be data. A block the reply does not close runs to its end.
_TOLERANT_BLOCKS = (
    (re.compile(re.escape("<tool_call>")), "</tool_call>", False),
    (re.compile(r"```(?:json)?[ \t]*\n"), "```", True),
)

# A JSON object that opens a line with its "name": a call written bare, maybe after a line of text.
_BARE_CALL = re.compile(r"""(?:^|\n)[ \t]*(?=\{\s*["']name["']\s*:)""")


@dataclass
class _Reading:
    preface: str
    bodies: list[str] = field(default_factory=list)
    answer: str | None = None
    notes: list[str] = field(default_factory=list)
    # The reply ends right after a whole call (for a reply cut off at the token limit).
    complete: bool = True


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
    if cut_off and (reading.answer is not None or not reading.bodies or not reading.complete):
        in_call = reading.answer is None
        raise RecoverableTurnError(prompts.cut_off(token_limit, in_call=in_call), text, "cut_off")
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
        last = matching_bracket(rest, body_start)
        if last is None:
            break
        end = last + 1
        reading.bodies.append(rest[body_start:end])
        # Past the wrapper's close, even where the token limit cut it short: the call itself is whole.
        rest = rest[end + len(wrapper.close) :]
        rest = rest.removeprefix("\n")
    reading.complete = not rest
    return reading


def _tolerant(text: str) -> _Reading:
    for opening, close, named in _TOLERANT_BLOCKS:
        blocks = _blocks(text, opening, close)
        bodies = [
            body for _, body in blocks if _looks_like_call(body) or (not named and body.startswith("{"))
        ]
        if bodies:
            complete = not _opens_another_call(text)
            return _Reading(preface=text[: blocks[0][0]].strip(), bodies=bodies, complete=complete)
    bare = _BARE_CALL.search(text)
    if bare:
        body = text[bare.end() :].strip()
        note = "read a bare JSON object as a tool call"
        complete = matching_bracket(body, 0) == len(body) - 1
        return _Reading(preface=text[: bare.start()].strip(), bodies=[body], notes=[note], complete=complete)
    return _Reading(preface="", answer=text.strip())


def _blocks(text: str, opening: re.Pattern[str], close: str) -> list[tuple[int, str]]:
    """Where each block starts, and its body: found with `find`, not a regex that backtracks over
    the whitespace a looping model writes."""
    blocks = []
    position = 0
    while found := opening.search(text, position):
        end = text.find(close, found.end())
        stop = len(text) if end < 0 else end
        blocks.append((found.start(), text[found.end() : stop].strip()))
        position = stop + len(close)
    return blocks


def _looks_like_call(body: str) -> bool:
    return bool(re.match(r'\s*\{\s*["\']name["\']\s*:', body))


def _opens_another_call(text: str) -> bool:
    """Whether a reply with calls in tags or fences ends inside a call rather than right after one."""
    return not text.rstrip().endswith(("</tool_call>", "```"))


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
    """The arguments exactly as written when the body has the grammar's layout, else as JSON."""
    prefix = call_prefix(name)
    if body.startswith(prefix) and body.endswith("}") and isinstance(arguments, dict):
        written = body[len(prefix) : -1]
        try:
            if load_json(written) == arguments:
                return written
        except JsonUnreadable:
            pass
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _guess_name(body: str) -> str:
    match = re.search(r'["\']name["\']\s*:\s*["\']([^"\']+)', body)
    return match.group(1) if match else ""


def render_calls(requests: Sequence[ToolRequest], wrapper: Wrapper) -> str:
    """Calls as the grammar makes the model write them, so the prompt repeats the reply byte for byte."""
    return "\n".join(
        f"{wrapper.open}{call_prefix(request.name)}{_arguments_text(request)}}}{wrapper.close}"
        for request in requests
    )


def _arguments_text(request: ToolRequest) -> str:
    """The arguments as written; as JSON for a request that was never text (say, a scripted turn)."""
    if request.raw_arguments or request.arguments is None:
        return request.raw_arguments or "{}"
    return json.dumps(request.arguments, ensure_ascii=False)
