"""The text-tag turn over `/v1/completions`, against the replay server on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from openai_chunks import MODEL, completion_chunks
from replay_server import ReplayServer

from localagent.backends.openai_completions import GrammarField, completions_turn
from localagent.backends.openai_http import SamplingParams
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import ContentDelta, Delta, Event, ReasoningDelta
from localagent.core.messages import Final, Message, SystemMessage, ToolRequests, Usage, UserMessage
from localagent.errors import BackendError, RecoverableTurnError
from localagent.formats.react.grammar import GrammarOptions, build_grammar
from localagent.formats.react.render import prompt_turns, render_plain
from localagent.loop.runner import Runner
from localagent.loop.transcript import Transcript, read_messages
from localagent.tools.base import Tool

API_KEY = "sk-test-secret-5678"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ADD = Tool.from_function(add)
HISTORY: list[Message] = [SystemMessage(content="Be brief."), UserMessage(content="What is 2 + 3?")]
ACTION = 'Thought: I should add.\nAction: add\nAction Input: {"a": 2, "b": 3}\n'
ANSWER = "Thought: I know it.\nFinal Answer: 2 + 3 is 5.\n\n"
# No "Thought:" label: fine for the tolerant parser, off the format for the strict one.
UNLABELLED = 'I will add them.\nAction: add\nAction Input: {"a": 2, "b": 3}\n'


def make_turn(replay: ReplayServer, field: GrammarField = "gbnf", **options: Any) -> TextTurn:
    settings: dict[str, Any] = {"api_key": API_KEY, "timeout": 3.0, "max_retries": 0, **options}
    sampling = settings.pop("sampling", SamplingParams(max_tokens=96, temperature=0.0, top_p=1.0, seed=3))
    return completions_turn(replay.url, MODEL, grammar_field=field, sampling=sampling, **settings)


def take_turn(
    turn: TextTurn,
    choice: Any = "auto",
    cancel: CancelToken | None = None,
    on_delta: Any = None,
) -> Final | ToolRequests:
    return turn(HISTORY, [ADD.spec], choice, cancel or CancelToken(), on_delta)


# --- the request ------------------------------------------------------------------------------------


def test_gbnf_goes_in_grammar_with_the_plain_prompt_and_the_sampling(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks(ACTION))
    result = take_turn(make_turn(replay, "gbnf"))
    assert isinstance(result, ToolRequests)
    assert [(r.name, r.arguments) for r in result.requests] == [("add", {"a": 2, "b": 3})]
    (request,) = replay.requests
    body = request.body
    assert request.path == "/v1/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert body["prompt"] == render_plain(prompt_turns(HISTORY, [ADD.spec], plain=True))
    assert body["grammar"] == build_grammar([ADD.spec], "auto", GrammarOptions(prompt_format="plain")).gbnf
    assert (body["model"], body["stream"], body["stream_options"]) == (MODEL, True, {"include_usage": True})
    assert (body["max_tokens"], body["temperature"], body["top_p"], body["seed"]) == (96, 0.0, 1.0, 3)
    assert "stop" not in body and "structured_outputs" not in body


def test_lark_goes_in_structured_outputs(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks(ANSWER))
    assert take_turn(make_turn(replay, "lark")) == Final(content="2 + 3 is 5.", reasoning="I know it.")
    body = replay.bodies[0]
    lark = build_grammar([ADD.spec], "auto", GrammarOptions(prompt_format="plain")).lark
    assert body["structured_outputs"] == {"grammar": lark}
    assert "grammar" not in body and "stop" not in body


def test_the_grammar_follows_the_tool_choice_and_is_built_once(replay: ReplayServer) -> None:
    for _ in range(3):
        replay.enqueue_chunks(completion_chunks(ANSWER))
    turn = make_turn(replay)
    take_turn(turn)
    take_turn(turn, "none")
    take_turn(turn)
    auto, none, auto_again = (body["grammar"] for body in replay.bodies)
    assert auto == auto_again and "Action" in auto
    assert "Action" not in none and "Final Answer" in none
    assert turn.format.grammar([ADD.spec], "auto") is turn.format.grammar([ADD.spec], "auto")


def test_without_a_grammar_the_reply_is_read_tolerantly_and_stops_before_an_observation(
    replay: ReplayServer,
) -> None:
    replay.enqueue_chunks(completion_chunks(UNLABELLED))
    result = take_turn(make_turn(replay, "none"))
    assert isinstance(result, ToolRequests)
    assert (result.reasoning, result.requests[0].arguments) == ("I will add them.", {"a": 2, "b": 3})
    body = replay.bodies[0]
    assert body["stop"] == ["\nObservation:", "\nQuestion:"]
    assert "grammar" not in body and "structured_outputs" not in body


def test_with_a_grammar_a_reply_off_the_format_is_a_format_error(replay: ReplayServer) -> None:
    # What a server that ignores the grammar field sends: the strict parser does not guess.
    replay.enqueue_chunks(completion_chunks(UNLABELLED))
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay, "gbnf"))
    assert caught.value.problem == "unparsable"
    assert "expected 'Thought: '" in caught.value.feedback


# --- the reply ----------------------------------------------------------------------------------------


def test_text_streams_as_thought_and_answer_deltas_and_usage_is_counted(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks(ANSWER, usage=(120, 14)))
    deltas: list[Delta] = []
    result = take_turn(make_turn(replay), on_delta=deltas.append)
    assert result == Final(
        content="2 + 3 is 5.", reasoning="I know it.", usage=Usage(prompt_tokens=120, completion_tokens=14)
    )
    assert "".join(d.text for d in deltas if isinstance(d, ReasoningDelta)) == "I know it."
    assert "".join(d.text for d in deltas if isinstance(d, ContentDelta)) == "2 + 3 is 5."
    assert len(deltas) > 2  # piece by piece, not at the end


def test_no_usage_from_the_server_means_none(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks(ANSWER))
    assert take_turn(make_turn(replay)).usage is None


def test_a_reply_cut_at_the_token_limit_is_recoverable(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks(ACTION[:-10], "length"))
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay))
    assert caught.value.problem == "cut_off"
    assert "cut off at the 96-token limit" in caught.value.feedback
    assert caught.value.raw == ACTION[:-10]  # ends in '{"a": 2'


def test_an_answer_cut_at_the_token_limit_is_kept_and_marked_as_cut(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks("Thought: I know it.\nFinal Answer: 2 + 3 is", "length"))
    result = take_turn(make_turn(replay, "none"))
    assert isinstance(result, Final)
    assert result.content.startswith("2 + 3 is […]\n[The answer was cut off at the ")


def test_a_stream_cut_mid_reply_is_recoverable_and_keeps_the_text(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks(ACTION), cut_after=6)
    with pytest.raises(RecoverableTurnError) as caught:
        take_turn(make_turn(replay))
    assert caught.value.problem == "cut_off"
    assert "interrupted" in caught.value.feedback
    assert caught.value.raw == ACTION[:24]


def test_a_tool_call_then_an_answer_through_the_runner(replay: ReplayServer, tmp_path: Path) -> None:
    replay.enqueue_chunks(completion_chunks(ACTION, usage=(100, 20)))
    replay.enqueue_chunks(completion_chunks(ANSWER, usage=(130, 12)))
    transcript = Transcript(tmp_path / "run.jsonl")
    events: list[Event] = []
    runner = Runner(make_turn(replay), [ADD], on_event=events.append, transcript=transcript)
    result = runner.run(HISTORY)
    transcript.close()
    assert (result.status, result.answer, result.steps) == ("final", "2 + 3 is 5.", 2)
    assert result.usage == Usage(prompt_tokens=230, completion_tokens=32)
    first, second = replay.bodies
    # Append-only rendering: the second prompt starts with the first prompt and the reply to it.
    assert second["prompt"].startswith(first["prompt"] + ACTION)
    assert "Observation: 5\n" in second["prompt"][len(first["prompt"]) :]
    assert read_messages(tmp_path / "run.jsonl") == result.messages
    assert not [e for e in events if e.type == "format_error"]


# --- faults ----------------------------------------------------------------------------------------------


def test_a_server_that_refuses_the_grammar_field_gets_a_hint(replay: ReplayServer) -> None:
    replay.enqueue_error(400, "Unrecognized request argument supplied: grammar")
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay, "gbnf"))
    assert str(caught.value) == (
        f"the server at {replay.url} rejected the request (HTTP 400): Unrecognized request argument "
        "supplied: grammar (this server may not take a grammar in 'grammar': try another --grammar-field, "
        "or none)"
    )


def test_refused_stream_options_are_left_out_from_then_on(replay: ReplayServer) -> None:
    replay.enqueue_error(400, "Unrecognized request argument supplied: stream_options")
    replay.enqueue_chunks(completion_chunks(ANSWER))
    replay.enqueue_chunks(completion_chunks(ANSWER))
    turn = make_turn(replay)
    take_turn(turn)
    take_turn(turn)
    assert ["stream_options" in body for body in replay.bodies] == [True, False, False]


def test_server_errors_are_one_clear_line_without_the_key(replay: ReplayServer) -> None:
    replay.enqueue_error(401, f"bad key {API_KEY}")
    with pytest.raises(BackendError) as caught:
        take_turn(make_turn(replay))
    assert API_KEY not in str(caught.value)
    assert str(caught.value).startswith(
        "authentication failed (HTTP 401): check the API key in $OPENAI_API_KEY"
    )


def test_cancel_while_the_server_stalls_mid_stream(replay: ReplayServer) -> None:
    replay.enqueue_chunks(completion_chunks(ANSWER), stall_after=3)
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        take_turn(make_turn(replay, timeout=10), cancel=cancel)
    assert time.monotonic() - started < 1.5
    deadline = time.monotonic() + 2
    while replay.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert replay.disconnects == 1  # the connection was closed, so a server stops generating
