"""The tool_call reply format: its grammar, checked in llguidance on a Qwen-like vocabulary (where
`<tool_call>` is one user-defined token, as in Qwen2.5's), in llguidance through the GBNF export and
in the python lark parser; and its parser, strict (what the grammar makes the model write) and
tolerant (what models write without one)."""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest_grammar import lark_accepts
from llguidance.gbnf_to_lark import gbnf_to_lark
from sample_specs import CALCULATOR, CLOCK, SEARCH

from localagent.backends.decoding import LlamaSession
from localagent.backends.guidance import Guidance
from localagent.backends.llama_runtime import LoadSettings, load_llama
from localagent.core.events import ContentDelta, Event, ReasoningDelta
from localagent.core.messages import Final, NamedToolChoice, ToolChoice, ToolRequest, ToolRequests
from localagent.errors import RecoverableTurnError
from localagent.formats.base import GrammarBuildError, ParsedReply, ReplyGrammar
from localagent.formats.chat_template import ChatTemplate
from localagent.formats.tool_call.format import ToolCallFormat
from localagent.formats.tool_call.grammar import (
    JSON_FENCE,
    TOOL_CALL_TAGS,
    WRAPPERS,
    ToolCallGrammarOptions,
    Wrapper,
    build_tool_call_grammar,
)
from localagent.formats.tool_call.parser import parse_tool_call_reply, render_calls
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

TOOLS = [CALCULATOR, SEARCH, CLOCK]
CHOICES: dict[str, ToolChoice] = {
    "auto": "auto",
    "none": "none",
    "required": "required",
    "calculator": NamedToolChoice(name="calculator"),
}


def call(name: str, arguments: str, wrapper: Wrapper = TOOL_CALL_TAGS) -> str:
    """One call as the grammar writes it, spelled out here rather than taken from the code under test."""
    return f'{wrapper.open}{{"name": "{name}", "arguments": {arguments}}}{wrapper.close}'


ADD = '{"expression": "2 + 3"}'


# --- the grammar ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    reply: Callable[[Wrapper], str]
    # The tool choices (keys of CHOICES) under which the grammar takes the reply.
    accepted_under: frozenset[str]
    # The fewest calls per reply (max_actions) that allow it.
    min_actions: int = 1


ANSWERING = frozenset({"auto", "none"})
CALLING_CALCULATOR = frozenset({"auto", "required", "calculator"})
CALLING_ANOTHER_TOOL = frozenset({"auto", "required"})
NOWHERE: frozenset[str] = frozenset()


def other_wrapper(wrapper: Wrapper) -> Wrapper:
    return JSON_FENCE if wrapper == TOOL_CALL_TAGS else TOOL_CALL_TAGS


