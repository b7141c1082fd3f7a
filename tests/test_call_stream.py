"""The formats' incremental call readers: whatever pieces a reply arrives in, they report each call's
name once and its arguments in order, and agree with what the format's parser reads from the whole."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from localagent.core.messages import AssistantMessage, ToolRequest, ToolRequests
from localagent.formats.base import HowWritten
from localagent.formats.call_stream import ArgumentsDelta, CallEvent, CallStarted
from localagent.formats.chat_template import ChatTemplate
from localagent.formats.react.format import ReactFormat
from localagent.formats.react.render import render_reply
from localagent.formats.tool_call.format import ToolCallFormat
from localagent.formats.tool_call.grammar import BARE_JSON, JSON_FENCE, TOOL_CALL_TAGS, Wrapper
from localagent.formats.tool_call.parser import render_calls

NAMES = st.sampled_from(["read_file", "calculator", "search_text", "a.b-c_d"])
JSON_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_TEXT, inner, max_size=3),
    max_leaves=8,
)
# Only the reply matters here: a template that renders nothing in particular.
TEMPLATE = ChatTemplate("{{ messages }}")
ARGUMENTS = st.dictionaries(JSON_TEXT, JSON_VALUES, max_size=4)
THOUGHTS = st.text(
    st.characters(exclude_characters="\n\r", codec="utf-8", exclude_categories=["Cs"]),
    min_size=1,
    max_size=40,
)


def calls_of(reader_for: Any, pieces: list[str]) -> list[tuple[str, str]]:
    """(name, arguments) per call, from the events a reader reported for these pieces."""
    events: list[CallEvent] = []
    feed = reader_for(events.append)
    for piece in pieces:
        feed(piece)
    calls: list[list[str]] = []
    for event in events:
        if isinstance(event, CallStarted):
            assert event.index == len(calls), "calls are numbered from 0 in order"
            calls.append([event.name, ""])
        else:
            assert isinstance(event, ArgumentsDelta) and event.index == len(calls) - 1
            assert event.text, "no empty argument deltas"
            calls[event.index][1] += event.text
    return [(name, arguments) for name, arguments in calls]


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    return [text[start:end] for start, end in zip([0, *points], [*points, len(text)], strict=True)]


def requests_for(calls: list[tuple[str, dict[str, Any]]]) -> list[ToolRequest]:
    return [
        ToolRequest(id=f"call_{index}", name=name, arguments=arguments, raw_arguments=json.dumps(arguments))
        for index, (name, arguments) in enumerate(calls)
    ]


@settings(max_examples=150, deadline=None)
@given(
    thought=THOUGHTS,
    calls=st.lists(st.tuples(NAMES, ARGUMENTS), min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
)
def test_react_reader_agrees_with_the_parser_however_the_reply_is_split(
    thought: str, calls: list[tuple[str, dict[str, Any]]], cuts: list[int]
) -> None:
    reply_format = ReactFormat(max_actions=3)
    text = render_reply(AssistantMessage(reasoning=thought, tool_requests=requests_for(calls)))
    parsed = reply_format.parse(text, [], "auto", HowWritten()).result
    assert isinstance(parsed, ToolRequests)
    expected = [(request.name, request.raw_arguments) for request in parsed.requests]
    assert calls_of(reply_format.calls, split(text, cuts)) == expected
    assert calls_of(reply_format.calls, list(text)) == expected


@settings(max_examples=150, deadline=None)
@given(
    wrapper=st.sampled_from([TOOL_CALL_TAGS, JSON_FENCE, BARE_JSON]),
    preface=st.none() | THOUGHTS.filter(lambda text: not set(text) & set("<{`") and text.strip() == text),
    calls=st.lists(st.tuples(NAMES, ARGUMENTS), min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
)
def test_wrapped_call_reader_agrees_with_the_parser_however_the_reply_is_split(
    wrapper: Wrapper, preface: str | None, calls: list[tuple[str, dict[str, Any]]], cuts: list[int]
) -> None:
    reply_format = ToolCallFormat(TEMPLATE, max_actions=3, wrapper=wrapper)
    text = (f"{preface}\n\n" if preface else "") + render_calls(requests_for(calls), wrapper)
    parsed = reply_format.parse(text, [], "auto", HowWritten()).result
    assert isinstance(parsed, ToolRequests)
    expected = [(request.name, request.raw_arguments) for request in parsed.requests]
    assert calls_of(reply_format.calls, split(text, cuts)) == expected
    assert calls_of(reply_format.calls, list(text)) == expected


def test_arguments_stream_before_the_call_is_complete() -> None:
    events: list[CallEvent] = []
    feed = ReactFormat().calls(events.append)
    for piece in [
        "Thought: read it\nAction: read_file\nAction Input: ",
        '{"pa',
        'th": "no',
        'tes.txt"}',
        "\n",
    ]:
        feed(piece)
    assert events == [
        CallStarted(0, "read_file"),
        ArgumentsDelta(0, '{"pa'),
        ArgumentsDelta(0, 'th": "no'),
        ArgumentsDelta(0, 'tes.txt"}'),
    ]


def test_no_call_is_read_from_an_answer() -> None:
    events: list[CallEvent] = []
    feed = ReactFormat().calls(events.append)
    feed("Thought: easy\nFinal Answer: write\nAction: read_file\nAction Input: {}\n")
    assert events == []
    ToolCallFormat(TEMPLATE).calls(events.append)(
        'The answer mentions <tool_call>\n{"name": "x", "arguments": {}}'
    )
    assert events == []


def test_a_call_cut_off_reports_what_was_written() -> None:
    events: list[CallEvent] = []
    feed = ToolCallFormat(TEMPLATE).calls(events.append)
    feed('<tool_call>\n{"name": "calculator", "arguments": {"expression": "1 +')
    assert events == [CallStarted(0, "calculator"), ArgumentsDelta(0, '{"expression": "1 +')]
