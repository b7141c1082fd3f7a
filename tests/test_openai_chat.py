"""The OpenAI-compatible chat backend against a real local HTTP server replaying recorded streams."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from openai_chunks import MODEL, call_chunks, chunk, text_chunks, usage_chunk, whole_reply
from replay_server import ReplayServer, Reply, load_cases, recorded_events, sse_event

from localagent.backends.arguments import parse_tool_call
from localagent.backends.openai_chat import OpenAIChatTurn, to_openai_messages, to_openai_tool_choice
from localagent.backends.openai_http import SamplingParams
from localagent.backends.scripted import ScriptedTurn
from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import ContentDelta, Delta, Event, ReasoningDelta
from localagent.core.messages import (
    AssistantMessage,
    Final,
    NamedToolChoice,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    ToolRequest,
    ToolRequests,
    Usage,
    UserMessage,
)
from localagent.errors import BackendError, RecoverableTurnError
from localagent.loop.runner import Runner
from localagent.loop.transcript import Transcript, read_messages
from localagent.tools.base import Tool
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

API_KEY = "sk-test-secret-1234"
CASES = load_cases()
WEATHER = ToolSpec(
    name="weather",
    description="Weather for a place.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)
T = TypeVar("T")


# --- helpers ---------------------------------------------------------------------------------------


def make_turn(server: ReplayServer, **options: Any) -> OpenAIChatTurn:
    settings: dict[str, Any] = {"api_key": API_KEY, "timeout": 3.0, "max_retries": 0, **options}
    return OpenAIChatTurn(server.url, MODEL, **settings)


def within(seconds: float, call: Callable[[], T]) -> T:
    """Run `call` in a thread and fail, instead of hanging, if it is not done in `seconds`."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def take_turn(
    turn: OpenAIChatTurn,
    choice: ToolChoice = "auto",
    tools: list[ToolSpec] | None = None,
    cancel: CancelToken | None = None,
    on_delta: Callable[[Delta], None] | None = None,
    seconds: float = 5.0,
) -> Final | ToolRequests:
    history = [SystemMessage(content="You are terse."), UserMessage(content="What is the weather in SF?")]
    tools = [WEATHER] if tools is None else tools
    return within(seconds, lambda: turn(history, tools, choice, cancel or CancelToken(), on_delta))


