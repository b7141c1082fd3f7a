"""The server's pieces without a model: reading requests back into localagent's messages, building
completions and chunks, stop strings, and errors in OpenAI's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import ValidationError
from sample_specs import CALCULATOR

from localagent.backends.openai_chat import to_openai_messages
from localagent.backends.openai_stream import StreamedReply
from localagent.core.events import ContentDelta, ReasoningDelta
from localagent.core.messages import (
    AssistantMessage,
    Final,
    Message,
    SystemMessage,
    ToolMessage,
    ToolRequest,
    ToolRequests,
    Usage,
    UserMessage,
)
from localagent.errors import RecoverableTurnError
from localagent.formats.call_stream import ArgumentsDelta, CallStarted
from localagent.formats.react.format import ReactFormat
from localagent.serve.chat_input import read_messages, turn_input
from localagent.serve.chat_reply import ChatReply, ReplyHeader
from localagent.serve.chat_request import ChatRequest
from localagent.serve.errors import RequestError, from_validation
from localagent.serve.reply_memory import ReplyMemory
from localagent.serve.responding import event_data
from localagent.serve.stop_strings import StopStrings
from localagent.tools.loading import builtin_names, select_tools
from localagent.tools.workspace import Workspace

HEADER = ReplyHeader("chatcmpl-test", 1_700_000_000, "tiny")
USAGE = Usage(prompt_tokens=120, completion_tokens=30, cached_prompt_tokens=100)
HISTORY: list[Message] = [
    SystemMessage(content="You are careful."),
    UserMessage(content="How many lines does notes.txt have?"),
    AssistantMessage(
        reasoning="I should read it.",
        tool_requests=[
            ToolRequest(
                id="call_a",
                name="read_file",
                arguments={"path": "notes.txt"},
                raw_arguments='{"path": "notes.txt"}',
            ),
            ToolRequest(id="call_b", name="list_dir", arguments={}, raw_arguments="{}"),
        ],
    ),
    ToolMessage(request_id="call_a", name="read_file", content="1: buy milk\n2: call Ada"),
    ToolMessage(request_id="call_b", name="list_dir", content="notes.txt"),
    AssistantMessage(content="It has 2 lines.", reasoning="Two lines."),
    UserMessage(content="Thanks. And README.md?"),
]


def as_request(messages: list[Message]) -> ChatRequest:
    return ChatRequest.model_validate({"model": "tiny", "messages": to_openai_messages(messages)})


# --- requests back into messages ----------------------------------------------------------------------


def test_reading_a_history_inverts_what_the_chat_backend_sends() -> None:
    read = read_messages(as_request(HISTORY).messages, ReplyMemory())
    # What the API has no place for stays behind: reasoning (servers refuse it in the input).
    sent = [
        m.model_copy(update={"reasoning": None}) if isinstance(m, AssistantMessage) else m for m in HISTORY
    ]
    assert read == sent


def test_the_built_in_tools_come_back_as_the_local_turn_sees_them(tmp_path: Path) -> None:
    # With the messages read back too, the served prompt is the one the local turn renders.
    specs = [tool.spec for tool in select_tools(sorted(builtin_names()), Workspace(tmp_path))]
    body = {"messages": to_openai_messages(HISTORY), "tools": [spec.to_openai() for spec in specs]}
    given = turn_input(ChatRequest.model_validate(json.loads(json.dumps(body))), ReplyMemory())
    assert given.tools == specs and len(specs) > 5


def test_the_servers_own_replies_come_back_as_the_model_wrote_them() -> None:
    memory = ReplyMemory()
    written = [
        m.model_copy(update={"reasoning": f"{m.reasoning}\n"})
        for m in HISTORY
        if isinstance(m, AssistantMessage)
    ]
    for reply in written:
        memory.remember(reply)
    read = read_messages(as_request(HISTORY).messages, memory)
    assert [m for m in read if isinstance(m, AssistantMessage)] == written


def test_a_reply_the_client_changed_is_taken_as_sent() -> None:
    memory = ReplyMemory()
    memory.remember(HISTORY[2])  # type: ignore[arg-type]
    edited = to_openai_messages(HISTORY[:5])
    edited[2]["tool_calls"][0]["function"]["arguments"] = '{"path": "other.txt"}'
    read = read_messages(ChatRequest.model_validate({"messages": edited}).messages, memory)
    assert isinstance(read[2], AssistantMessage)
    assert read[2].reasoning is None
    assert read[2].tool_requests[0].raw_arguments == '{"path": "other.txt"}'


def test_system_messages_join_at_the_start_and_text_parts_join() -> None:
    request = ChatRequest.model_validate(
        {
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
                },
                {"role": "system", "content": "Answer in English."},
            ]
        }
    )
    assert read_messages(request.messages, ReplyMemory()) == [
        SystemMessage(content="Be brief.\n\nAnswer in English."),
        UserMessage(content="one\ntwo"),
    ]


def test_a_tool_result_must_answer_an_earlier_call() -> None:
    request = ChatRequest.model_validate(
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "call_x", "content": "42"},
            ]
        }
    )
    with pytest.raises(RequestError, match="call_x") as caught:
        read_messages(request.messages, ReplyMemory())
    assert caught.value.param == "messages[1].tool_call_id"


def test_non_text_content_is_refused_with_a_reason() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    request = ChatRequest.model_validate({"messages": [{"role": "user", "content": [image]}]})
    with pytest.raises(RequestError, match="reads text only") as caught:
        read_messages(request.messages, ReplyMemory())
    assert caught.value.param == "messages[0].content[0]"


# --- calls a client wrote into its history as text ----------------------------------------------------

SMOLAGENTS_CALL = (
    "Calling tools:\n[{'id': 'call_7', 'type': 'function', 'function': {'name': 'calculator', "
    "'arguments': {'expression': '6 * 7'}}}]"
)
CALL_7 = ToolRequest(
    id="call_7", name="calculator", arguments={"expression": "6 * 7"}, raw_arguments='{"expression": "6 * 7"}'
)


def history_with(call_text: str, result: str) -> list[Message]:
    request = ChatRequest.model_validate(
        {
            "messages": [
                {"role": "system", "content": "You solve tasks with tools."},
                {"role": "user", "content": "What is 6 times 7?"},
                {"role": "assistant", "content": [{"type": "text", "text": call_text}]},
                {"role": "user", "content": [{"type": "text", "text": result}]},
            ],
            "tools": [CALCULATOR.to_openai()],
        }
    )
    return read_messages(request.messages, ReplyMemory())


@pytest.mark.parametrize(
    ("call_text", "call_id"),
    [
        (SMOLAGENTS_CALL, "call_7"),
        (f"I will calculate.\n{SMOLAGENTS_CALL}", "call_7"),
        (
            '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n</tool_call>',
            "call_text_2_0",
        ),
    ],
    ids=["smolagents", "smolagents after its thought", "tool_call tags"],
)
def test_a_call_written_as_text_is_a_call_and_the_next_user_message_its_result(
    call_text: str, call_id: str
) -> None:
    read = history_with(call_text, "Observation:\n42")
    call = CALL_7.model_copy(update={"id": call_id})
    content = "I will calculate." if call_text.startswith("I will") else ""
    assert read[2:] == [
        AssistantMessage(content=content, tool_requests=[call]),
        ToolMessage(request_id=call_id, name="calculator", content="42"),
    ]
    prompt = ReactFormat(agent_instructions=False).render(read, [CALCULATOR]).text
    assert 'Action: calculator\nAction Input: {"expression": "6 * 7"}\nObservation: 42\n' in prompt
    assert "Final Answer" not in prompt.split("Question: What is 6 times 7?")[1]


def test_an_error_written_after_a_text_call_is_its_result() -> None:
    read = history_with(SMOLAGENTS_CALL, "Call id: call_7\nError:\nDivision by zero.\nNow let's retry.")
    assert read[3] == ToolMessage(
        request_id="call_7", name="calculator", content="Error:\nDivision by zero.\nNow let's retry."
    )


def test_text_that_only_mentions_calls_stays_text() -> None:
    for text in ("Calling tools:\n[not a list", "Calling tools: later", "<tool_call>{oops}</tool_call>"):
        read = history_with(text, "Observation:\n42")
        assert read[2:] == [AssistantMessage(content=text), UserMessage(content="Observation:\n42")]


def test_the_servers_own_call_sent_back_as_text_comes_back_as_the_model_wrote_it() -> None:
    memory = ReplyMemory()
    written = AssistantMessage(
        reasoning="I multiply.",
        tool_requests=[CALL_7.model_copy(update={"raw_arguments": '{"expression":"6 * 7"}'})],
    )
    memory.remember(written)
    request = ChatRequest.model_validate(
        {
            "messages": [
                {"role": "user", "content": "6 times 7?"},
                {"role": "assistant", "content": SMOLAGENTS_CALL},
            ]
        }
    )
    assert read_messages(request.messages, memory)[1] == written


@pytest.mark.parametrize(
    ("body", "message", "param"),
    [
        (
            {"messages": [{"role": "user", "content": "x"}], "top_k": 5},
            "Unrecognized request argument supplied: top_k",
            "top_k",
        ),
        ({}, "Missing required parameter: 'messages'.", "messages"),
        (
            {"messages": [{"role": "user", "content": "x", "colour": 1}]},
            "Unrecognized field",
            "messages[0].colour",
        ),
        ({"messages": [], "model": "x"}, "Invalid value for 'messages'", "messages"),
        (
            {"messages": [{"role": "user", "content": "x"}], "temperature": 3},
            "Invalid value for 'temperature'",
            "temperature",
        ),
        (
            {"messages": [{"role": "user", "content": 5}]},
            "Invalid value for 'messages[0].content'",
            "messages[0].content",
        ),
        (
            {"messages": [{"role": "robot", "content": "x"}]},
            "Invalid value for 'messages[0]': Input tag 'robot'",
            "messages[0]",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}], "tool_choice": "any"},
            "Invalid value for 'tool_choice'",
            "tool_choice",
        ),
    ],
)
def test_validation_errors_read_like_openais(body: dict[str, Any], message: str, param: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ChatRequest.model_validate(body)
    error = from_validation(caught.value)
    assert error.message.startswith(message)
    assert error.param == param
    assert error.body()["error"]["type"] == "invalid_request_error"


# --- completions and chunks -----------------------------------------------------------------------------


def streamed_and_whole(
    feed: Any, finish: Any
) -> tuple[StreamedReply, ChatCompletion, list[ChatCompletionChunk]]:
    """The same reply built twice, streamed and not; the chunks read by localagent's own client."""
    chunks: list[dict[str, Any]] = []
    streaming = ChatReply(HEADER, emit=chunks.append, include_usage=True)
    whole = ChatReply(HEADER)
    for reply in (streaming, whole):
        feed(reply)
    assert finish(streaming) is None
    completion = ChatCompletion.model_validate(finish(whole))
    parsed = [ChatCompletionChunk.model_validate(json.loads(json.dumps(chunk))) for chunk in chunks]
    added = StreamedReply()
    for chunk in parsed:
        added.add(chunk)
    return added, completion, parsed