GRAMMAR_CASES = {
    "answer": Case(lambda w: "2 + 3 is 5.", ANSWERING),
    "answer over lines": Case(lambda w: "Two results:\n- five\n\n- six\n", ANSWERING),
    "unicode answer": Case(lambda w: "Die Antwort ist fünf — 5 ✓", ANSWERING),
    "call alone": Case(lambda w: call("calculator", ADD, w), CALLING_CALCULATOR),
    "call, compact JSON": Case(lambda w: call("calculator", '{"expression":"2+3"}', w), CALLING_CALCULATOR),
    "preface and call": Case(lambda w: "I will add them.\n" + call("calculator", ADD, w), CALLING_CALCULATOR),
    "preface, blank line, call": Case(
        lambda w: "Adding.\n\n" + call("calculator", ADD, w), CALLING_CALCULATOR
    ),
    "call with an optional field": Case(
        lambda w: call("search", '{"query": "milk", "limit": 3}', w), CALLING_ANOTHER_TOOL
    ),
    "call without arguments": Case(lambda w: call("clock", "{}", w), CALLING_ANOTHER_TOOL),
    # The tags' user-defined tokens are text to llguidance, inside a JSON string too.
    "call whose argument holds the tags": Case(
        lambda w: call("search", '{"query": "<tool_call> or </tool_call>"}', w), CALLING_ANOTHER_TOOL
    ),
    "three calls": Case(
        lambda w: "\n".join(call("calculator", f'{{"expression": "{n} * 2"}}', w) for n in range(3)),
        CALLING_CALCULATOR,
        min_actions=3,
    ),
    "two tools, preface": Case(
        lambda w: "Both.\n" + call("calculator", ADD, w) + "\n" + call("clock", "{}", w),
        CALLING_ANOTHER_TOOL,
        min_actions=3,
    ),
    # Refused under every choice:
    "empty reply": Case(lambda w: "", NOWHERE),
    "answer with <": Case(lambda w: "Use <b>bold</b> here.", NOWHERE),
    "answer with {": Case(lambda w: "The set {1, 2} has two members.", NOWHERE),
    "answer with a backtick": Case(lambda w: "Run `ls` to see them.", NOWHERE),
    "answer starting with a space": Case(lambda w: " 2 + 3 is 5.", NOWHERE),
    "unknown tool": Case(lambda w: call("weather", '{"city": "Paris"}', w), NOWHERE),
    "missing required field": Case(lambda w: call("calculator", "{}", w), NOWHERE),
    "field of the wrong type": Case(lambda w: call("search", '{"query": "milk", "limit": "3"}', w), NOWHERE),
    "arguments not an object": Case(lambda w: call("calculator", '"2 + 3"', w), NOWHERE),
    "text after the call": Case(lambda w: call("calculator", ADD, w) + "\nDone.", NOWHERE),
    "line break after the call": Case(lambda w: call("calculator", ADD, w) + "\n", NOWHERE),
    "preface of two lines": Case(lambda w: "First.\nSecond.\n" + call("calculator", ADD, w), NOWHERE),
    "preface on the call's line": Case(lambda w: "Adding: " + call("calculator", ADD, w), NOWHERE),
    "four calls": Case(lambda w: "\n".join([call("calculator", ADD, w)] * 4), NOWHERE),
    "call in another wrapper": Case(lambda w: call("calculator", ADD, other_wrapper(w)), NOWHERE),
}


Engine = Callable[[ReplyGrammar, str], bool]


@pytest.fixture(scope="module")
def qwen_vocabulary(tiny_model_qwen: Path) -> tuple[LlamaSession, Guidance]:
    session = LlamaSession(load_llama(tiny_model_qwen, LoadSettings(n_ctx=512)))
    return session, Guidance(session)


@pytest.fixture(scope="module")
def engines(qwen_vocabulary: tuple[LlamaSession, Guidance]) -> dict[str, Engine]:
    """Each engine's verdict on a reply under a ReplyGrammar."""
    session, guidance = qwen_vocabulary

    def llguidance(lark: str, text: str) -> bool:
        # The tokens llama.cpp's tokenizer gives the text: `<tool_call>` is its one token.
        matcher = guidance.compile(lark).fresh()
        return matcher.consume_tokens(session.tokenize(text, bos=False)) and matcher.is_accepting()

    return {
        "llguidance": lambda grammar, text: llguidance(grammar.lark, text),
        "gbnf": lambda grammar, text: llguidance(gbnf_to_lark(grammar.gbnf), text),
        "lark": lambda grammar, text: lark_accepts(grammar.lark, text),
    }


@pytest.mark.parametrize("wrapper_name", list(WRAPPERS))
@pytest.mark.parametrize("max_actions", [1, 3])
@pytest.mark.parametrize("choice_name", list(CHOICES))
def test_the_grammar_takes_exactly_the_replies_the_tool_choice_allows(
    engines: dict[str, Engine], wrapper_name: str, max_actions: int, choice_name: str
) -> None:
    wrapper = WRAPPERS[wrapper_name]
    options = ToolCallGrammarOptions(wrapper, max_actions)
    grammar = build_tool_call_grammar(TOOLS, CHOICES[choice_name], options)
    wrong = []
    for (name, case), (engine, accepts) in itertools.product(GRAMMAR_CASES.items(), engines.items()):
        text = case.reply(wrapper)
        expected = choice_name in case.accepted_under and max_actions >= case.min_actions
        if accepts(grammar, text) != expected:
            wrong.append(f"{engine} {'refused' if expected else 'took'} {name}: {text!r}")
    assert not wrong, "\n".join(wrong)