def wait_until(condition: Callable[[], bool], seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def transcript_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- recorded provider streams -----------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_recorded_stream_gives_the_expected_calls(replay: ReplayServer, case: dict[str, Any]) -> None:
    replay.enqueue_recorded(case)
    turn = make_turn(replay)
    if case["expected_finish_reason"] == "length":
        with pytest.raises(RecoverableTurnError) as caught:
            take_turn(turn)
        assert caught.value.problem == "cut_off"
        assert "cut off at the token limit" in caught.value.feedback
        assert caught.value.raw == '{"'
        return
    result = take_turn(turn)
    assert isinstance(result, ToolRequests)
    expected = case["expected_tool_calls"]
    assert [(r.id, r.name, r.raw_arguments) for r in result.requests] == [
        (call["id"], call["name"], call["arguments"]) for call in expected
    ]
    assert [r.arguments for r in result.requests] == [json.loads(call["arguments"]) for call in expected]
    assert all(r.parse_error is None for r in result.requests)


def test_reasoning_streams_as_its_own_deltas(replay: ReplayServer) -> None:
    replay.enqueue_recorded(next(case for case in CASES if case["id"].startswith("vercel-ai:xai")))
    deltas: list[Delta] = []
    result = take_turn(make_turn(replay), on_delta=deltas.append)
    reasoning = [d.text for d in deltas if isinstance(d, ReasoningDelta)]
    assert len(reasoning) > 50
    assert not [d for d in deltas if isinstance(d, ContentDelta)]
    assert isinstance(result, ToolRequests)
    assert result.reasoning == "".join(reasoning)
    assert result.reasoning.startswith("First, the")


def test_text_before_a_call_is_kept_and_streamed(replay: ReplayServer) -> None:
    replay.enqueue_recorded(next(case for case in CASES if "anthropic" in case["id"]))
    deltas: list[Delta] = []
    result = take_turn(make_turn(replay), on_delta=deltas.append)
    assert [d.text for d in deltas if isinstance(d, ContentDelta)] == ["Reading", " it."]
    assert isinstance(result, ToolRequests)
    assert result.content == "Reading it."


@pytest.mark.parametrize(
    ("case_id", "usage"),
    [
        (
            "vercel-ai:xai-tool-call.chunks.txt",
            Usage(prompt_tokens=307, completion_tokens=26, cached_prompt_tokens=306),
        ),
        # usage in the finish chunk itself, not a chunk of its own
        (
            "vercel-ai:mistral-incremental-tool-call.chunks.txt",
            Usage(prompt_tokens=171, completion_tokens=14, cached_prompt_tokens=128),
        ),
        (
            "vercel-ai:deepseek-tool-call.chunks.txt",
            Usage(prompt_tokens=339, completion_tokens=83, cached_prompt_tokens=320),
        ),
        ("openai-python:test_parse_pydantic_tool", Usage(prompt_tokens=76, completion_tokens=24)),
    ],
)
def test_usage_is_read_from_the_stream(replay: ReplayServer, case_id: str, usage: Usage) -> None:
    replay.enqueue_recorded(next(case for case in CASES if case["id"] == case_id))
    result = take_turn(make_turn(replay))
    assert result.usage == usage
    assert replay.bodies[0]["stream"] is True
    assert replay.bodies[0]["stream_options"] == {"include_usage": True}


def test_text_reply_is_final_with_usage(replay: ReplayServer) -> None:
    replay.enqueue_chunks([*text_chunks("Sunny, 18 C."), usage_chunk(40, 5, cached=32)])
    result = take_turn(make_turn(replay))
    assert result == Final(
        content="Sunny, 18 C.", usage=Usage(prompt_tokens=40, completion_tokens=5, cached_prompt_tokens=32)
    )


# --- tool-call accumulation ------------------------------------------------------------------------------


def without_function_names(events: list[bytes]) -> list[bytes]:
    """Recorded SSE events with every tool call's function name removed, as a server that never sends it."""
    stripped = []
    for event in events:
        data = event.decode().removeprefix("data: ").strip()
        if data == "[DONE]":
            stripped.append(event)
            continue
        chunk_object = json.loads(data)
        for choice in chunk_object.get("choices", []):
            for call in choice.get("delta", {}).get("tool_calls") or []:
                call.get("function", {}).pop("name", None)
        stripped.append(sse_event(chunk_object))
    return stripped


def test_a_streamed_call_whose_name_never_arrives_is_a_parse_error_the_model_sees(
    replay: ReplayServer,
) -> None:
    (case,) = [case for case in CASES if case["id"] == "vercel-ai:mistral-incremental-tool-call.chunks.txt"]
    (expected,) = case["expected_tool_calls"]
    replay.enqueue_events(without_function_names(recorded_events(case)))
    replay.enqueue_chunks(text_chunks("I could not search."))
    turn = make_turn(replay)
    runner = Runner(turn, [Tool.from_function(add)])
    result = within(10, lambda: runner.run([UserMessage(content="What is the weather in Berlin?")]))
    assert (result.status, result.answer) == ("final", "I could not search.")
    nameless = result.messages[1]
    assert isinstance(nameless, AssistantMessage)
    (request,) = nameless.tool_requests
    assert (request.id, request.name, request.arguments) == (expected["id"], "", None)
    assert request.raw_arguments == expected["arguments"]
    assert (
        request.parse_error
        == prompts.NO_FUNCTION_NAME
        == "the call has no function name; name one of the tools"
    )
    # A call without a name would be refused if sent back, so the model reads its result as text.
    sent = replay.bodies[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": ""}
    assert sent[-1] == {
        "role": "user",
        "content": f"Result of the call ({expected['id']}): Tool error: {prompts.NO_FUNCTION_NAME}",
    }


def test_malformed_or_non_object_arguments_become_parse_errors(replay: ReplayServer) -> None:
    replay.enqueue_chunks(
        call_chunks(("c1", "add", '{"a": 1, "b": '), ("c2", "add", "[1, 2]"), ("c3", "add", ""))
    )
    result = take_turn(make_turn(replay))
    assert isinstance(result, ToolRequests)
    broken, listed, empty = result.requests
    assert broken.parse_error is not None
    assert broken.parse_error.startswith("Invalid JSON arguments for tool add: Expecting value")
    assert (broken.arguments, broken.raw_arguments) == (None, '{"a": 1, "b": ')
    assert listed.parse_error == "Invalid JSON arguments for tool add: expected a JSON object, got an array"
    assert (empty.arguments, empty.raw_arguments, empty.parse_error) == ({}, "{}", None)


def test_calls_without_ids_or_sharing_index_zero_stay_apart(replay: ReplayServer) -> None:
    replay.enqueue_chunks(
        [
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "a", "function": {"name": "add", "arguments": '{"a": 1,'}}
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "b": 2}'}}]}),
            # a second call at index 0 with an id of its own, then calls with no id at all
            chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "add", "arguments": "{}"}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"name": "weather", "arguments": "{}"}}]}),
            chunk({"tool_calls": [{"index": 2, "function": {"name": "weather", "arguments": "{}"}}]}),
            chunk(finish_reason="tool_calls"),
        ]
    )
    result = take_turn(make_turn(replay))
    assert isinstance(result, ToolRequests)
    assert [(r.name, r.arguments) for r in result.requests] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {}),
        ("weather", {}),
        ("weather", {}),
    ]
    ids = [r.id for r in result.requests]
    assert ids[:2] == ["a", "b"]
    assert all(i.startswith("call_") for i in ids[2:]) and len(set(ids)) == 4


