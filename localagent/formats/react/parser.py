"""Text-tag replies to turn results.

Strict mode parses with the grammar source itself (lark, without its length bounds), for output that
was generated under the grammar. Tolerant mode reads the loose shapes models write without a grammar
(see tolerant.py).
Either way a reply the model can fix raises RecoverableTurnError with feedback; nothing else escapes.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Sequence
from functools import cache

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from localagent.core.messages import Final, ToolChoice, ToolRequest, ToolRequests
from localagent.errors import RecoverableTurnError
from localagent.formats.base import ParsedReply
from localagent.formats.loose_json import (
    JsonUnreadable,
    ReadJson,
    load_json,
    read_json_object,
    without_code_fence,
)
from localagent.formats.react.reply import RawAction, ReplyParts, Unparsable, cut_at_observation
from localagent.formats.react.template import render_definitions, template_definitions
from localagent.formats.react.tolerant import tolerant_parts
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts
from localagent.turn.feedback import call_required

# The generated grammars bound lengths and counts and, for chat prompts, let the answer hold blank
# lines; the parser accepts the output of every one of them, so it keeps the shape and drops the bounds.
_UNBOUNDED = {
    "actions": "action+ actions_end",
    "THOUGHT": r"/[^\n]+/",
    "ANSWER": r"/[^\n]+(\n\n?[^\n]+)*/",
    "TOOL_NAME": r"/[A-Za-z_][A-Za-z0-9_.\-]*/",
    "ACTION_INPUT": r"/\{[^\n]*\}/",
}
# An attempt at a JSON object: `{}`, or a brace, then a key and a colon. `{temperature in SF}` is none.
_JSON_OBJECT_START = re.compile(r"""\{\s*(?:\}|(?:"[^"\n]*"|'[^'\n]*'|[A-Za-z_][\w-]*)\s*:)""")
_QUOTES = "\"'`"


def new_request_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def parse_reply(
    text: str,
    tools: Sequence[ToolSpec] = (),
    tool_choice: ToolChoice = "auto",
    *,
    tolerant: bool = False,
    cut_off: bool = False,
    token_limit: int | None = None,
    new_id: Callable[[], str] = new_request_id,
    keep_cut_answer: bool = True,
) -> ParsedReply:
    """Read one reply; raise RecoverableTurnError when the model must write it again. A Final
    Answer that is `cut_off` is kept, marked as cut, unless not `keep_cut_answer` (a reply stopped
    for repeating itself)."""
    tool_names = [tool.name for tool in tools]
    try:
        parts = tolerant_parts(text, tool_names) if tolerant else strict_parts(text)
    except Unparsable as problem:
        if cut_off:
            raise RecoverableTurnError(prompts.cut_off(token_limit), text, "cut_off") from None
        shapes = prompts.react_reply_shapes(tool_names, tool_choice)
        if not text.strip():
            raise RecoverableTurnError(prompts.empty_reply(shapes), text, "empty") from None
        raise RecoverableTurnError(prompts.unparsable(problem.detail, shapes), text, "unparsable") from None
    cut_answer_kept = cut_off and keep_cut_answer
    return _assemble(parts, text, tools, tool_choice, cut_off, token_limit, new_id, cut_answer_kept)


def strict_parts(text: str) -> ReplyParts:
    kept, note = cut_at_observation(text)
    tree = _parse_either_ending(_without_trailing_lines(kept))
    parts = ReplyParts(thought=None, actions=[], answer=None, notes=[note] if note else [])
    for node in tree.iter_subtrees_topdown():
        if node.data == "thought":
            parts.thought = _token(node, "THOUGHT")
        elif node.data == "tool_call":
            parts.actions.append(RawAction(_token(node, "TOOL_NAME"), _token(node, "ACTION_INPUT")))
        elif node.data == "final":
            parts.answer = _token(node, "ANSWER")
    return parts