def test_without_a_preface_a_call_opens_the_reply(engines: dict[str, Engine]) -> None:
    grammar = build_tool_call_grammar(TOOLS, "auto", ToolCallGrammarOptions(preface=False))
    for accepts in engines.values():
        assert accepts(grammar, call("calculator", ADD))
        assert accepts(grammar, "2 + 3 is 5.")
        assert not accepts(grammar, "I will add them.\n" + call("calculator", ADD))


def test_without_tools_the_grammar_takes_only_an_answer(
    engines: dict[str, Engine],
) -> None:
    grammar = build_tool_call_grammar([], "auto")
    assert grammar.tool_names == ()
    for accepts in engines.values():
        assert accepts(grammar, "2 + 3 is 5.")
        assert not accepts(grammar, call("calculator", ADD))


def test_the_grammar_names_the_tools_the_choice_allows() -> None:
    assert build_tool_call_grammar(TOOLS, "auto").tool_names == ("calculator", "search", "clock")
    assert build_tool_call_grammar(TOOLS, "none").tool_names == ()
    assert build_tool_call_grammar(TOOLS, NamedToolChoice(name="search")).tool_names == ("search",)


@pytest.mark.parametrize(
    ("tools", "choice", "options", "message"),
    [
        (TOOLS, NamedToolChoice(name="weather"), None, "tool choice names 'weather', which is not a tool"),
        ([], "required", None, "tool choice 'required' needs at least one tool"),
        (TOOLS, "auto", ToolCallGrammarOptions(max_actions=0), "max_actions must be at least 1"),
    ],
)
def test_a_grammar_that_cannot_be_built_is_a_clear_error(
    tools: list[ToolSpec], choice: ToolChoice, options: ToolCallGrammarOptions | None, message: str
) -> None:
    with pytest.raises(GrammarBuildError, match=message):
        build_tool_call_grammar(tools, choice, options)


def test_the_tool_call_tag_is_written_as_its_one_user_defined_token(
    qwen_vocabulary: tuple[LlamaSession, Guidance],
) -> None:
    """vocabulary.py reads user-defined tokens as text, so the grammar's literal `<tool_call>` is
    the model's single `<tool_call>` token (as Qwen2.5 writes it), not five byte-level pieces."""
    session, guidance = qwen_vocabulary
    [open_tag] = session.tokenize("<tool_call>", bos=False)
    [close_tag] = session.tokenize("</tool_call>", bos=False)
    assert session.piece(open_tag) == b"<tool_call>"
    required = ToolCallGrammarOptions(preface=False)
    # Forced at the start of a required call, fast-forwarded as that one token.
    matcher = guidance.compile(build_tool_call_grammar(TOOLS, "required", required).lark).fresh()
    forced = matcher.compute_ff_tokens()
    assert forced[:2] == session.tokenize("<tool_call>\n", bos=False) == [open_tag, forced[1]]
    # Sampled: the token is allowed where a call may open, and nowhere under tool choice none.
    for choice, allowed in (("auto", True), ("required", True), ("none", False)):
        matcher = guidance.compile(build_tool_call_grammar(TOOLS, choice).lark).fresh()
        assert mask_allows(session, matcher, open_tag) is allowed
    # And a whole reply written with both tokens is taken.
    matcher = guidance.compile(build_tool_call_grammar(TOOLS, "auto").lark).fresh()
    tokens = session.tokenize("Adding.\n" + call("calculator", ADD), bos=False)
    assert tokens.count(open_tag) == tokens.count(close_tag) == 1
    assert matcher.consume_tokens(tokens) and matcher.is_accepting()