def test_runner_feeds_a_parse_error_back_and_the_corrected_call_runs(
    replay: ReplayServer, tmp_path: Path
) -> None:
    replay.enqueue_chunks(call_chunks(("call_1", "add", '{"a": 1, "b": ')))
    replay.enqueue_chunks(call_chunks(("call_2", "add", '{"a": 1, "b": 2}')))
    replay.enqueue_chunks(text_chunks("The sum is 3."))
    transcript = Transcript(tmp_path / "run.jsonl")
    runner = Runner(make_turn(replay), [Tool.from_function(add)], transcript=transcript)
    result = within(10, lambda: runner.run([UserMessage(content="Add 1 and 2.")]))
    transcript.close()
    assert (result.status, result.answer) == ("final", "The sum is 3.")
    feedback = replay.bodies[1]["messages"][-1]
    assert feedback["role"] == "tool" and feedback["tool_call_id"] == "call_1"
    assert feedback["content"].startswith("Tool error: Invalid JSON arguments for tool add: ")
    assert replay.bodies[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b": '
    ran = replay.bodies[2]["messages"][-1]
    assert (ran["role"], ran["tool_call_id"]) == ("tool", "call_2")
    assert ran["content"] == "3"
    assert read_messages(tmp_path / "run.jsonl") == result.messages


# --- the request -----------------------------------------------------------------------------------------


def test_messages_convert_and_every_call_gets_its_tool_message() -> None:
    good = ToolRequest(id="c1", name="add", arguments={"a": 1}, raw_arguments='{"a": 1}')
    bad = ToolRequest(
        id="c2", name="add", raw_arguments='{"a":', parse_error="Invalid JSON arguments for tool add: x"
    )
    unanswered = ToolRequest(id="c3", name="add", arguments={}, raw_arguments="")
    history = [
        SystemMessage(content="sys"),
        UserMessage(content="task"),
        AssistantMessage(content="", reasoning="hm", tool_requests=[good, bad]),
        ToolMessage(request_id="c2", name="add", content="Tool error: bad", is_error=True),
        ToolMessage(request_id="c1", name="add", content="1"),
        AssistantMessage(content="oops"),
        UserMessage(content="Write it again.", feedback=True),
        AssistantMessage(content="Let me add.", tool_requests=[unanswered]),
        UserMessage(content="stop"),
        ToolMessage(request_id="zz", name="add", content="late"),
    ]
    assert to_openai_messages(history) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}},
                {"id": "c2", "type": "function", "function": {"name": "add", "arguments": '{"a":'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "Tool error: bad"},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "assistant", "content": "oops"},
        {"role": "user", "content": "Write it again."},
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c3", "content": "Tool error: no result: the call was not run."},
        {"role": "user", "content": "stop"},
        {"role": "user", "content": "Result of add (zz): late"},
    ]