def test_a_streamed_call_adds_up_to_the_whole_completion() -> None:
    def feed(reply: ChatReply) -> None:
        reply.on_event(ReasoningDelta(text="I should "))
        reply.on_event(ReasoningDelta(text="read it."))
        reply.on_call(CallStarted(0, "read_file"))
        for piece in ('{"pa', 'th": ', '"notes.txt"}'):
            reply.on_call(ArgumentsDelta(0, piece))

    parsed = ToolRequests(
        requests=[
            ToolRequest(
                id="call_parser",
                name="read_file",
                arguments={"path": "notes.txt"},
                raw_arguments='{"path": "notes.txt"}',
            )
        ],
        reasoning="I should read it.\n",
    )
    added, completion, chunks = streamed_and_whole(feed, lambda reply: reply.finish(parsed, USAGE))
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls" == added.finish_reason
    assert message.content is None and message.model_extra == {"reasoning_content": "I should read it."}
    (call,) = message.tool_calls or []
    assert call.function.name == "read_file" and call.function.arguments == '{"path": "notes.txt"}'
    assert call.id != "call_parser", "the id is the one the first delta carried"
    (streamed,) = added.requests()
    assert (streamed.name, streamed.raw_arguments) == ("read_file", call.function.arguments)
    assert streamed.id != "call_parser", "the id is the one the first delta carried"
    assert added.reasoning == "I should read it."
    assert added.usage == USAGE and completion.usage is not None
    assert (
        completion.usage.prompt_tokens_details and completion.usage.prompt_tokens_details.cached_tokens == 100
    )
    argument_chunks = [c for c in chunks if c.choices and (c.choices[0].delta.tool_calls or [None])[0]]
    assert len(argument_chunks) == 4, "the id and name first, then each piece of the arguments as it came"
    assert chunks[0].choices[0].delta.role == "assistant"