def mask_allows(session: LlamaSession, matcher: Any, token: int) -> bool:
    return bool(session.allowed_tokens(matcher)[token])


# --- the parser: strict mode (what the grammar writes) ----------------------------------------------


def numbered_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"call_{next(counter)}"


def parse(
    text: str, choice: ToolChoice = "auto", wrapper: Wrapper = TOOL_CALL_TAGS, **options: Any
) -> ParsedReply:
    options.setdefault("constrained", True)
    return parse_tool_call_reply(text, TOOLS, choice, wrapper, new_id=numbered_ids(), **options)


def tolerant(text: str, choice: ToolChoice = "auto") -> ParsedReply:
    return parse(text, choice, constrained=False)


def failure(text: str, choice: ToolChoice = "auto", **options: Any) -> RecoverableTurnError:
    with pytest.raises(RecoverableTurnError) as caught:
        parse(text, choice, **options)
    assert caught.value.raw == text
    return caught.value


def requests_of(parsed: ParsedReply) -> list[ToolRequest]:
    assert isinstance(parsed.result, ToolRequests)
    return parsed.result.requests


def answer_of(parsed: ParsedReply) -> str:
    assert isinstance(parsed.result, Final)
    return parsed.result.content


ROUND_TRIP_CALLS = [
    [("calculator", '{"expression": "2 + 3"}')],
    [("calculator", '{"expression":"2+3"}')],
    [("clock", "{}")],
    [("search", '{"query": "Ünïcödé \\"quoted\\" {braces} \\\\ </tool_call> ```", "limit": 10}')],
    [("calculator", '{"expression": "1"}'), ("search", '{"query":"a", "limit":2}'), ("clock", "{}")],
]
PREFACES = ["", "I will look that up.\n", "Two steps, then the answer:\n\n", "Ça va — 2 calls.\n"]


@pytest.mark.parametrize("wrapper_name", list(WRAPPERS))
@pytest.mark.parametrize("preface", PREFACES)
@pytest.mark.parametrize("calls", ROUND_TRIP_CALLS)
def test_strict_calls_round_trip_byte_for_byte(
    wrapper_name: str, preface: str, calls: list[tuple[str, str]]
) -> None:
    wrapper = WRAPPERS[wrapper_name]
    written = "\n".join(call(name, arguments, wrapper) for name, arguments in calls)
    parsed = parse(preface + written, wrapper=wrapper)
    requests = requests_of(parsed)
    assert [(r.name, r.raw_arguments) for r in requests] == calls
    assert [r.arguments for r in requests] == [json.loads(arguments) for _, arguments in calls]
    assert all(r.parse_error is None for r in requests)
    assert [r.id for r in requests] == [f"call_{n}" for n in range(1, len(calls) + 1)]
    assert isinstance(parsed.result, ToolRequests)
    assert parsed.result.reasoning == (preface or None)  # kept exactly, its line breaks too
    assert render_calls(requests, wrapper) == written
    assert parsed.notes == ()


@pytest.mark.parametrize("wrapper_name", list(WRAPPERS))
@pytest.mark.parametrize(
    "text", ["2 + 3 is 5.", "Two results:\n- five\n\n- six\n", "No tool call needed: fünf.\n\n"]
)
def test_strict_answer_is_kept_as_written(wrapper_name: str, text: str) -> None:
    assert answer_of(parse(text, "auto", WRAPPERS[wrapper_name])) == text
    assert answer_of(parse(text, "none", WRAPPERS[wrapper_name])) == text


@pytest.mark.parametrize("wrapper_name", list(WRAPPERS))
def test_strict_calls_under_tool_choice_none_are_left_to_the_runner(wrapper_name: str) -> None:
    wrapper = WRAPPERS[wrapper_name]
    parsed = parse(call("calculator", ADD, wrapper), "none", wrapper)
    assert [r.name for r in requests_of(parsed)] == ["calculator"]