def test_the_request_carries_history_tools_and_model(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("ok"))
    take_turn(make_turn(replay, extra_body={"cache_prompt": True}))
    (request,) = replay.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == MODEL
    assert request.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is the weather in SF?"},
    ]
    assert request.body["tools"] == [WEATHER.to_openai()]
    assert request.body["cache_prompt"] is True


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        (NamedToolChoice(name="weather"), {"type": "function", "function": {"name": "weather"}}),
    ],
)
def test_tool_choice_is_sent_with_the_tools(replay: ReplayServer, choice: ToolChoice, sent: Any) -> None:
    assert to_openai_tool_choice(choice) == sent
    replay.enqueue_chunks(call_chunks(("c1", "weather", '{"location": "SF"}')))
    result = take_turn(make_turn(replay), choice=choice)
    # A call made under `none` comes back as is: the runner's wrap-up rule deals with it.
    assert isinstance(result, ToolRequests)
    (body,) = replay.bodies
    assert body["tool_choice"] == sent
    assert [tool["function"]["name"] for tool in body["tools"]] == ["weather"]


def test_no_tools_means_no_tool_choice(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("hi"))
    take_turn(make_turn(replay), tools=[])
    assert "tools" not in replay.bodies[0] and "tool_choice" not in replay.bodies[0]


def test_tools_rejected_with_none_are_left_out_from_then_on(replay: ReplayServer) -> None:
    replay.enqueue_error(400, "tool_choice 'none' is not supported when tools are given")
    replay.enqueue_chunks(text_chunks("Final answer."))
    replay.enqueue_chunks(text_chunks("Again."))
    replay.enqueue_chunks(text_chunks("Auto."))
    turn = make_turn(replay)
    assert take_turn(turn, choice="none") == Final(content="Final answer.")
    assert take_turn(turn, choice="none") == Final(content="Again.")
    assert take_turn(turn, choice="auto") == Final(content="Auto.")
    first, retried, later, auto = replay.bodies
    assert first["tool_choice"] == "none" and "tools" in first
    assert "tools" not in retried and "tool_choice" not in retried
    assert "tools" not in later
    assert auto["tool_choice"] == "auto" and "tools" in auto


@pytest.mark.parametrize("status", [400, 422])
def test_stream_options_rejected_are_left_out_from_then_on(replay: ReplayServer, status: int) -> None:
    replay.enqueue_error(status, "Unrecognized request argument supplied: stream_options")
    replay.enqueue_chunks(text_chunks("one"))
    replay.enqueue_chunks(text_chunks("two"))
    turn = make_turn(replay)
    take_turn(turn)
    take_turn(turn)
    assert ["stream_options" in body for body in replay.bodies] == [True, False, False]


def test_another_bad_request_is_a_backend_error(replay: ReplayServer) -> None:
    replay.enqueue_error(400, "This model's maximum context length is 4096 tokens.")
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay))
    assert str(caught.value) == (
        f"the server at {replay.url} rejected the request (HTTP 400): "
        "This model's maximum context length is 4096 tokens."
    )
    assert len(replay.requests) == 1


# --- replies that cannot be used ---------------------------------------------------------------------------


def test_required_choice_answered_with_text_is_asked_again(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("I would check the weather."))
    replay.enqueue_chunks(call_chunks(("c1", "weather", '{"location": "SF"}')))
    result = take_turn(make_turn(replay), choice="required")
    assert isinstance(result, ToolRequests) and result.requests[0].name == "weather"
    first, second = replay.bodies
    assert second["messages"][:-2] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant", "content": "I would check the weather."}
    assert second["messages"][-1]["role"] == "user"
    assert "tool call is required" in second["messages"][-1]["content"]
    assert second["tool_choice"] == "required"


