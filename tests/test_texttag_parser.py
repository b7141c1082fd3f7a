"""The text-tag reply parser: strict mode (grammar output), tolerant mode (no grammar), and the
feedback a model gets for every reply it must write again."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest
from lark import Lark
from sample_specs import CALCULATOR, CLOCK, SEARCH, WRITE_FILE

from localagent.core.messages import Final, NamedToolChoice, ToolChoice, ToolRequest, ToolRequests
from localagent.errors import RecoverableTurnError
from localagent.formats.loose_json import JsonUnreadable, load_json, read_json_object
from localagent.formats.react.grammar import GrammarOptions, build_grammar
from localagent.formats.react.parser import ParsedReply, parse_reply, strict_parts
from localagent.formats.react.reply import Unparsable, cut_at_observation
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

TOOLS = [CALCULATOR, SEARCH, WRITE_FILE, CLOCK]
NAMES = "calculator, search, write_file, clock"

# The format part of the feedback for each tool choice, written out in full once.
BOTH_SHAPES = (
    "Reply exactly like this:\n"
    "Thought: <one line: what you will do>\n"
    f"Action: <one of: {NAMES}>\n"
    "Action Input: <the arguments as one JSON object on one line>\n"
    "or, when you know the answer:\n"
    "Thought: <one line>\n"
    "Final Answer: <your answer>"
)
ACTION_SHAPE = (
    "Reply exactly like this:\n"
    "Thought: <one line: what you will do>\n"
    f"Action: <one of: {NAMES}>\n"
    "Action Input: <the arguments as one JSON object on one line>"
)
ANSWER_SHAPE = "Reply exactly like this:\nThought: <one line>\nFinal Answer: <your answer>"
# How the feedback on an Action Input shows each tool's required arguments.
LIKE_CALCULATOR = ' on one line, like {"expression": "..."}'
LIKE_SEARCH = ' on one line, like {"query": "..."}'
LIKE_WRITE_FILE = ' on one line, like {"path": "...", "content": "..."}'


def numbered_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"call_{next(counter)}"


def parse(text: str, tool_choice: ToolChoice = "auto", **options: Any) -> ParsedReply:
    options.setdefault("new_id", numbered_ids())
    return parse_reply(text, TOOLS, tool_choice, **options)


def tolerant(text: str, tool_choice: ToolChoice = "auto", **options: Any) -> ParsedReply:
    return parse(text, tool_choice, tolerant=True, **options)


def failure(text: str, tool_choice: ToolChoice = "auto", **options: Any) -> RecoverableTurnError:
    with pytest.raises(RecoverableTurnError) as caught:
        parse(text, tool_choice, **options)
    assert caught.value.raw == text
    return caught.value


def requests(parsed: ParsedReply) -> list[ToolRequest]:
    assert isinstance(parsed.result, ToolRequests)
    return parsed.result.requests


def calls(parsed: ParsedReply) -> list[tuple[str, dict[str, Any] | None]]:
    return [(request.name, request.arguments) for request in requests(parsed)]


def answer(parsed: ParsedReply) -> str:
    assert isinstance(parsed.result, Final)
    return parsed.result.content


# --- strict mode: output written under the grammar -------------------------------------------------


def test_strict_action_becomes_a_tool_request() -> None:
    text = 'Thought: I should multiply.\nAction: calculator\nAction Input: {"expression": "12 * 7"}\n'
    parsed = parse(text)
    assert parsed.result == ToolRequests(
        requests=[
            ToolRequest(
                id="call_1",
                name="calculator",
                arguments={"expression": "12 * 7"},
                raw_arguments='{"expression": "12 * 7"}',
            )
        ],
        reasoning="I should multiply.",
    )
    assert parsed.notes == ()


def test_strict_final_answer() -> None:
    parsed = parse("Thought: I know the final answer.\nFinal Answer: 12 times 7 is 84.\n\n")
    assert parsed.result == Final(content="12 times 7 is 84.", reasoning="I know the final answer.")


def test_strict_final_answer_over_several_lines_keeps_them() -> None:
    text = "Thought: Listing them.\nFinal Answer: Three files:\n- a.txt\n- b.txt\n- c.txt"
    assert answer(parse(text)) == "Three files:\n- a.txt\n- b.txt\n- c.txt"


def test_strict_keeps_unicode_in_thought_answer_and_arguments() -> None:
    text = 'Thought: 先查一下 ✓\nAction: search\nAction Input: {"query": "Zürich 天气 🌦"}\n'
    parsed = parse(text)
    assert parsed.result.reasoning == "先查一下 ✓"
    assert calls(parsed) == [("search", {"query": "Zürich 天气 🌦"})]
    assert answer(parse("Thought: 完成\nFinal Answer: 答案是 42 🎉")) == "答案是 42 🎉"


def test_strict_two_actions_in_one_reply() -> None:
    text = (
        "Thought: I need both.\n"
        'Action: search\nAction Input: {"query": "budget", "limit": 2}\n'
        'Action: calculator\nAction Input: {"expression": "3 * 4"}\n'
    )
    parsed = parse(text)
    assert calls(parsed) == [
        ("search", {"query": "budget", "limit": 2}),
        ("calculator", {"expression": "3 * 4"}),
    ]
    assert [request.id for request in requests(parsed)] == ["call_1", "call_2"]


def test_strict_accepts_more_actions_than_the_default_cap() -> None:
    # The grammar's cap is a setting (max_actions); the parser must read what any setting allows.
    text = "Thought: Many.\n" + "".join(f'Action: clock\nAction Input: {{"n": {n}}}\n' for n in range(12))
    assert len(requests(parse(text))) == 12


def test_strict_cuts_off_an_observation_the_model_wrote() -> None:
    text = (
        'Thought: Add them.\nAction: calculator\nAction Input: {"expression": "2+2"}\n'
        "Observation: 4\nThought: I know the final answer.\nFinal Answer: 4"
    )
    parsed = parse(text)
    assert calls(parsed) == [("calculator", {"expression": "2+2"})]
    assert parsed.result.content == ""
    assert parsed.notes == ("dropped an Observation the model wrote itself",)


def test_strict_bare_observation_marker_ends_the_actions_without_a_note() -> None:
    # The plain-prompt grammar ends actions with "Observation:", where the runner takes over.
    parsed = parse('Thought: Add.\nAction: calculator\nAction Input: {"expression": "1+1"}\nObservation:')
    assert calls(parsed) == [("calculator", {"expression": "1+1"})]
    assert parsed.notes == ()


def test_strict_final_answer_keeps_trailing_spaces_but_not_trailing_blank_lines() -> None:
    assert answer(parse("Thought: t\nFinal Answer: 42 \n\n")) == "42 "
    assert answer(parse("Thought: t\nFinal Answer: 42\n\n\n")) == "42"


def test_strict_accepts_a_chat_format_answer_with_paragraphs() -> None:
    # Chat-template grammars let the answer hold blank lines; such output must parse.
    text = "Thought: Summing up.\nFinal Answer: First paragraph.\n\nSecond paragraph."
    chat_grammar = build_grammar(TOOLS, "auto", GrammarOptions(prompt_format="chat")).lark
    Lark(chat_grammar, parser="earley", start="start").parse(text)  # the grammar can write it
    assert answer(parse(text)) == "First paragraph.\n\nSecond paragraph."


def test_strict_accepts_arguments_longer_than_the_template_bound() -> None:
    # A 2000-character string of \u escapes is 12000 characters of grammar output.
    value = "\\u00e9" * 2000
    arguments = f'{{"path": "a.txt", "content": "{value}"}}'
    text = f"Thought: Write it.\nAction: write_file\nAction Input: {arguments}\n"
    assert calls(parse(text)) == [("write_file", {"path": "a.txt", "content": "é" * 2000})]


def test_strict_passes_an_unknown_tool_through_for_the_runner_to_answer() -> None:
    parsed = parse('Thought: t\nAction: browse\nAction Input: {"url": "x"}\n')
    assert calls(parsed) == [("browse", {"url": "x"})]


def test_strict_missing_input_for_a_tool_without_parameters_means_no_arguments() -> None:
    assert calls(parse("Thought: t\nAction: clock\nAction Input: {}\n")) == [("clock", {})]


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ('{"expression": 2+2}', "Expecting ',' delimiter at column 17"),
        ('{"expression": "2+2"} }', "Extra data at column 23"),
        ("{'expression': '2+2'}", "Expecting property name enclosed in double quotes at column 2"),
        ('{"expression": "2+2",}', "Expecting property name enclosed in double quotes at column 22"),
        ('{"x": NaN}', "NaN is not a JSON value"),
        ('{"x": -Infinity}', "-Infinity is not a JSON value"),
        ('{"x": ' + "9" * 5000 + "}", "a number is too long"),
        ('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "the JSON is nested too deeply"),
        ('{"x": "\\ud800"}', "a \\u escape is half of a surrogate pair, not a character"),
    ],
)
def test_strict_invalid_json_is_that_requests_parse_error(arguments: str, reason: str) -> None:
    parsed = parse(f"Thought: t\nAction: calculator\nAction Input: {arguments}\n")
    (request,) = requests(parsed)
    assert request.arguments is None
    assert request.raw_arguments == arguments
    assert request.parse_error == (
        f"Invalid JSON arguments for tool calculator: {reason}. "
        f"Write the arguments as one JSON object{LIKE_CALCULATOR}"
    )


def test_strict_invalid_json_in_one_action_leaves_the_other_intact() -> None:
    text = (
        "Thought: t\n"
        'Action: calculator\nAction Input: {"expression": "1+1"}\n'
        'Action: search\nAction Input: {"query": oops}\n'
    )
    first, second = requests(parse(text))
    assert (first.arguments, first.parse_error) == ({"expression": "1+1"}, None)
    assert second.arguments is None
    assert second.parse_error is not None
    assert second.parse_error.startswith("Invalid JSON arguments for tool search: Expecting value")


def test_strict_rejects_the_loose_shapes_with_the_place_and_what_to_write() -> None:
    error = failure("Thought: Add.\nAction: calculator\nAction Input: 2+2")
    assert error.problem == "unparsable"
    assert error.feedback == (
        "Format error: the reply does not fit the format at line 3, column 15; "
        f"expected a JSON object on one line. {BOTH_SHAPES}"
    )


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("The answer is 4.", "at line 1, column 1; expected 'Thought: '"),
        ("Final Answer: 4", "at line 1, column 1; expected 'Thought: '"),
        ("Thought: I know it.", "at the end of the reply; expected 'Action: ' or 'Final Answer: '"),
        ("Thought: t\nAnswer: 4", "at line 2, column 1; expected 'Action: ' or 'Final Answer: '"),
        ("Thought: t\nFinal Answer: ", "at line 2, column 15; expected the answer text"),
        (
            "Thought: t\nAction: calculator 2+2",
            "at line 2, column 19; expected a line break, then 'Action Input: '",
        ),
        ("Thought: t\nAction: clock\nAction Input: {}\nFinal Answer: 4", "at line 4, column 1; expected"),
    ],
)
def test_strict_unparsable_feedback_says_where_and_what(text: str, detail: str) -> None:
    error = failure(text)
    assert error.problem == "unparsable"
    assert error.feedback.startswith(f"Format error: the reply does not fit the format {detail}")
    assert error.feedback.endswith(BOTH_SHAPES)


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_strict_empty_reply(text: str) -> None:
    error = failure(text)
    assert error.problem == "empty"
    assert error.feedback == f"Format error: the reply is empty. {BOTH_SHAPES}"


def test_strict_parts_raises_unparsable_with_the_detail() -> None:
    with pytest.raises(Unparsable) as caught:
        strict_parts("Thought: t")
    assert caught.value.detail == "the reply does not fit the format at the end of the reply; " + (
        "expected 'Action: ' or 'Final Answer: '"
    )


# --- cut off at the token limit ---------------------------------------------------------------------

CUT_OFF_256 = (
    "Format error: your reply was cut off at the 256-token limit before it was complete. "
    "Write a shorter reply: a short tool call with compact arguments, or a short answer."
)


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
@pytest.mark.parametrize(
    "text",
    [
        'Thought: Add.\nAction: calculator\nAction Input: {"expression": "2+',
        "Thought: I am thinking about",
        'Thought: t\nAction: calculator\nAction Input: {"expression": "1"}\nAction: sea',
        'Thought: t\nAction: search\nAction Input: {"query": "1"}\nAction: search\nAction Input: {"qu',
        'Thought: t\nAction: calculator\nAction Input: {"expression": "1"}\nFinal Answer: and so',
        "",
    ],
)
def test_cut_off_reply_gets_its_own_message(text: str, mode: str) -> None:
    error = failure(text, tolerant=mode == "tolerant", cut_off=True, token_limit=256)
    assert error.problem == "cut_off"
    assert error.feedback == CUT_OFF_256


def test_cut_off_message_without_a_known_limit() -> None:
    error = failure("Thought: Done.\nAction: calculator\nAction Input: {", cut_off=True)
    assert error.feedback.startswith("Format error: your reply was cut off at the token limit before")


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_a_final_answer_cut_off_is_kept_as_it_stands_and_marked_as_cut(mode: str) -> None:
    text = "Thought: Done.\nFinal Answer: The tide tables list three steps:\n1. Check the gauge.\n2. Note the"
    parsed = parse(text, tolerant=mode == "tolerant", cut_off=True, token_limit=256)
    assert parsed.result == Final(
        content="The tide tables list three steps:\n1. Check the gauge.\n2. Note the […]\n"
        "[The answer was cut off at the 256-token limit.]",
        reasoning="Done.",
    )
    assert "the answer was cut off at the token limit" in parsed.notes


def test_a_final_answer_cut_off_when_a_call_is_required_is_still_a_cut_off() -> None:
    error = failure("Thought: Done.\nFinal Answer: The", "required", cut_off=True)
    assert error.problem == "cut_off"


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_cut_off_after_a_whole_action_keeps_the_action(mode: str) -> None:
    text = 'Thought: Add.\nAction: calculator\nAction Input: {"expression": "2+2"}\n'
    parsed = parse(text, tolerant=mode == "tolerant", cut_off=True, token_limit=256)
    assert calls(parsed) == [("calculator", {"expression": "2+2"})]


def test_cut_off_in_a_plain_string_input_is_not_trusted() -> None:
    error = failure("Thought: Add.\nAction: calculator\nAction Input: 2+", tolerant=True, cut_off=True)
    assert error.problem == "cut_off"


def test_cut_off_plain_text_is_not_an_answer() -> None:
    assert failure("The answer is", tolerant=True, cut_off=True).problem == "cut_off"


# --- tool choice ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_required_tool_choice_answered_with_a_final_answer(mode: str) -> None:
    error = failure("Thought: I know it.\nFinal Answer: 4", "required", tolerant=mode == "tolerant")
    assert error.problem == "no_required_call"
    assert error.feedback == (
        f"Format error: a tool call is required now, not an answer. Call one of the tools. {ACTION_SHAPE}"
    )


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_named_tool_choice_answered_with_a_final_answer(mode: str) -> None:
    choice = NamedToolChoice(name="search")
    error = failure("Thought: I know it.\nFinal Answer: 4", choice, tolerant=mode == "tolerant")
    assert error.problem == "no_required_call"
    assert error.feedback == (
        "Format error: a tool call is required now, not an answer. Call the tool search. "
        "Reply exactly like this:\n"
        "Thought: <one line: what you will do>\n"
        "Action: <one of: search>\n"
        "Action Input: <the arguments as one JSON object on one line>"
    )


def test_plain_text_under_a_required_choice_is_no_required_call() -> None:
    assert failure("It is 4.", "required", tolerant=True).problem == "no_required_call"


def test_unparsable_feedback_under_tool_choice_none_shows_only_the_answer_shape() -> None:
    error = failure("Thought: t", "none")
    assert error.feedback.endswith(f"expected 'Action: ' or 'Final Answer: '. {ANSWER_SHAPE}")


def test_unparsable_feedback_under_a_required_choice_shows_only_the_action_shape() -> None:
    error = failure("Thought: t", "required", tolerant=True)
    assert error.feedback == f"Format error: the reply has no Action and no Final Answer. {ACTION_SHAPE}"


def test_actions_under_tool_choice_none_are_left_to_the_runner() -> None:
    # The runner answers them with its wrap-up message; the parser reports what was written.
    parsed = parse('Thought: t\nAction: calculator\nAction Input: {"expression": "1"}\n', "none")
    assert calls(parsed) == [("calculator", {"expression": "1"})]


def test_feedback_without_tools_shows_only_the_answer_shape() -> None:
    with pytest.raises(RecoverableTurnError) as caught:
        parse_reply("Thought: t", [], "auto")
    assert caught.value.feedback.endswith(ANSWER_SHAPE)


# --- tolerant mode: output written without a grammar ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected_calls", "reasoning"),
    [
        pytest.param(
            "Thought: I need to add.\nAction: calculator\nAction Input: 2+2",
            [("calculator", {"expression": "2+2"})],
            "I need to add.",
            id="bare-string-input",
        ),
        pytest.param(
            'Thought: I need to add.\nAction: calculator\nAction Input: "2+2"\n',
            [("calculator", {"expression": "2+2"})],
            "I need to add.",
            id="quoted-string-input",
        ),
        pytest.param(
            '**Thought:** I need to add.\n**Action:** calculator\n**Action Input:** {"expression": "2+2"}',
            [("calculator", {"expression": "2+2"})],
            "I need to add.",
            id="markdown-bold-labels",
        ),
        pytest.param(
            '**Thought**: t\n**Action**: `calculator`\n**Action Input**: {"expression": "1"}',
            [("calculator", {"expression": "1"})],
            "t",
            id="bold-label-colon-outside-and-backticked-name",
        ),
        pytest.param(
            'thought: t\nACTION : calculator\naction input:{"expression": "1"}',
            [("calculator", {"expression": "1"})],
            "t",
            id="case-and-spacing",
        ),
        pytest.param(
            'Thought：先算一下\nAction：calculator\nAction Input：{"expression": "6*7"}',
            [("calculator", {"expression": "6*7"})],
            "先算一下",
            id="full-width-colons",
        ),
        pytest.param(
            '思考：我需要计算\n动作：calculator\n动作输入：{"expression": "6*7"}',
            [("calculator", {"expression": "6*7"})],
            "我需要计算",
            id="chinese-labels",
        ),
        pytest.param(
            'Thought: Search.\nAction: search\nAction Input:\n```json\n{"query": "weather", "limit": 3}\n```',
            [("search", {"query": "weather", "limit": 3})],
            "Search.",
            id="json-in-code-fence",
        ),
        pytest.param(
            "Thought: Search.\nAction: search\nAction Input: {'query': 'weather', 'limit': 3}",
            [("search", {"query": "weather", "limit": 3})],
            "Search.",
            id="python-dict",
        ),
        pytest.param(
            "Thought: t\nAction: write_file\nAction Input: {'path': 'a.txt', 'content': \"it's\"}",
            [("write_file", {"path": "a.txt", "content": "it's"})],
            "t",
            id="python-dict-mixed-quotes",
        ),
        pytest.param(
            'Thought: Search.\nAction: search\nAction Input: {"query": "weather", "limit": 3,}',
            [("search", {"query": "weather", "limit": 3})],
            "Search.",
            id="trailing-comma",
        ),
        pytest.param(
            'Thought: Search.\nAction: search\nAction Input: {"query": "weather"} Now I wait for the result.',
            [("search", {"query": "weather"})],
            "Search.",
            id="text-after-json",
        ),
        pytest.param(
            'Thought: Both.\nAction: search\nAction Input: {"query": "a"}\n'
            'Action: calculator\nAction Input: {"expression": "1+1"}',
            [("search", {"query": "a"}), ("calculator", {"expression": "1+1"})],
            "Both.",
            id="two-pairs",
        ),
        pytest.param(
            'Action: calculator\nAction Input: {"expression": "2+2"}\nThought: I will add first.',
            [("calculator", {"expression": "2+2"})],
            "I will add first.",
            id="thought-after-action",
        ),
        pytest.param(
            'I should add these.\nAction: calculator\nAction Input: {"expression": "2+2"}',
            [("calculator", {"expression": "2+2"})],
            "I should add these.",
            id="unlabelled-thought",
        ),
        pytest.param(
            "Thought: Look it up.\nAction: search[login timeout]",
            [("search", {"query": "login timeout"})],
            "Look it up.",
            id="tool-bracket-arg",
        ),
        pytest.param(
            "Thought: t\nAction: calculator(3 * 4)",
            [("calculator", {"expression": "3 * 4"})],
            "t",
            id="tool-paren-arg",
        ),
        pytest.param(
            'Thought: t\nAction: search[{"query": "x", "limit": 1}]',
            [("search", {"query": "x", "limit": 1})],
            "t",
            id="tool-bracket-json",
        ),
        pytest.param(
            'Thought: t\nAction: calculator {"expression": "5"}',
            [("calculator", {"expression": "5"})],
            "t",
            id="json-on-the-action-line",
        ),
        pytest.param(
            "Thought: Look.\nAction: search\nAction Input: {}",
            [("search", {})],
            "Look.",
            id="empty-object-for-a-tool-with-one-string-parameter",
        ),
        pytest.param(
            "Thought: What time is it?\nAction: clock",
            [("clock", {})],
            "What time is it?",
            id="no-input-for-a-tool-without-parameters",
        ),
        pytest.param(
            'Thought: t\r\nAction: calculator\r\nAction Input: {"expression": "1"}\r\n',
            [("calculator", {"expression": "1"})],
            "t",
            id="crlf-line-endings",
        ),
        pytest.param(
            'Thought: first\nAction: calculator\nAction Input: {"expression": "1"}\nThought: second\n'
            'Action: calculator\nAction Input: {"expression": "2"}',
            [("calculator", {"expression": "1"}), ("calculator", {"expression": "2"})],
            "first second",
            id="thought-per-action",
        ),
    ],
)
def test_tolerant_reads_realistic_actions(
    text: str, expected_calls: list[tuple[str, dict[str, Any]]], reasoning: str
) -> None:
    parsed = tolerant(text)
    assert calls(parsed) == expected_calls
    assert all(request.parse_error is None for request in requests(parsed))
    assert parsed.result.reasoning == reasoning


@pytest.mark.parametrize(
    ("text", "content", "reasoning"),
    [
        pytest.param("Thought: I know it.\nFinal Answer: 4", "4", "I know it.", id="canonical"),
        pytest.param("Thought: done\nFinal answer: 4", "4", "done", id="lowercase-answer-label"),
        pytest.param("**Final Answer:** The result is **4**.", "The result is **4**.", None, id="bold-label"),
        pytest.param("FINAL ANSWER: 4", "4", None, id="upper-case"),
        pytest.param("Final_Answer: 4", "4", None, id="underscore"),
        pytest.param("思考: 完成\n最终答案: 四十二", "四十二", "完成", id="chinese"),
        pytest.param("Thought：好\nFinal Answer：是的", "是的", "好", id="full-width-colon"),
        pytest.param(
            "Thought: Listing.\nFinal Answer: The files are:\n- a.txt\n- b.txt\n\nThat is all.",
            "The files are:\n- a.txt\n- b.txt\n\nThat is all.",
            "Listing.",
            id="several-lines",
        ),
        pytest.param(
            "Thought: Ünïcödé ✓\nFinal Answer: Ça coûte 5 € — 🎉",
            "Ça coûte 5 € — 🎉",
            "Ünïcödé ✓",
            id="unicode",
        ),
        pytest.param("The capital is Paris.", "The capital is Paris.", None, id="plain-text"),
        pytest.param("  Paris.\n\nIt is big.\n", "Paris.\n\nIt is big.", None, id="plain-lines"),
        pytest.param("> ## Final Answer: 4", "4", None, id="markdown-quote-heading"),
    ],
)
def test_tolerant_reads_realistic_answers(text: str, content: str, reasoning: str | None) -> None:
    parsed = tolerant(text)
    assert parsed.result == Final(content=content, reasoning=reasoning)


def test_tolerant_notes_every_liberty_taken() -> None:
    text = (
        "Thought: t\nAction: search\nAction Input:\n```json\n{'query': 'a',}\n```\n"
        "Action: calculator\nAction Input: 2+2"
    )
    parsed = tolerant(text)
    assert calls(parsed) == [("search", {"query": "a"}), ("calculator", {"expression": "2+2"})]
    assert parsed.notes == (
        "took the JSON out of a code fence in the input of search",
        "repaired almost-JSON (quotes, commas, comments or Python literals) in the input of search",
        "read the plain text input of calculator as its 'expression' argument",
    )


def test_tolerant_canonical_reply_has_no_notes() -> None:
    parsed = tolerant('Thought: t\nAction: calculator\nAction Input: {"expression": "1"}\n')
    assert parsed.notes == ()
    assert requests(parsed)[0].raw_arguments == '{"expression": "1"}'


def test_tolerant_python_literals_are_read_as_json() -> None:
    for arguments in (
        "{'query': 'x', 'exact': True, 'after': None}",
        "{'query': 'x', 'exact': true, 'after': null}",
    ):
        parsed = tolerant(f"Thought: t\nAction: search\nAction Input: {arguments}")
        assert calls(parsed) == [("search", {"query": "x", "exact": True, "after": None})]


def test_tolerant_bare_string_keeps_json_string_escapes_meaningful() -> None:
    parsed = tolerant('Thought: t\nAction: search\nAction Input: "say \\"hi\\""')
    assert calls(parsed) == [("search", {"query": 'say "hi"'})]
    parsed = tolerant("Thought: t\nAction: search\nAction Input: `grep -n main`")
    assert calls(parsed) == [("search", {"query": "grep -n main"})]


def test_tolerant_bare_string_for_a_tool_with_two_required_strings_is_an_error() -> None:
    (request,) = requests(tolerant("Thought: t\nAction: write_file\nAction Input: notes.txt"))
    assert request.arguments is None
    assert request.parse_error == (
        "Invalid JSON arguments for tool write_file: no JSON object (it must start with '{'). "
        f"Write the arguments as one JSON object{LIKE_WRITE_FILE}"
    )


def test_tolerant_bare_string_for_an_unknown_tool_is_an_error() -> None:
    (request,) = requests(tolerant("Thought: t\nAction: browse\nAction Input: example.com"))
    assert request.parse_error == (
        "Invalid JSON arguments for tool browse: no JSON object (it must start with '{'). "
        "Write the arguments as one JSON object"
    )


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        # json-repair reads these as {"path": 2} and {"path": "it's'"}: a repair that loses text is refused.
        ('{"path": 2+2}', "Expecting ',' delimiter at column 11"),
        ("{'path': 'it's'}", "the JSON object is not closed (a quote or bracket is left open)"),
        ("{'path': 1+2j, 'content': 'x'}", "Expecting property name enclosed in double quotes at column 2"),
        # ... and NaN as the string "NaN", and a key with no value as an empty string.
        ("{'path': NaN, 'content': 'x'}", "Expecting property name enclosed in double quotes at column 2"),
        ('{"path": "a.txt", "content":', "the JSON object is not closed (missing '}')"),
        (
            "{'path': 'a.txt', 'content': '\\ud800'}",
            "a \\u escape is half of a surrogate pair, not a character",
        ),
        ("[1, 2]", "no JSON object (it must start with '{')"),
    ],
)
def test_tolerant_unrepairable_json_is_that_requests_parse_error(arguments: str, reason: str) -> None:
    (request,) = requests(tolerant(f"Thought: t\nAction: write_file\nAction Input: {arguments}"))
    assert request.arguments is None
    assert request.parse_error == (
        f"Invalid JSON arguments for tool write_file: {reason}. "
        f"Write the arguments as one JSON object{LIKE_WRITE_FILE}"
    )


def test_tolerant_missing_input_tells_where_to_write_it() -> None:
    (request,) = requests(tolerant("Thought: Look it up.\nAction: search\n"))
    assert request.arguments is None
    assert request.parse_error == (
        "Action Input is missing after 'Action: search'; "
        'write it on the next line as a JSON object on one line, like {"query": "..."}'
    )


def test_tolerant_input_before_its_action_is_reported_missing() -> None:
    (request,) = requests(tolerant('Action Input: {"expression": "2+2"}\nAction: calculator'))
    assert request.parse_error == prompts.missing_input("calculator", '{"expression": "..."}')


# --- shapes other ReAct projects' parser tests accept (LangChain's MRKL and ReActSingleInput parsers,
# LlamaIndex's ReActOutputParser), read here the same way -------------------------------------------


def test_tolerant_reply_that_starts_by_repeating_the_observation() -> None:
    text = "Observation: I can use the `search` tool to achieve the goal.\nAction: search\nAction Input: bar"
    parsed = tolerant(text)
    assert calls(parsed) == [("search", {"query": "bar"})]
    assert parsed.notes[0] == "ignored an Observation at the start of the reply"


def test_tolerant_repeated_observation_before_a_final_answer() -> None:
    parsed = tolerant("Observation: 4\nThought: I know it now.\nFinal Answer: 2 + 2 is 4")
    assert parsed.result == Final(content="2 + 2 is 4", reasoning="I know it now.")


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("Thought: I have enough information.\nAnswer: 2\n", "2"),
        (
            "Thought: No more tools needed.\nAnswer: Here is the answer:\n\nThis is the second line.\n",
            "Here is the answer:\n\nThis is the second line.",
        ),
    ],
    ids=["one-line", "multiline"],
)
def test_tolerant_llamaindex_answer_label(text: str, content: str) -> None:
    assert answer(tolerant(text)) == content


@pytest.mark.parametrize(
    ("argument", "query"),
    [
        ("what is the temperature in SF?", "what is the temperature in SF?"),
        ("{temperature in SF}", "{temperature in SF}"),
        ("[temperature in {SF}]", "[temperature in {SF}]"),
        ('"what is the temperature in SF?', "what is the temperature in SF?"),
        ('what is the temperature in SF?"', "what is the temperature in SF?"),
        ("\n```\ntemperature in SF\n```", "temperature in SF"),
        ("\n```text\nimport unittest\n\nunittest.main()\n```", "import unittest\n\nunittest.main()"),
    ],
    ids=["plain", "braces", "brackets", "leading-quote", "trailing-quote", "fenced", "fenced-code"],
)
def test_tolerant_text_for_a_tool_whose_one_required_parameter_is_a_string(argument: str, query: str) -> None:
    parsed = tolerant(f"Thought: agent thought here\nAction: search\nAction Input: {argument}")
    assert calls(parsed) == [("search", {"query": query})]
    assert parsed.notes[-1] == "read the plain text input of search as its 'query' argument"


def test_tolerant_json_object_cut_before_its_closing_brace() -> None:
    parsed = tolerant('Thought: t\nAction: search\nAction Input: {"query": "temperature in SF"')
    assert calls(parsed) == [("search", {"query": "temperature in SF"})]
    assert parsed.notes == ("closed the brackets and quotes the model left open in the input of search",)
    # Cut off at the token limit, the same text may be a longer value cut short: it is not trusted.
    error = failure('Thought: t\nAction: search\nAction Input: {"query": "temperature in SF"', cut_off=True)
    assert error.problem == "cut_off"


def test_tolerant_python_dict_with_a_comment_and_trailing_prose() -> None:
    pages = ToolSpec(
        name="tool",
        parameters={
            "type": "object",
            "properties": {"pages": {"type": "array"}, "load_kwargs": {"type": "object"}, "query_str": {}},
        },
    )
    text = (
        "Thought: Gotta use a tool.\nAction: tool\nAction Input: {'pages': ['coffee'] /* comment */, "
        "'load_kwargs': {}, 'query_str': ''}, along those lines.\n"
    )
    parsed = parse_reply(text, [pages], tolerant=True)
    assert calls(parsed) == [("tool", {"pages": ["coffee"], "load_kwargs": {}, "query_str": ""})]
    assert parsed.notes == (
        "ignored the text after the JSON object in the input of tool",
        "repaired almost-JSON (quotes, commas, comments or Python literals) in the input of tool",
    )


def test_tolerant_fenced_json_on_the_lines_after_the_label() -> None:
    text = (
        "Thought: t\nAction: write_file\nAction Input:\n"
        '```json\n{\n  "path": "a.txt",\n  "content": "hi"\n}\n```'
    )
    parsed = tolerant(text)
    assert calls(parsed) == [("write_file", {"path": "a.txt", "content": "hi"})]
    assert parsed.notes == ("took the JSON out of a code fence in the input of write_file",)


@pytest.mark.parametrize(
    ("arguments", "value"),
    [
        ('{"path": "a.txt"', {"path": "a.txt"}),
        ("{path: 'a.txt', content: 'hi'}", {"path": "a.txt", "content": "hi"}),
        ("{path: a.txt, content: hello there}", {"path": "a.txt", "content": "hello there"}),
        ('{"path": [1, 2}', {"path": [1, 2]}),
        ("{'path': {1, 2}}", {"path": [1, 2]}),
        ('{"path": "a.txt" "content": "x"}', {"path": "a.txt", "content": "x"}),
        ("{'path': 'a.txt', // the file\n 'content': 'x'}", {"path": "a.txt", "content": "x"}),
    ],
)
def test_tolerant_repairs_that_lose_nothing_are_kept(arguments: str, value: dict[str, Any]) -> None:
    (request,) = requests(tolerant(f"Thought: t\nAction: write_file\nAction Input: {arguments}"))
    assert (request.arguments, request.parse_error) == (value, None)


def test_tolerant_action_line_without_a_tool_name_is_ignored_with_a_note() -> None:
    parsed = tolerant("Thought: t\nAction: 42\nFinal Answer: done")
    assert answer(parsed) == "done"
    assert parsed.notes == ("ignored an Action line with no tool name: '42'",)


@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_self_written_observation_is_cut_off(mode: str) -> None:
    text = (
        'Thought: Add.\nAction: calculator\nAction Input: {"expression": "2+2"}\n'
        "Observation: 4\nThought: I know the final answer.\nFinal Answer: 4"
    )
    parsed = parse(text, tolerant=mode == "tolerant")
    assert calls(parsed) == [("calculator", {"expression": "2+2"})]
    assert parsed.result.content == ""
    assert parsed.notes == ("dropped an Observation the model wrote itself",)


def test_tolerant_observation_variants_are_cut_off() -> None:
    parsed = tolerant('思考：算\n动作：calculator\n动作输入：{"expression": "1"}\n观察：1\n最终答案：1')
    assert calls(parsed) == [("calculator", {"expression": "1"})]
    assert parsed.notes == ("dropped an Observation the model wrote itself",)
    parsed = tolerant("The answer is 4.\n**Observation:** 4")
    assert answer(parsed) == "The answer is 4."
    assert parsed.notes == ("dropped an Observation the model wrote itself",)


@pytest.mark.parametrize(
    "text",
    [
        'Thought: t\nAction: calculator\nAction Input: {"expression": "2+2"}\nFinal Answer: 4',
        'Thought: t\nFinal Answer: 4\nAction: calculator\nAction Input: {"expression": "2+2"}',
    ],
    ids=["action-first", "answer-first"],
)
def test_action_wins_over_a_final_answer_and_the_answer_is_kept_as_content(text: str) -> None:
    parsed = tolerant(text)
    assert calls(parsed) == [("calculator", {"expression": "2+2"})]
    assert parsed.result.content == "4"
    assert parsed.result.reasoning == "t"
    assert parsed.notes == ("the reply had both an action and a final answer; the action was kept",)


def test_tolerant_thought_without_answer_or_action_tells_what_to_write() -> None:
    # The classic failure: the model never writes "Final Answer:" and the loop would never end.
    error = failure("Thought: I now know the final answer.\nThe answer is 4.", tolerant=True)
    assert error.problem == "unparsable"
    assert error.feedback == f"Format error: the reply has no Action and no Final Answer. {BOTH_SHAPES}"


def test_tolerant_empty_final_answer_is_an_error() -> None:
    error = failure("Thought: done\nFinal Answer:", tolerant=True)
    assert error.problem == "unparsable"
    assert error.feedback == f"Format error: the Final Answer is empty. {BOTH_SHAPES}"


@pytest.mark.parametrize("text", ["", "  \n\t\n", "Observation:"])
def test_tolerant_empty_reply(text: str) -> None:
    error = failure(text, tolerant=True)
    assert error.problem == "empty"
    assert error.feedback == f"Format error: the reply is empty. {BOTH_SHAPES}"


def test_tolerant_reply_of_only_an_observation() -> None:
    error = failure("Observation: the file has 3 lines", tolerant=True)
    assert error.feedback == f"Format error: the reply has no Action and no Final Answer. {BOTH_SHAPES}"


def test_tolerant_tolerates_tool_schemas_of_any_shape() -> None:
    odd = [
        ToolSpec(name="odd", parameters={"type": "object", "properties": ["x"], "required": "x"}),
        ToolSpec(name="odder", parameters={"properties": {"x": "string"}, "required": [1]}),
    ]
    for name in ("odd", "odder"):
        parsed = parse_reply(f"Thought: t\nAction: {name}\nAction Input: hello", odd, tolerant=True)
        (request,) = requests(parsed)
        assert request.parse_error is not None


def test_lone_string_parameter_is_the_only_required_string() -> None:
    read_file = ToolSpec(
        name="read_file",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
            "required": ["path"],
        },
    )
    counter = ToolSpec(name="count", parameters={"type": "object", "properties": {"n": {"type": "integer"}}})
    parsed = parse_reply("Thought: t\nAction: read_file[notes.txt]", [read_file, counter], tolerant=True)
    assert calls(parsed) == [("read_file", {"path": "notes.txt"})]
    parsed = parse_reply("Thought: t\nAction: count[5]", [read_file, counter], tolerant=True)
    assert requests(parsed)[0].parse_error is not None


# --- pathological inputs stay fast -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        " " * 200_000,
        "Thought" + " " * 200_000,
        "**Final Answer" + " \t" * 100_000,
        "Thought: t\nAction: search\nAction Input: {" + ", " * 100_000 + "}",
        "Thought: t\nAction: search\nAction Input: {" + "'a'," * 50_000,
        "Thought: t\nFinal Answer: " + "\n".join(["y" * 2000] * 100),
        "Thought: x\n" * 50_000,
        "Thought: t\nFinal Answer: a" + "\n " * 100_000 + "x",
    ],
    ids=[
        *("spaces", "label-spaces", "bold-label-spaces", "commas", "quotes", "long-answer", "many-thoughts"),
        "blank-lines",
    ],
)
@pytest.mark.parametrize("mode", ["strict", "tolerant"])
def test_pathological_inputs_are_parsed_in_linear_time(text: str, mode: str) -> None:
    started = time.perf_counter()
    with contextlib.suppress(RecoverableTurnError):
        parse(text, tolerant=mode == "tolerant")
    assert time.perf_counter() - started < 2.0


# --- the pieces: JSON repair, Observation cut, feedback ----------------------------------------------

REPAIRED = ("repaired almost-JSON (quotes, commas, comments or Python literals)",)


@pytest.mark.parametrize(
    ("text", "value", "repairs"),
    [
        ('{"a": 1}', {"a": 1}, ()),
        ('```json\n{"a": 1}\n```', {"a": 1}, ("took the JSON out of a code fence",)),
        ('```\n{"a": "```x```"}\n```', {"a": "```x```"}, ("took the JSON out of a code fence",)),
        ('{"code": "```py\\nx = 1\\n```"}', {"code": "```py\nx = 1\n```"}, ()),
        ('{"a": 1} and more', {"a": 1}, ("ignored the text after the JSON object",)),
        ('{"a": [1, 2,], }', {"a": [1, 2]}, REPAIRED),
        ('{"a": ",}"}', {"a": ",}"}, ()),
        ("{'a': 'b'}", {"a": "b"}, REPAIRED),
        ("{'a': \"it's {x}\"}", {"a": "it's {x}"}, REPAIRED),
        ("{'a': '\\d'}", {"a": "\\d"}, REPAIRED),
        ('{"a": "\\ud83d\\ude00"}', {"a": "😀"}, ()),
        ("{'a': '\\ud83d\\ude00'}", {"a": "😀"}, REPAIRED),
        ('{"a": 1', {"a": 1}, ("closed the brackets and quotes the model left open",)),
        ("{'a': 1, /* two */ 'b': 2}", {"a": 1, "b": 2}, REPAIRED),
    ],
)
def test_read_json_object(text: str, value: dict[str, Any], repairs: tuple[str, ...]) -> None:
    read = read_json_object(text)
    assert (read.value, read.repairs) == (value, repairs)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no braces here", "no JSON object (it must start with '{')"),
        ('{"a": 1, "b', "the JSON object is not closed (missing '}')"),
        ("{'a': 1+2j}", "Expecting property name enclosed in double quotes at column 2"),
        ("{'a': 2+2}", "Expecting property name enclosed in double quotes at column 2"),
        ('{"a": "\\ud800"}', "a \\u escape is half of a surrogate pair, not a character"),
        ("{'a': '\\ud800'}", "a \\u escape is half of a surrogate pair, not a character"),
    ],
)
def test_read_json_object_refuses_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(JsonUnreadable) as caught:
        read_json_object(text)
    assert str(caught.value) == reason


def test_load_json_turns_every_failure_into_json_unreadable() -> None:
    assert load_json('{"a": 1e999}') == {"a": float("inf")}
    for text in ("{", "NaN", "1" * 5000, "[" * 100_000):
        with pytest.raises(JsonUnreadable):
            load_json(text)


@pytest.mark.parametrize(
    ("text", "kept", "note"),
    [
        ("Action: a\nObservation: 4\nmore", "Action: a\n", "dropped an Observation the model wrote itself"),
        ("Action: a\nObservation:", "Action: a\n", None),
        ("Action: a\n  observation : x", "Action: a\n", "dropped an Observation the model wrote itself"),
        ("Thought: an Observation: inline", "Thought: an Observation: inline", None),
        ("Observation: x", "", "dropped an Observation the model wrote itself"),
    ],
)
def test_cut_at_observation(text: str, kept: str, note: str | None) -> None:
    assert cut_at_observation(text) == (kept, note)


def test_feedback_texts_say_exactly_what_to_write() -> None:
    assert prompts.missing_input("search") == (
        "Action Input is missing after 'Action: search'; write it on the next line as a JSON object"
    )
    assert prompts.invalid_json("search", "why") == (
        "Invalid JSON arguments for tool search: why. Write the arguments as one JSON object"
    )
    assert prompts.react_reply_shapes(["a", "b"]) == (
        "Reply exactly like this:\n"
        "Thought: <one line: what you will do>\n"
        "Action: <one of: a, b>\n"
        "Action Input: <the arguments as one JSON object on one line>\n"
        "or, when you know the answer:\n"
        "Thought: <one line>\n"
        "Final Answer: <your answer>"
    )
    assert prompts.react_reply_shapes(["a", "b"], "none") == ANSWER_SHAPE
    assert prompts.react_reply_shapes([], "auto") == ANSWER_SHAPE
    assert prompts.react_reply_shapes(["a", "b"], NamedToolChoice(name="b")).endswith(
        "Action: <one of: b>\nAction Input: <the arguments as one JSON object on one line>"
    )
    assert prompts.cut_off(None) == (
        "Format error: your reply was cut off at the token limit before it was complete. "
        "Write a shorter reply: a short tool call with compact arguments, or a short answer."
    )