CUT_OFF = prompts.cut_off(256)
CUT_OFF_IN_CALL = prompts.cut_off(256, in_call=True)


@pytest.mark.parametrize("wrapper_name", list(WRAPPERS))
@pytest.mark.parametrize(
    ("text", "feedback"),
    [
        ("2 + 3 is", CUT_OFF),
        ("I will add them.\n", CUT_OFF),
        ("", CUT_OFF),
        ("CALL", CUT_OFF_IN_CALL),
        ("I will add them.\nCALL", CUT_OFF_IN_CALL),
        ("COMPLETE\nCALL", CUT_OFF_IN_CALL),
    ],
)
def test_a_reply_cut_off_in_an_answer_or_a_call_is_a_cut_off_error(
    wrapper_name: str, text: str, feedback: str
) -> None:
    wrapper = WRAPPERS[wrapper_name]
    complete = call("calculator", ADD, wrapper)
    text = text.replace("COMPLETE", complete).replace("CALL", complete[: len(wrapper.open) + 30])
    for constrained in (True, False):
        error = failure(text, constrained=constrained, cut_off=True, token_limit=256, wrapper=wrapper)
        assert error.problem == "cut_off"
        assert error.feedback == feedback


@pytest.mark.parametrize("wrapper_name", list(WRAPPERS))
def test_a_reply_cut_off_right_after_a_whole_call_keeps_the_call(wrapper_name: str) -> None:
    wrapper = WRAPPERS[wrapper_name]
    complete = call("calculator", ADD, wrapper)
    for text in (complete, "Adding.\n" + complete, complete + "\n", complete + "\n" + complete):
        parsed = parse(text, wrapper=wrapper, cut_off=True, token_limit=256)
        assert {r.name for r in requests_of(parsed)} == {"calculator"}


def test_a_call_whose_closing_tag_was_cut_off_is_whole() -> None:
    """The grammar forces the closing tag once the JSON closes; the token limit may still cut it."""
    complete = call("calculator", ADD)
    for cut in range(1, len(TOOL_CALL_TAGS.close)):
        parsed = parse(complete[:-cut], cut_off=True, token_limit=256)
        assert [(r.name, r.arguments) for r in requests_of(parsed)] == [
            ("calculator", {"expression": "2 + 3"})
        ]


@pytest.mark.parametrize("choice", ["required", NamedToolChoice(name="search")])
@pytest.mark.parametrize("constrained", [True, False])
def test_an_answer_where_a_call_is_required_is_no_required_call(
    choice: ToolChoice, constrained: bool
) -> None:
    error = failure("2 + 3 is 5.", choice, constrained=constrained)
    assert error.problem == "no_required_call"
    shapes = prompts.tool_call_reply_shapes(["calculator", "search", "clock"], choice)
    assert error.feedback == prompts.required_call(choice, shapes)
    assert error.feedback.startswith("Format error: a tool call is required now, not an answer.")


def test_feedback_shows_the_call_shape_for_the_tool_choice() -> None:
    named = failure("No.", NamedToolChoice(name="search")).feedback
    assert 'Call the tool search. Reply with a tool call:\n<tool_call>\n{"name": "<one of: search>"' in named
    required = failure("No.", "required").feedback
    assert '"<one of: calculator, search, clock>"' in required
    assert required.endswith('"arguments": <the arguments as one JSON object>}\n</tool_call>')


@pytest.mark.parametrize("text", ["", "   \n"])
@pytest.mark.parametrize("constrained", [True, False])
def test_an_empty_reply_is_an_empty_error(text: str, constrained: bool) -> None:
    error = failure(text, constrained=constrained)
    assert error.problem == "empty"
    assert error.feedback.startswith("Format error: the reply is empty. Reply with a tool call:")


# --- the parser: tolerant mode (no grammar) ---------------------------------------------------------

PRETTY_FENCE = """Sure, let me search.
```json
{
  "name": "search",
  "arguments": {
    "query": "milk",
    "limit": 2
  }
}
```"""