def test_named_choice_answered_with_text_twice_is_a_recoverable_error(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("No."))
    replay.enqueue_chunks(text_chunks("Still no."))
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay), choice=NamedToolChoice(name="weather"))
    assert caught.value.problem == "no_required_call"
    assert caught.value.raw == "Still no."
    assert "weather" in caught.value.feedback
    assert "call to the tool weather is required" in replay.bodies[1]["messages"][-1]["content"]


def test_an_empty_reply_is_a_recoverable_error(replay: ReplayServer) -> None:
    replay.enqueue_chunks([chunk({"role": "assistant", "content": ""}), chunk(finish_reason="stop")])
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay))
    assert caught.value.problem == "empty"


def test_a_call_cut_at_the_token_limit_keeps_its_partial_text(replay: ReplayServer) -> None:
    replay.enqueue_chunks(call_chunks(("c1", "weather", '{"location": "San Fr'), finish_reason="length"))
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay))
    assert caught.value.problem == "cut_off"
    assert "token limit" in caught.value.feedback and "shorter arguments" in caught.value.feedback
    assert caught.value.raw == '[unfinished call to weather: {"location": "San Fr]'


# --- faults ---------------------------------------------------------------------------------------------


def test_rate_limit_then_success_is_retried(replay: ReplayServer) -> None:
    replay.enqueue_error(429, "Rate limit reached")
    replay.enqueue_chunks(text_chunks("Sunny."))
    result = take_turn(make_turn(replay, max_retries=2))
    assert result == Final(content="Sunny.")
    assert len(replay.requests) == 2
    assert replay.bodies[0] == replay.bodies[1]


def test_server_errors_after_the_retries_end_the_run_with_a_clear_error(
    replay: ReplayServer, tmp_path: Path
) -> None:
    for _ in range(3):
        replay.enqueue_error(500, "upstream exploded")
    transcript = Transcript(tmp_path / "run.jsonl")
    runner = Runner(make_turn(replay, max_retries=2), [Tool.from_function(add)], transcript=transcript)
    result = within(10, lambda: runner.run([UserMessage(content="Add 1 and 2.")]))
    transcript.close()
    assert len(replay.requests) == 3
    assert result.status == "error"
    assert result.error == f"server error (HTTP 500) from {replay.url} after 2 retries: upstream exploded"
    assert read_messages(tmp_path / "run.jsonl") == [UserMessage(content="Add 1 and 2.")]
    last = transcript_records(tmp_path / "run.jsonl")[-1]
    assert (last["type"], last["status"], last["error"]) == ("run_finished", "error", result.error)


def test_connection_refused_is_a_clear_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    turn = OpenAIChatTurn(f"http://127.0.0.1:{port}/v1", MODEL, api_key=API_KEY, max_retries=0)
    with pytest.raises(BackendError) as caught:
        take_turn(turn)
    assert str(caught.value) == f"cannot connect to http://127.0.0.1:{port}/v1: connection refused"


def test_a_url_without_scheme_is_refused_at_once() -> None:
    with pytest.raises(BackendError, match="must start with http:// or https://"):
        OpenAIChatTurn("localhost:8080/v1", MODEL)


def test_failed_auth_names_the_problem_and_never_the_key(replay: ReplayServer) -> None:
    replay.enqueue_error(401, f"Incorrect API key provided: {API_KEY}")
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay, max_retries=2))
    message = str(caught.value)
    assert message.startswith("authentication failed (HTTP 401): check the API key in $OPENAI_API_KEY")
    assert API_KEY not in message and "***" in message
    assert len(replay.requests) == 1  # auth failures are not retried


def test_unknown_model_is_a_clear_error(replay: ReplayServer) -> None:
    replay.enqueue_error(404, "The model `test-model` does not exist.")
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay))
    assert str(caught.value) == (
        f"model 'test-model' not found at {replay.url} (HTTP 404): The model `test-model` does not exist."
    )


def test_a_wrong_base_url_is_a_clear_error(replay: ReplayServer) -> None:
    replay.enqueue_error(404, "Not Found")
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay))
    assert str(caught.value) == (
        f"not found (HTTP 404) at {replay.url}: check the base URL (it usually ends in /v1): Not Found"
    )