def _without_trailing_lines(text: str) -> str:
    """Trailing blank lines carry no meaning; trailing spaces on the last line belong to it."""
    newline = text.find("\n", len(text.rstrip()))
    return text if newline < 0 else text[:newline]


def _parse_either_ending(body: str) -> Tree:
    """Actions end with a newline and answers without one."""
    failures: list[tuple[int, UnexpectedInput]] = []
    for candidate in (body + "\n", body):
        try:
            return _strict_parser().parse(candidate)
        except UnexpectedInput as error:
            failures.append((len(candidate) if _at_end(error) else error.pos_in_stream or 0, error))
        except LarkError as error:
            raise Unparsable(
                next(iter(str(error).splitlines()), "the reply does not fit the format")
            ) from None
    _, furthest = max(failures, key=lambda failure: failure[0])
    raise Unparsable(_describe(furthest))


@cache
def _strict_parser() -> Lark:
    # LALR with the contextual lexer: each state expects few terminals, so THOUGHT and ANSWER never
    # compete, and parsing is linear (Earley took half a second on a long answer).
    return Lark(render_definitions(template_definitions() | _UNBOUNDED), parser="lalr", start="start")


def _token(node: Tree, name: str) -> str:
    for child in node.children:
        if isinstance(child, Token) and child.type == name:
            return str(child)
    raise Unparsable(f"missing {name.lower()}")


def _at_end(error: UnexpectedInput) -> bool:
    if isinstance(error, UnexpectedToken):
        return error.token.type == "$END"
    return isinstance(error, UnexpectedEOF)


def _describe(error: UnexpectedInput) -> str:
    where = "the end of the reply" if _at_end(error) else f"line {error.line}, column {error.column}"
    if isinstance(error, UnexpectedCharacters):
        expected = error.allowed or set()
    else:
        expected = getattr(error, "expected", set()) or set()
    names = sorted({_readable(name) for name in expected})
    wanted = f"; expected {' or '.join(names)}" if names else ""
    return f"the reply does not fit the format at {where}{wanted}"


_TERMINAL_NAMES = {
    "THOUGHT": "a one-line thought",
    "ANSWER": "the answer text",
    "TOOL_NAME": "a tool name",
    "ACTION_INPUT": "a JSON object on one line",
    "$END": "the end of the reply",
}


def _readable(terminal: str) -> str:
    if terminal in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[terminal]
    try:
        pattern = _strict_parser().get_terminal(terminal).pattern
    except KeyError:
        return terminal
    if pattern.type != "str":
        return terminal
    literal = pattern.value
    if not literal.strip("\n"):
        return "a line break" if literal == "\n" else "a blank line"
    return ("a line break, then " if literal.startswith("\n") else "") + repr(literal.lstrip("\n"))


def _assemble(
    parts: ReplyParts,
    text: str,
    tools: Sequence[ToolSpec],
    tool_choice: ToolChoice,
    cut_off: bool,
    token_limit: int | None,
    new_id: Callable[[], str],
    cut_answer_kept: bool,
) -> ParsedReply:
    tool_names = [tool.name for tool in tools]
    notes = list(parts.notes)
    read = [_request(action, tools, new_id, notes, repair=parts.tolerant) for action in parts.actions]
    requests = [request for request, _ in read]
    whole = bool(read) and read[-1][1] and not any(request.parse_error for request in requests)
    if (
        cut_answer_kept
        and not read
        and parts.labelled
        and (parts.answer or "").strip()
        and not call_required(tool_choice)
    ):
        # A "Final Answer:" the limit cut short is kept, marked as cut: asked again, a greedy model
        # writes the same answer and is cut at the same place.
        answer = Final(content=prompts.cut_answer(parts.answer or "", token_limit), reasoning=parts.thought)
        return ParsedReply(answer, (*notes, "the answer was cut off at the token limit"))
    if cut_off and not (whole and parts.answer is None):
        # Whatever the model wrote last may be cut mid-way: an argument, a tool name.
        raise RecoverableTurnError(prompts.cut_off(token_limit), text, "cut_off")
    shapes = prompts.react_reply_shapes(tool_names, tool_choice)
    if requests:
        if parts.answer is not None:
            notes.append("the reply had both an action and a final answer; the action was kept")
        result = ToolRequests(requests=requests, content=parts.answer or "", reasoning=parts.thought)
        return ParsedReply(result, tuple(notes))
    if parts.answer is None and not parts.labelled:
        raise RecoverableTurnError(prompts.empty_reply(shapes), text, "empty")
    if parts.answer is None or not parts.answer.strip():
        detail = (
            "the reply has no Action and no Final Answer"
            if parts.answer is None
            else "the Final Answer is empty"
        )
        raise RecoverableTurnError(prompts.unparsable(detail, shapes), text, "unparsable")
    if call_required(tool_choice):
        raise RecoverableTurnError(prompts.required_call(tool_choice, shapes), text, "no_required_call")
    return ParsedReply(Final(content=parts.answer, reasoning=parts.thought), tuple(notes))