@pytest.mark.parametrize(
    ("text", "calls", "reasoning"),
    [
        ('<tool_call>{"name": "calculator", "arguments": {"expression": "1"}}</tool_call>', 1, None),
        ('<tool_call>\n{"name": "calculator", "arguments": {"expression": "1"}}\n</tool_call>\n', 1, None),
        (
            'Let me compute.\n\n<tool_call>\n{"name":"calculator","arguments":{"expression":"1"}}',
            1,
            "Let me compute.",
        ),
        (
            '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "search", "arguments": {"query": "milk", "limit": 2}}\n</tool_call>',
            2,
            None,
        ),
        (PRETTY_FENCE, 1, "Sure, let me search."),
        ('```\n{"name": "clock", "arguments": {}}\n```', 1, None),
        ('{"name": "clock", "arguments": {}}', 1, None),
        ('I will check the time.\n{"name": "clock", "arguments": {}}', 1, "I will check the time."),
        ('  {"name": "search", "parameters": {"query": "milk", "limit": 2}}\n', 1, None),
        (
            '<tool_call>\n{"name": "calculator", "arguments": "{\\"expression\\": \\"1\\"}"}\n</tool_call>',
            1,
            None,
        ),
        ('<tool_call>\n{"name": "clock", "arguments": ""}\n</tool_call>', 1, None),
        ('<tool_call>\n{"name": "clock"}\n</tool_call>', 1, None),
    ],
)
def test_tolerant_reads_the_shapes_models_write(text: str, calls: int, reasoning: str | None) -> None:
    parsed = tolerant(text)
    requests = requests_of(parsed)
    assert len(requests) == calls
    assert all(r.parse_error is None for r in requests)
    expected = {
        "calculator": {"expression": "1"},
        "search": {"query": "milk", "limit": 2},
        "clock": {},
    }
    for request in requests:
        assert request.arguments == expected[request.name]
        assert json.loads(request.raw_arguments or "{}") == request.arguments
    assert isinstance(parsed.result, ToolRequests)
    assert parsed.result.reasoning == reasoning


def test_tolerant_arguments_as_a_json_string_become_the_object_they_hold() -> None:
    text = '<tool_call>\n{"name": "calculator", "arguments": "{\\"expression\\": \\"1\\"}"}\n</tool_call>'
    [request] = requests_of(tolerant(text))
    assert request.arguments == {"expression": "1"}
    assert request.raw_arguments == '{"expression": "1"}'


def test_tolerant_notes_every_liberty_taken() -> None:
    assert tolerant('{"name": "clock", "arguments": {}}').notes == ("read a bare JSON object as a tool call",)
    single_quotes = tolerant("<tool_call>\n{'name': 'clock', 'arguments': {}}\n</tool_call>")
    assert single_quotes.notes and all("in a tool call" in note for note in single_quotes.notes)
    assert tolerant(call("calculator", ADD)).notes == ()


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"arguments": {"expression": "1"}}\n</tool_call>',
        '<tool_call>\n{"name": "", "arguments": {}}\n</tool_call>',
        '<tool_call>\n{"name": null, "arguments": {}}\n</tool_call>',
        '{"name": 3, "arguments": {}}',
    ],
)
def test_tolerant_a_call_without_a_name_is_that_requests_error(text: str) -> None:
    [request] = requests_of(tolerant(text))
    assert request.name == ""
    assert request.parse_error == prompts.NO_FUNCTION_NAME


def test_tolerant_an_object_left_open_is_closed_when_nothing_is_lost() -> None:
    text = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1"}\n</tool_call>'
    [request] = requests_of(tolerant(text))
    assert (request.name, request.arguments, request.parse_error) == ("calculator", {"expression": "1"}, None)


