"""Property tests for the text-tag parser: no input makes it fail in any way but RecoverableTurnError,
and a rendered assistant turn parses back to the same turn."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from localagent.core.messages import (
    HISTORY,
    AssistantMessage,
    Final,
    NamedToolChoice,
    ToolChoice,
    ToolRequest,
    ToolRequests,
    assistant_message_for,
)
from localagent.errors import RecoverableTurnError
from localagent.formats.react.parser import ParsedReply, parse_reply
from localagent.formats.react.render import render_reply
from localagent.formats.react.reply import cut_at_observation
from localagent.tools.spec import TOOL_NAME, ToolSpec

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROUND_TRIP = settings(max_examples=200, deadline=None)

TOOLS = [
    ToolSpec(
        name="calculator",
        parameters={
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    ),
    ToolSpec(
        name="search",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    ),
    ToolSpec(name="clock"),
    ToolSpec(name="odd", parameters={"properties": ["x"], "required": "x"}),
]
TOOL_CHOICES: list[ToolChoice] = ["auto", "none", "required", NamedToolChoice(name="search")]
PROBLEMS = {"unparsable", "cut_off", "no_required_call", "empty"}

# --- inputs: garbage, label soup, mutated valid replies, huge inputs ---------------------------------

LABELS = [
    *("Thought: ", "Action: ", "Action Input: ", "Final Answer: ", "Observation: ", "Observation:"),
    *("thought:", "ACTION:", "action input :", "Final answer:", "**Thought:** ", "**Action:**"),
    *("__Action Input__:", "Thought：", "> ## Final Answer: ", "Action:"),
    *("思考：", "动作：", "动作输入：", "最终答案：", "观察："),
]
FRAGMENTS = [
    *("calculator", "search", "clock", "odd", "unknown_tool", "search[login timeout]", "calculator(2+2)"),
    *('{"expression": "2+2"}', '{"query": "x", "limit": 3}', "{'query': 'x',}", "{}", "null", "true"),
    *("{", "}", "[", "]", '"', "'", "```json\n", "```", "\n", "\n\n", " ", "\t", "\r\n", "\x85", "\u2028"),
    *("2+2", "NaN", "1e999", "\\ud800", '{"a": "\\ud800"}', "9" * 5000, "[" * 3000, "Question: next?"),
]
ARGUMENTS = ['{"expression": "2+2"}', '{"query": "x", "limit": 3}', "{'query': 'x',}", "{}", "2+2"]
any_text = st.text(max_size=300)
control_text = st.text(st.characters(max_codepoint=0x9F, exclude_categories=["Cs"]), max_size=200)
label_soup = st.lists(st.sampled_from(LABELS + FRAGMENTS) | st.text(max_size=12), max_size=40).map("".join)


@st.composite
def valid_replies(draw: st.DrawFn) -> str:
    thought = draw(st.text(st.characters(exclude_characters="\n"), min_size=1, max_size=40))
    if draw(st.booleans()):
        return f"Thought: {thought}\nFinal Answer: {draw(st.text(min_size=1, max_size=80))}\n\n"
    names = st.sampled_from([tool.name for tool in TOOLS] + ["unknown"])
    actions = draw(st.lists(st.tuples(names, st.sampled_from(ARGUMENTS)), min_size=1, max_size=3))
    return f"Thought: {thought}\n" + "".join(
        f"Action: {name}\nAction Input: {args}\n" for name, args in actions
    )


@st.composite
def mutated_replies(draw: st.DrawFn) -> str:
    text = draw(valid_replies())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["cut", "insert", "delete", "duplicate"]))
        if kind == "cut":
            text = text[:at]
        elif kind == "insert":
            text = text[:at] + draw(st.sampled_from(LABELS + FRAGMENTS) | st.text(max_size=8)) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 10)) :]
        else:
            text = text[:at] + text[at:] + text[at:]
    return text


REPEATED = ["x", " ", "Thought: x\n", 'Action: search\nAction Input: {"q": 1}\n', "Final Answer: y\n"]
huge_inputs = st.builds(
    lambda piece, size: piece * (size // len(piece) + 1),
    st.sampled_from(LABELS + FRAGMENTS + REPEATED),
    st.integers(10_000, 200_000),
)
replies = any_text | control_text | label_soup | valid_replies() | mutated_replies() | huge_inputs


def is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def numbered_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"call_{next(counter)}"


def check_result(parsed: ParsedReply, text: str, tool_choice: ToolChoice, cut_off: bool) -> None:
    result = parsed.result
    assert isinstance(result, Final | ToolRequests)
    assert all(isinstance(note, str) and note for note in parsed.notes)
    if is_unicode(text):  # a decoded model reply always is; then a transcript can hold the result
        HISTORY.dump_json([assistant_message_for(result)])
    if isinstance(result, Final):
        assert result.content.strip()
        assert result.content.endswith("[The answer was cut off at the 128-token limit.]") == cut_off
        assert tool_choice in ("auto", "none")
        return
    assert result.requests
    assert len({request.id for request in result.requests}) == len(result.requests)
    for request in result.requests:
        assert request.name
        assert (request.arguments is None) == (request.parse_error is not None)
        if request.arguments is not None:
            assert all(isinstance(key, str) for key in request.arguments)
            json.dumps(request.arguments)
        else:
            assert request.parse_error is not None
            assert request.parse_error.startswith(
                (
                    f"Invalid JSON arguments for tool {request.name}: ",
                    f"Action Input is missing after 'Action: {request.name}'",
                )
            )
            assert not cut_off


@FUZZ
@given(
    text=replies,
    tolerant=st.booleans(),
    cut_off=st.booleans(),
    tool_choice=st.sampled_from(TOOL_CHOICES),
    tools=st.sampled_from([TOOLS, [], TOOLS[:1]]),
)
def test_any_text_gives_a_result_or_a_recoverable_error(
    text: str, tolerant: bool, cut_off: bool, tool_choice: ToolChoice, tools: list[ToolSpec]
) -> None:
    options = {"tolerant": tolerant, "cut_off": cut_off, "token_limit": 128, "new_id": numbered_ids()}
    try:
        parsed = parse_reply(text, tools, tool_choice, **options)
    except RecoverableTurnError as error:
        assert error.problem in PROBLEMS
        assert error.feedback.startswith("Format error: ")
        assert ("cut off" in error.feedback) == (error.problem == "cut_off")
        assert error.raw == text
        return
    check_result(parsed, text, tool_choice, cut_off)


# --- round trip: render_reply, then the strict parse, gives back the same turn ------------------------

OBSERVATION_LINE = re.compile(r"(^|\n)[ \t]*Observation\s*:", re.IGNORECASE)
one_line = st.text(st.characters(exclude_characters="\n", exclude_categories=["Cs"]), min_size=1, max_size=60)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    json_scalars | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=5)


@st.composite
def tool_requests(draw: st.DrawFn) -> ToolRequest:
    arguments = draw(json_objects)
    raw = draw(st.sampled_from(["", json.dumps(arguments), json.dumps(arguments, indent=2)]))
    name = draw(st.from_regex(TOOL_NAME, fullmatch=True))
    return ToolRequest(id="x", name=name, arguments=arguments, raw_arguments=raw)


@st.composite
def answers(draw: st.DrawFn) -> str:
    """One line, or several; chat-prompt grammars let paragraphs be separated by a blank line."""
    lines = draw(st.lists(one_line, min_size=1, max_size=5))
    separators = draw(st.lists(st.sampled_from(["\n", "\n\n"]), min_size=len(lines)))
    text = lines[0] + "".join(sep + line for sep, line in zip(separators, lines[1:], strict=False))
    assume(not OBSERVATION_LINE.search(text))  # a line starting "Observation:" is always cut
    assume(not re.fullmatch(r"\s*", lines[-1]))  # a blank last line is trailing whitespace
    return text


@st.composite
def assistant_messages(draw: st.DrawFn) -> AssistantMessage:
    thought = draw(one_line)
    if draw(st.booleans()):
        return AssistantMessage(content=draw(answers()), reasoning=thought)
    requests = draw(st.lists(tool_requests(), min_size=1, max_size=10))
    return AssistantMessage(reasoning=thought, tool_requests=requests)


def assert_same_turn(parsed: ParsedReply, message: AssistantMessage) -> None:
    result = parsed.result
    assert result.reasoning == message.reasoning
    if message.tool_requests:
        assert isinstance(result, ToolRequests)
        assert [(r.name, r.arguments) for r in result.requests] == [
            (r.name, r.arguments) for r in message.tool_requests
        ]
        assert all(r.parse_error is None for r in result.requests)
    else:
        assert isinstance(result, Final)
        assert result.content == message.content


@ROUND_TRIP
@given(message=assistant_messages())
def test_rendered_reply_parses_back_to_the_same_turn(message: AssistantMessage) -> None:
    text = render_reply(message)
    parsed = parse_reply(text, tolerant=False, new_id=numbered_ids())
    assert_same_turn(parsed, message)
    assert parsed.notes == ()
    # Rendering the parsed turn writes the same text again: the prompt stays append-only.
    assert render_reply(assistant_message_for(parsed.result)) == text


# Text without labels, colons or extra whitespace, which tolerant mode reads as written.
word = st.text(st.sampled_from("abcxyzABC0123456789éß中文🚀.,!?'-()"), min_size=1, max_size=8)
words = st.lists(word, min_size=1, max_size=6).map(" ".join)


@ROUND_TRIP
@given(
    thought=words,
    content=st.lists(words, min_size=1, max_size=3).map("\n".join),
    requests=st.lists(tool_requests(), max_size=4),
)
def test_tolerant_mode_reads_the_strict_format_the_same_way(
    thought: str, content: str, requests: list[ToolRequest]
) -> None:
    message = AssistantMessage(content="" if requests else content, reasoning=thought, tool_requests=requests)
    text = render_reply(message)
    assume(cut_at_observation(text)[1] is None)
    strict = parse_reply(text, tolerant=False, new_id=numbered_ids())
    loose = parse_reply(text, tolerant=True, new_id=numbered_ids())
    assert_same_turn(strict, message)
    assert_same_turn(loose, message)
    assert loose.notes == ()


def test_round_trip_examples() -> None:
    """A few fixed cases the properties could miss: trailing spaces, escapes, many actions."""
    messages: list[AssistantMessage] = [
        AssistantMessage(content="42 ", reasoning=" spaced thought "),
        AssistantMessage(content="a\r\nb", reasoning="t"),
        AssistantMessage(content="First.\n\nSecond.", reasoning="t"),
        AssistantMessage(content="Action: not really\nFinal Answer: still it", reasoning="Thought: x"),
        AssistantMessage(
            reasoning="t",
            tool_requests=[
                ToolRequest(id="1", name="w", arguments={"s": "line1\nline2", "q": 'a "b" }'}),
                ToolRequest(id="2", name="e", arguments={"x": 1}, raw_arguments='{\n  "x": 1\n}'),
            ]
            + [ToolRequest(id=str(n), name=f"t{n}", arguments={"n": n}) for n in range(9)],
        ),
    ]
    for message in messages:
        assert_same_turn(parse_reply(render_reply(message), new_id=numbered_ids()), message)