def test_a_call_the_reader_missed_is_sent_whole_at_the_end() -> None:
    parsed = ToolRequests(
        requests=[ToolRequest(id="call_late", name="list_dir", arguments={}, raw_arguments="{}")],
        reasoning=None,
    )
    added, completion, _ = streamed_and_whole(lambda reply: None, lambda reply: reply.finish(parsed, USAGE))
    assert [(r.id, r.name, r.raw_arguments) for r in added.requests()] == [("call_late", "list_dir", "{}")]
    assert (completion.choices[0].message.tool_calls or [])[0].id == "call_late"


def test_an_answer_streams_as_content_and_stops_at_a_stop_string() -> None:
    chunks: list[dict[str, Any]] = []
    stopped: list[bool] = []
    reply = ChatReply(HEADER, stops=("STOP",), emit=chunks.append, on_stop=lambda: stopped.append(True))
    for piece in ("The answer ", "is 42. S", "TOP and more"):
        reply.on_event(ContentDelta(text=piece))
    assert stopped == [True] and reply.stopped
    assert reply.finish_stopped(USAGE) is None
    added = StreamedReply()
    for chunk in chunks:
        added.add(ChatCompletionChunk.model_validate(chunk))
    assert (added.content, added.finish_reason) == ("The answer is 42. ", "stop")