@pytest.mark.parametrize(
    ("text", "tool"),
    [
        ('<tool_call>\n{"name": "calculator", "arguments": {"expression": 1+}}\n</tool_call>', "calculator"),
        ('<tool_call>\n{"name": "search", "arguments": "query=milk"}\n</tool_call>', "search"),
        ('<tool_call>\n{"name": "search", "arguments": ["milk"]}\n</tool_call>', "search"),
    ],
)
def test_tolerant_broken_json_is_that_requests_error(text: str, tool: str) -> None:
    [request] = requests_of(tolerant(text))
    assert request.name == tool
    assert request.arguments is None
    assert request.parse_error is not None
    assert request.parse_error.startswith(f"Invalid JSON arguments for tool {tool}: ")
    assert request.parse_error.endswith(". Write the arguments as one JSON object")


def test_tolerant_broken_json_in_one_call_leaves_the_other_intact() -> None:
    text = (
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": }}\n</tool_call>\n'
        '<tool_call>\n{"name": "clock", "arguments": {}}\n</tool_call>'
    )
    broken, clock = requests_of(tolerant(text))
    assert broken.parse_error is not None and clock.parse_error is None
    assert clock.arguments == {}


@pytest.mark.parametrize(
    "text",
    [
        "2 + 3 is 5.",
        "Here is the data:\n```json\n[1, 2, 3]\n```",
        'A config:\n```json\n{"verbose": true}\n```',
        "Use <b>bold</b> and {braces} freely.",
    ],
)
def test_tolerant_text_that_holds_no_call_is_the_answer(text: str) -> None:
    assert answer_of(tolerant(text)) == text.strip()


# --- pathological inputs stay fast -------------------------------------------------------------------

PATHOLOGICAL = {
    "blank lines": "\n" * 100_000 + "x",
    "spaced lines": " \n" * 100_000 + "x",
    "a call, then spaced lines": "<tool_call>\n{" + " \n" * 100_000 + "x",
    "a fence, then spaces": "```json\n{" + " " * 100_000 + "x",
    "many tags": "<tool_call>" * 20_000,
    "many fences": "```json\n{" * 20_000,
    "many names": '{"name": ' * 20_000,
    "open braces": "<tool_call>\n" + "{" * 100_000,
    "escaped quotes": '<tool_call>\n{"name": "a", "arguments": {"' + 'a\\"' * 100_000,
}


@pytest.mark.parametrize("constrained", [True, False])
@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_inputs_are_parsed_in_linear_time(name: str, constrained: bool) -> None:
    """A looping model writes whitespace by the thousand; no regex may backtrack over it."""
    started = time.perf_counter()
    with contextlib.suppress(RecoverableTurnError):
        parse(PATHOLOGICAL[name], constrained=constrained)
    assert time.perf_counter() - started < 2.0


# --- what the reply shows while it streams ----------------------------------------------------------


def streamed(text: str, wrapper: Wrapper = TOOL_CALL_TAGS) -> list[tuple[str, str]]:
    """The events a reply's text gives, fed a few characters at a time, as (kind, text)."""
    events: list[Event] = []
    sink = ToolCallFormat(ChatTemplate(""), wrapper=wrapper).display(events.append)
    for index in range(0, len(text), 3):
        sink(text[index : index + 3])
    assert all(isinstance(event, ReasoningDelta | ContentDelta) for event in events)
    return [(event.type, event.text) for event in events]  # type: ignore[attr-defined]


@pytest.mark.parametrize("wrapper_name", list(WRAPPERS))
def test_a_preface_streams_as_reasoning_and_the_call_not_at_all(wrapper_name: str) -> None:
    wrapper = WRAPPERS[wrapper_name]
    for preface in ("I will add them.\n", "I will add them.\n\n"):
        events = streamed(preface + call("calculator", ADD, wrapper), wrapper)
        assert events == [("reasoning_delta", "I will add them.")]
    assert streamed(call("calculator", ADD, wrapper), wrapper) == []


def test_an_answer_streams_as_content_once_it_runs_past_its_first_line() -> None:
    events = streamed("Two results:\n- five\n- six")
    assert {kind for kind, _ in events} == {"content_delta"}
    assert "".join(text for _, text in events) == "Two results:\n- five\n- six"