def test_an_event_that_is_not_json_is_a_backend_error(replay: ReplayServer) -> None:
    replay.enqueue_events([sse_event(chunk({"content": "Hel"})), b"data: {oops\n\n"])
    with pytest.raises(BackendError, match="sent a malformed event"):
        take_turn(make_turn(replay))


def test_a_web_page_asked_for_whole_is_a_backend_error(replay: ReplayServer) -> None:
    # No event at all makes the turn ask again without streaming, and that answer is a web page.
    replay.enqueue_events([])
    page = b"<html><body>Log in to continue</body></html>"
    replay.enqueue(Reply(status=200, body=page, headers={"Content-Type": "text/html"}))
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay))
    assert str(caught.value) == (
        f"the server at {replay.url} returned something that is not JSON (content type text/html): "
        "a web server or proxy may be answering in the API's place"
    )


def test_an_error_event_mid_stream_is_a_backend_error(replay: ReplayServer) -> None:
    replay.enqueue_events(
        [sse_event(chunk({"content": "Hel"})), sse_event({"error": {"message": "context window exceeded"}})]
    )
    with pytest.raises(BackendError, match="context window exceeded"):
        take_turn(make_turn(replay))


def test_a_stream_cut_in_a_call_is_recoverable_and_nothing_is_lost(
    replay: ReplayServer, tmp_path: Path
) -> None:
    arguments = '{"location": "San Francisco, California"}'
    replay.enqueue_chunks(
        [chunk({"content": "Checking."}), *call_chunks(("c1", "weather", arguments))], cut_after=5
    )
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay))
    assert caught.value.problem == "cut_off"
    assert "interrupted" in caught.value.feedback
    assert caught.value.raw == 'Checking.\n[unfinished call to weather: {"location]'

    # Through the runner: the partial reply and the feedback stay in the history, then the run goes on.
    replay.enqueue_chunks(call_chunks(("c1", "weather", arguments)), cut_after=4)
    replay.enqueue_chunks(call_chunks(("c2", "weather", arguments)))
    replay.enqueue_chunks(text_chunks("It is sunny."))
    transcript = Transcript(tmp_path / "run.jsonl")
    tools = [Tool.from_spec(WEATHER, lambda location: f"sunny in {location}")]
    runner = Runner(make_turn(replay), tools, transcript=transcript)
    result = within(10, lambda: runner.run([UserMessage(content="Weather in SF?")]))
    transcript.close()
    assert (result.status, result.answer) == ("final", "It is sunny.")
    partial, feedback = result.messages[1:3]
    assert partial == AssistantMessage(content='[unfinished call to weather: {"location]')
    assert isinstance(feedback, UserMessage) and feedback.feedback and "interrupted" in feedback.content
    assert replay.bodies[-2]["messages"][1:] == [
        {"role": "assistant", "content": partial.content},
        {"role": "user", "content": feedback.content},
    ]
    assert replay.bodies[-1]["messages"][-1]["content"].startswith("sunny in San Francisco, California")
    assert read_messages(tmp_path / "run.jsonl") == result.messages


def test_a_stream_that_ends_without_a_finish_reason_is_recoverable(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("Half an ans", finish_reason=None))
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay))
    assert (caught.value.problem, caught.value.raw) == ("cut_off", "Half an ans")


def test_a_server_slower_than_the_timeout_is_a_clear_error(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("late"), delay=3)
    started = time.monotonic()
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay, timeout=0.3))
    assert time.monotonic() - started < 2
    assert str(caught.value) == f"no response from {replay.url} within 0.3 s (timeout)"


def test_a_server_that_stalls_mid_stream_times_out(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("Hello there"), stall_after=2)
    with pytest.raises(BackendError, match=r"within 0.3 s \(timeout\)"):
        take_turn(make_turn(replay, timeout=0.3))
    assert wait_until(lambda: replay.disconnects == 1)


def cancel_on_first_text(cancel: CancelToken) -> tuple[Callable[[Event], None], dict[str, float]]:
    """An event sink that, once text arrives, has another thread fire `cancel`; records when."""
    text_arrived = threading.Event()
    fired: dict[str, float] = {}

    def fire() -> None:
        text_arrived.wait(5)
        fired["at"] = time.monotonic()
        cancel.cancel()

    threading.Thread(target=fire, daemon=True).start()

    def on_event(event: Event) -> None:
        if isinstance(event, ContentDelta):
            text_arrived.set()

    return on_event, fired