def test_a_cut_off_call_ends_with_length_and_what_was_written() -> None:
    def feed(reply: ChatReply) -> None:
        reply.on_event(ReasoningDelta(text="Add them."))
        reply.on_call(CallStarted(0, "calculator"))
        reply.on_call(ArgumentsDelta(0, '{"expression": "1 +'))

    error = RecoverableTurnError(
        "cut off",
        'Thought: Add them.\nAction: calculator\nAction Input: {"expression": "1 +',
        "cut_off",
        USAGE,
    )
    added, completion, _ = streamed_and_whole(feed, lambda reply: reply.finish_unusable(error))
    assert completion.choices[0].finish_reason == "length" == added.finish_reason
    assert (completion.choices[0].message.tool_calls or [])[0].function.arguments == '{"expression": "1 +'
    assert added.calls[0].arguments == '{"expression": "1 +'


def test_an_unreadable_reply_is_the_content() -> None:
    error = RecoverableTurnError("no format", "just some words", "unparsable", USAGE)
    added, completion, _ = streamed_and_whole(lambda reply: None, lambda reply: reply.finish_unusable(error))
    assert completion.choices[0].message.content == "just some words" == added.content
    assert completion.choices[0].finish_reason == "stop"


def test_a_final_answer_is_cut_at_a_stop_string_without_streaming_too() -> None:
    reply = ChatReply(HEADER, stops=("\n\n",))
    completion = reply.finish(Final(content="First paragraph.\n\nSecond."), USAGE)
    assert completion is not None and completion["choices"][0]["message"]["content"] == "First paragraph."


# --- stop strings -----------------------------------------------------------------------------------------


def test_stop_strings_hold_back_what_may_start_one() -> None:
    stops = StopStrings(["</end>", "xyz"])
    assert stops.feed("abc</e") == "abc"
    assert stops.feed("x") == "</e", "'x' may begin 'xyz'"
    assert stops.feed("y") == ""
    assert stops.feed("zq") == ""
    assert stops.hit and stops.text == "abc</e"
    assert stops.flush() == ""


def test_text_without_a_stop_string_is_all_sent_in_the_end() -> None:
    stops = StopStrings(["STOP"])
    assert stops.feed("ends in ST") == "ends in "
    assert stops.flush() == "ST"
    assert not stops.hit


def test_an_event_stays_one_line_for_any_line_splitter() -> None:
    # Hypothesis found a tool named "\x85": str.splitlines() cut the event carrying it in two.
    body = {"name": "x\x85y\u2028z\u2029", "text": "é\nà"}
    data = event_data(body)
    assert data.splitlines() == [data]
    assert json.loads(data) == body
    assert "é" in data  # other characters stay as they are, unescaped