def _request(
    action: RawAction, tools: Sequence[ToolSpec], new_id: Callable[[], str], notes: list[str], *, repair: bool
) -> tuple[ToolRequest, bool]:
    """The request for one action, and whether it is whole: a cut-off reply is trusted only then."""
    request_id = new_id()
    name = action.name
    tool = next((t for t in tools if t.name == name), None)
    example = prompts.argument_example(tool.parameters) if tool is not None else None
    source = action.inline_argument if action.input_text is None else action.input_text
    if source is None or not source.strip():
        if tool is not None and not tool.parameters.get("required"):
            return ToolRequest(id=request_id, name=name, arguments={}, raw_arguments="{}"), True
        return ToolRequest(id=request_id, name=name, parse_error=prompts.missing_input(name, example)), False
    stripped = source.strip()
    if repair and (lone := _lone_string_parameter(tool)) is not None:
        inside = without_code_fence(stripped)
        if not _JSON_OBJECT_START.search(inside):
            if inside != stripped:
                notes.append(f"took the input of {name} out of a code fence")
            notes.append(f"read the plain text input of {name} as its {lone!r} argument")
            arguments = {lone: _unquoted(inside)}
            return ToolRequest(id=request_id, name=name, arguments=arguments, raw_arguments=stripped), False
    try:
        read = read_json_object(source) if repair else _strict_json(stripped)
    except JsonUnreadable as error:
        invalid = prompts.invalid_json(name, str(error), example)
        return ToolRequest(id=request_id, name=name, raw_arguments=stripped, parse_error=invalid), False
    notes.extend(f"{repair} in the input of {name}" for repair in read.repairs)
    request = ToolRequest(id=request_id, name=name, arguments=read.value, raw_arguments=read.text)
    return request, read.closed


def _strict_json(text: str) -> ReadJson:
    value = load_json(text)
    if not isinstance(value, dict):
        raise JsonUnreadable("the arguments must be a JSON object")
    return ReadJson(value, text)


def _unquoted(text: str) -> str:
    """A bare string without the quotes around it (a double-quoted one is read as a JSON string), or
    without one unbalanced quote at its start or end."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
        with contextlib.suppress(JsonUnreadable):
            value = load_json(text)
            if isinstance(value, str):
                return value
        return text[1:-1]
    if text[:1] in _QUOTES and text.count(text[0]) == 1:
        return text[1:].strip()
    if text[-1:] in _QUOTES and text.count(text[-1]) == 1:
        return text[:-1].strip()
    return text


def _lone_string_parameter(tool: ToolSpec | None) -> str | None:
    """The parameter a bare string fills: the tool's only required one (or only one), when it is a string."""
    if tool is None:
        return None
    properties = tool.parameters.get("properties")
    required = tool.parameters.get("required") or []
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    names = required or list(properties)
    if len(names) != 1 or not isinstance(names[0], str):
        return None
    schema = properties.get(names[0])
    return names[0] if isinstance(schema, dict) and schema.get("type") == "string" else None