def test_cancel_while_the_server_stalls_mid_stream(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("Hello there, friend"), stall_after=2)
    cancel = CancelToken()
    on_event, fired = cancel_on_first_text(cancel)
    with pytest.raises(Cancelled):
        take_turn(make_turn(replay, timeout=10), cancel=cancel, on_delta=on_event)
    assert time.monotonic() - fired["at"] < 0.5
    # The connection was closed, so a server stops generating.
    assert wait_until(lambda: replay.disconnects == 1)


def test_cancel_before_the_server_answers(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("late"), delay=5)
    cancel = CancelToken()
    timer = threading.Timer(0.2, cancel.cancel)
    timer.start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        take_turn(make_turn(replay, timeout=10), cancel=cancel)
    assert time.monotonic() - started < 0.8


def test_cancel_during_the_retry_backoff_sends_nothing_more(replay: ReplayServer) -> None:
    replay.enqueue_error(503, "overloaded", headers={"retry-after-ms": "3000"})
    cancel = CancelToken()
    cancelled_at: list[float] = []

    def cancel_once_the_first_request_is_in() -> None:
        wait_until(lambda: len(replay.requests) >= 1, seconds=10)
        cancelled_at.append(time.monotonic())
        cancel.cancel()

    threading.Thread(target=cancel_once_the_first_request_is_in, daemon=True).start()
    with pytest.raises(Cancelled):
        take_turn(make_turn(replay, max_retries=2), cancel=cancel)
    # The 3 s backoff was cut short by the cancel, not slept through.
    assert time.monotonic() - cancelled_at[0] < 2
    assert not wait_until(lambda: len(replay.requests) > 1, seconds=0.5)


def test_cancel_through_the_runner_keeps_the_transcript(replay: ReplayServer, tmp_path: Path) -> None:
    replay.enqueue_chunks(text_chunks("Let me think about it"), stall_after=2)
    cancel = CancelToken()
    on_event, fired = cancel_on_first_text(cancel)
    transcript = Transcript(tmp_path / "run.jsonl")
    runner = Runner(
        make_turn(replay, timeout=10), [Tool.from_function(add)], on_event=on_event, transcript=transcript
    )
    result = within(5, lambda: runner.run([UserMessage(content="Add 1 and 2.")], cancel))
    transcript.close()
    assert time.monotonic() - fired["at"] < 0.5
    assert (result.status, result.error) == ("cancelled", "cancelled by the user")
    assert read_messages(tmp_path / "run.jsonl") == [UserMessage(content="Add 1 and 2.")]
    last = transcript_records(tmp_path / "run.jsonl")[-1]
    assert (last["type"], last["status"]) == ("run_finished", "cancelled")


# --- what real servers need -------------------------------------------------------------------------------


def test_a_call_the_server_cannot_stream_is_asked_for_whole(replay: ReplayServer) -> None:
    # llama-cpp-python's chatml-function-calling: HTTP 200 and no event when the model picks a tool.
    replay.enqueue_events([])
    replay.enqueue(
        Reply(body=json.dumps(whole_reply(None, ("c1", "weather", '{"location": "SF"}'))).encode())
    )
    result = take_turn(make_turn(replay, sampling=SamplingParams(max_tokens=64, temperature=0)))
    assert isinstance(result, ToolRequests)
    assert [(r.id, r.name, r.arguments) for r in result.requests] == [("c1", "weather", {"location": "SF"})]
    assert result.usage == Usage(prompt_tokens=50, completion_tokens=9)
    streamed, whole = replay.bodies
    assert streamed["stream"] is True
    assert "stream" not in whole and "stream_options" not in whole
    assert {key: value for key, value in streamed.items() if key not in ("stream", "stream_options")} == whole


def test_a_whole_reply_streams_its_text_and_reasoning_at_once(replay: ReplayServer) -> None:
    replay.enqueue_events([])
    reply = whole_reply("Sunny.")
    reply["choices"][0]["message"]["reasoning_content"] = "Look it up."
    replay.enqueue(Reply(body=json.dumps(reply).encode()))
    deltas: list[Delta] = []
    result = take_turn(make_turn(replay), on_delta=deltas.append)
    assert result == Final(
        content="Sunny.", reasoning="Look it up.", usage=Usage(prompt_tokens=50, completion_tokens=9)
    )
    assert [type(d) for d in deltas] == [ReasoningDelta, ContentDelta]


def test_an_empty_stream_without_tools_is_not_asked_again(replay: ReplayServer) -> None:
    replay.enqueue_events([])
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay), tools=[])
    assert caught.value.problem == "cut_off"
    assert len(replay.requests) == 1


def test_null_content_next_to_calls_becomes_empty_text_once_refused(replay: ReplayServer) -> None:
    # What llama-cpp-python answers (as HTTP 500) to an assistant message with "content": null.
    refusal = (
        "1 validation error:\n  {'type': 'string_type', 'loc': ('body', 'messages', 2, "
        "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string'}"
    )
    replay.enqueue_error(500, refusal)
    replay.enqueue_chunks(text_chunks("It is sunny."))
    replay.enqueue_chunks(text_chunks("Still sunny."))
    call = ToolRequest(
        id="c1", name="weather", arguments={"location": "SF"}, raw_arguments='{"location": "SF"}'
    )
    history = [
        UserMessage(content="Weather in SF?"),
        AssistantMessage(tool_requests=[call]),
        ToolMessage(request_id="c1", name="weather", content="sunny"),
    ]
    turn = make_turn(replay)
    assert within(5, lambda: turn(history, [WEATHER], "auto", CancelToken())) == Final(content="It is sunny.")
    assert within(5, lambda: turn(history, [WEATHER], "auto", CancelToken())) == Final(content="Still sunny.")
    assert [body["messages"][1]["content"] for body in replay.bodies] == [None, "", ""]


def test_sampling_settings_are_sent(replay: ReplayServer) -> None:
    replay.enqueue_chunks(text_chunks("ok"))
    sampling = SamplingParams(max_tokens=128, temperature=0.0, top_p=0.9, seed=7)
    take_turn(make_turn(replay, sampling=sampling))
    (body,) = replay.bodies
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (128, 0.0, 0.9, 7)


def test_a_sampling_setting_the_model_refuses_is_left_out_from_then_on(replay: ReplayServer) -> None:
    replay.enqueue_error(400, "Unsupported parameter: 'temperature' is not supported with this model.")
    replay.enqueue_chunks(text_chunks("one"))
    replay.enqueue_chunks(text_chunks("two"))
    turn = make_turn(replay, sampling=SamplingParams(max_tokens=128, temperature=0.0))
    take_turn(turn)
    take_turn(turn)
    assert ["temperature" in body for body in replay.bodies] == [True, False, False]
    assert all(body["max_tokens"] == 128 for body in replay.bodies)


def test_failed_auth_names_the_variable_the_key_came_from(replay: ReplayServer) -> None:
    replay.enqueue_error(401, "Invalid API key")
    with pytest.raises(BackendError, match=r"check the API key in \$MY_LLM_KEY \(Invalid API key\)"):
        take_turn(make_turn(replay, api_key_env="MY_LLM_KEY"))


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"a": "x\ny"}', "Invalid control character at character 8"),
        ('{"a": 1,', "Expecting property name enclosed in double quotes at character 8"),
        ("null", "expected a JSON object, got null"),
        ('"text"', "expected a JSON object, got a string"),
    ],
)
def test_the_scripted_and_the_chat_backend_read_arguments_the_same_way(raw: str, reason: str) -> None:
    request = parse_tool_call("c1", "add", raw)
    assert request.parse_error == f"Invalid JSON arguments for tool add: {reason}"
    scripted = ScriptedTurn([{"tool_calls": [{"id": "c1", "name": "add", "arguments": raw}]}])
    result = scripted([UserMessage(content="x")], [], "auto", CancelToken())
    assert isinstance(result, ToolRequests) and result.requests == [request]
