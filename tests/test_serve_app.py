"""`localagent serve`'s HTTP API on a tiny random-weight model, in-process (see tiny_server.py).

Both reply formats, every tool choice, streamed and not: every answer is an OpenAI completion whose
calls name an allowed tool with JSON-object arguments, the stream adds up to the same reply, and a
follow-up request finds the whole last exchange in the KV cache.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest_grammar import lark_accepts
from openai._models import construct_type
from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from starlette.testclient import TestClient
from tiny_server import CALCULATOR, N_CTX, TINY, TOOLS, tiny_client, tiny_engine

from localagent.backends.openai_stream import StreamedReply, StreamedText
from localagent.serve.engine import Engine
from localagent.tools.spec import ToolSpec

CHAT = "/v1/chat/completions"
QUESTION = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "What is 17 * 23?"},
]
CHOICES: list[Any] = ["auto", "none", "required", {"type": "function", "function": {"name": "read_file"}}]


@pytest.fixture(scope="module", params=["react", "tool_call"])
def engine(request: pytest.FixtureRequest, tiny_model_chat: Path) -> Engine:
    return tiny_engine(tiny_model_chat, tool_format=request.param, max_actions=3)


@pytest.fixture(scope="module")
def client(engine: Engine) -> Iterator[TestClient]:
    with tiny_client(engine) as client:
        yield client


def sse_data(response: Any) -> list[dict[str, Any]]:
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(event) for event in events[:-1]]


def chat(client: TestClient, **body: Any) -> tuple[StreamedReply, ChatCompletion | None]:
    """The reply as localagent's own client adds it up, and the whole completion when not streamed."""
    response = client.post(CHAT, json={"model": TINY, "messages": QUESTION, **body})
    assert response.status_code == 200, response.text
    added = StreamedReply()
    if body.get("stream"):
        for chunk in sse_data(response):
            added.add(ChatCompletionChunk.model_validate(chunk))
        return added, None
    completion = ChatCompletion.model_validate(response.json())
    added.add(_as_chunk(completion))
    return added, completion


def _as_chunk(completion: ChatCompletion) -> ChatCompletionChunk:
    from localagent.backends.openai_stream import completion_as_chunk

    return completion_as_chunk(completion)


def summary(reply: StreamedReply) -> tuple[Any, ...]:
    calls = tuple((call.name, call.arguments) for call in reply.calls)
    return reply.finish_reason, reply.content, reply.reasoning, calls


@pytest.mark.parametrize("choice", CHOICES, ids=["auto", "none", "required", "named"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_tool_choice_answers_with_a_valid_reply_streamed_or_not(
    client: TestClient, choice: Any, seed: int
) -> None:
    body = {"tools": TOOLS, "tool_choice": choice, "temperature": 0.9, "seed": seed}
    whole, completion = chat(client, **body)
    streamed, _ = chat(client, **body, stream=True, stream_options={"include_usage": True})
    assert summary(streamed) == summary(whole), "the stream adds up to the same reply"
    assert completion is not None and streamed.usage is not None
    assert streamed.usage.completion_tokens == completion.usage.completion_tokens  # type: ignore[union-attr]
    reason = whole.finish_reason
    allowed = {"read_file"} if isinstance(choice, dict) else {"calculator", "read_file"}
    if choice == "none":
        assert reason in ("stop", "length") and not whole.calls
    elif choice != "auto":
        assert reason in ("tool_calls", "length"), "a required call or nothing but a cut-off"
    if reason == "tool_calls":
        assert whole.calls and all(call.name in allowed for call in whole.calls)
        assert all(isinstance(json.loads(call.arguments), dict) for call in whole.calls)
        assert len({call.id for call in streamed.calls}) == len(streamed.calls)
        assert all(call.id.startswith("call_") for call in streamed.calls)


def test_parallel_tool_calls_false_allows_one_call_per_reply(client: TestClient, engine: Engine) -> None:
    two_calls = {
        "react": 'Thought: both\nAction: calculator\nAction Input: {"expression": "1"}\n'
        'Action: calculator\nAction Input: {"expression": "2"}\n',
        "tool_call": '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "2"}}\n</tool_call>',
    }[engine.reply_format.name]
    specs = [ToolSpec.from_openai(CALCULATOR)]
    assert engine.max_actions == 3
    assert lark_accepts(engine.format_for(3).grammar(specs, "required").lark, two_calls)
    assert not lark_accepts(engine.format_for(1).grammar(specs, "required").lark, two_calls)
    for seed in range(3):
        reply, _ = chat(
            client,
            tools=TOOLS,
            tool_choice="required",
            parallel_tool_calls=False,
            temperature=1.0,
            seed=seed,
            max_tokens=256,
        )
        assert (reply.finish_reason, len(reply.calls)) == ("tool_calls", 1)


def test_a_follow_up_finds_the_whole_last_exchange_in_the_kv_cache(client: TestClient) -> None:
    body = {"model": TINY, "tools": [CALCULATOR], "tool_choice": "required", "max_tokens": 256}
    first = client.post(CHAT, json={**body, "messages": QUESTION}).json()
    message = first["choices"][0]["message"]
    assert first["choices"][0]["finish_reason"] == "tool_calls"
    # A client that keeps no reasoning: the server restores the reply as the model wrote it.
    echoed = {"role": "assistant", "content": None, "tool_calls": message["tool_calls"]}
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": "391"} for call in message["tool_calls"]
    ]
    second = client.post(
        CHAT, json={**body, "messages": [*QUESTION, echoed, *results], "tool_choice": "none"}
    ).json()
    held = first["usage"]["prompt_tokens"] + first["usage"]["completion_tokens"]
    usage = second["usage"]
    # A template may render the reply without its last token (a trimmed newline): at most one less.
    assert usage["prompt_tokens_details"]["cached_tokens"] >= held - 1
    assert usage["prompt_tokens"] > held


@pytest.mark.parametrize(
    ("body", "status", "param", "message"),
    [
        ({"messages": QUESTION, "top_k": 40}, 400, "top_k", "Unrecognized request argument supplied: top_k"),
        ({"messages": QUESTION, "n": 2}, 400, "n", "n must be 1"),
        ({"messages": QUESTION, "logprobs": True}, 400, "logprobs", "logprobs"),
        ({"messages": QUESTION, "model": "gpt-4o"}, 404, "model", "does not exist"),
        ({"messages": QUESTION, "max_tokens": N_CTX}, 400, "max_tokens", "too large"),
        ({"messages": QUESTION, "tool_choice": "required"}, 400, "tool_choice", "at least one tool"),
        (
            {
                "messages": QUESTION,
                "tools": TOOLS,
                "tool_choice": {"type": "function", "function": {"name": "nope"}},
            },
            400,
            "tool_choice",
            "'nope' is not among the tools",
        ),
        (
            {
                "messages": QUESTION,
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "x",
                            "parameters": {"type": "object", "properties": {"a": {"type": "nonsense"}}},
                        },
                    }
                ],
            },
            400,
            "tools[0].function.parameters",
            "Invalid schema for function 'x'",
        ),
        (
            {
                "messages": QUESTION,
                "tools": [{"type": "function", "function": {"name": "x", "parameters": {"type": "string"}}}],
            },
            400,
            "tools[0].function.parameters",
            "type 'object'",
        ),
        (
            {"messages": QUESTION, "tools": [{"type": "custom", "custom": {"name": "x"}}]},
            400,
            "tools[0]",
            "only tools of type 'function'",
        ),
        (
            {"messages": QUESTION, "tools": [{"type": "function", "function": {"name": "bad name"}}]},
            400,
            "tools[0].function.name",
            "tool name",
        ),
        ({"messages": QUESTION, "tools": [CALCULATOR, CALCULATOR]}, 400, "tools[1]", "more than one tool"),
        (
            {"messages": [{"role": "tool", "tool_call_id": "call_1", "content": "x"}]},
            400,
            "messages[0].tool_call_id",
            "no earlier",
        ),
        ({"messages": [{"role": "user", "content": "x " * 3000}]}, 400, "messages", "context window"),
        (
            {"messages": QUESTION, "tools": TOOLS, "response_format": {"type": "json_object"}},
            400,
            "response_format",
            "with tools, only 'text'",
        ),
        ({"messages": QUESTION, "response_format": {"type": "yaml"}}, 400, "response_format", "one of text"),
        (
            {
                "messages": QUESTION,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"type": 3}},
                },
            },
            400,
            "response_format.json_schema.schema",
            "Invalid schema for response_format",
        ),
    ],
)
def test_bad_requests_get_openai_errors_and_the_server_goes_on(
    client: TestClient, body: dict[str, Any], status: int, param: str, message: str
) -> None:
    response = client.post(CHAT, json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["param"] == param and message in error["message"], error
    assert error["type"] == "invalid_request_error"
    if "context window" in message:
        assert error["code"] == "context_length_exceeded"
    assert client.post(CHAT, json={"messages": QUESTION, "max_tokens": 4}).status_code == 200


def test_a_stream_that_fails_before_its_first_chunk_is_an_http_error(client: TestClient) -> None:
    response = client.post(
        CHAT, json={"messages": [{"role": "user", "content": "x " * 3000}], "stream": True}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "context_length_exceeded"


def test_a_reply_cut_off_at_the_token_limit_is_a_valid_completion(client: TestClient) -> None:
    _, completion = chat(client, tools=TOOLS, tool_choice="required", max_tokens=3)
    assert completion is not None and completion.choices[0].finish_reason == "length"
    assert completion.usage is not None and completion.usage.completion_tokens == 3


def test_paths_and_methods_that_do_not_exist_get_json_errors(client: TestClient) -> None:
    missing = client.get("/v1/nothing")
    assert missing.status_code == 404 and "Unknown path" in missing.json()["error"]["message"]
    wrong = client.get(CHAT)
    assert wrong.status_code == 405 and "not allowed" in wrong.json()["error"]["message"]
    broken = client.post(CHAT, content=b"{not json", headers={"content-type": "application/json"})
    assert broken.status_code == 400 and "parse the JSON body" in broken.json()["error"]["message"]


def test_models_lists_the_served_model_first(client: TestClient) -> None:
    listed = client.get("/v1/models").json()
    assert listed["object"] == "list"
    assert listed["data"][0] == {
        "id": TINY,
        "object": "model",
        "created": 0,
        "owned_by": "localagent",
        "loaded": True,
    }
    assert all(not model["loaded"] for model in listed["data"][1:])
    assert client.get(f"/v1/models/{TINY}").json()["id"] == TINY
    assert client.get("/v1/models/other").status_code == 404


# --- /v1/completions -----------------------------------------------------------------------------------

LARK = 'start: "Answer: " /[0-9]{1,3}/ "."\n'
GBNF = 'root ::= "Answer: " [0-9] [0-9]? [0-9]? "."\n'


@pytest.mark.parametrize("field", ["grammar", "structured_outputs", "guided_grammar"])
def test_completions_follow_the_grammar_sent_in_any_of_its_fields(client: TestClient, field: str) -> None:
    grammar: Any = {"grammar": GBNF, "structured_outputs": {"grammar": LARK}, "guided_grammar": LARK}[field]
    body = {"model": TINY, "prompt": "Question: 17 * 23?\n", "max_tokens": 16, field: grammar}
    whole = Completion.model_validate(client.post("/v1/completions", json=body).json())
    text = whole.choices[0].text
    assert text.startswith("Answer: ") and text.endswith(".") and text[8:-1].isdigit(), text
    assert whole.choices[0].finish_reason == "stop"
    response = client.post(
        "/v1/completions", json={**body, "stream": True, "stream_options": {"include_usage": True}}
    )
    streamed = StreamedText()
    for chunk in sse_data(response):
        # As the SDK reads a stream: leniently, since a chunk's finish_reason is null until the last.
        streamed.add(construct_type(type_=Completion, value=chunk))  # type: ignore[arg-type]
    assert (streamed.text, streamed.finish_reason) == (text, "stop")
    assert streamed.usage is not None and streamed.usage.cached_prompt_tokens > 0


def test_completions_end_at_a_stop_string(client: TestClient) -> None:
    body = {
        "prompt": "Say it:",
        "max_tokens": 32,
        "structured_outputs": {"grammar": 'start: "hello world, this is forced"'},
    }
    assert (
        client.post("/v1/completions", json=body).json()["choices"][0]["text"]
        == "hello world, this is forced"
    )
    stopped = client.post("/v1/completions", json={**body, "stop": ["world"]}).json()["choices"][0]
    assert (stopped["text"], stopped["finish_reason"]) == ("hello ", "stop")


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        ({"prompt": "x", "grammar": "root ::= ("}, "grammar", "Invalid grammar"),
        ({"prompt": "x", "grammar": 'greeting ::= "hi"'}, "grammar", "No 'root' rule"),
        ({"prompt": "x", "grammar": "root ::= missing"}, "grammar", "Rule 'missing' not found"),
        (
            {"prompt": "x", "structured_outputs": {"grammar": "start: undefined_rule"}},
            "grammar",
            "Invalid grammar",
        ),
        ({"prompt": "x", "grammar": GBNF, "guided_grammar": LARK}, "grammar", "give one grammar"),
        ({"prompt": "", "guided_grammar": " "}, "grammar", "the grammar is blank"),
        ({"prompt": ["a", "b"]}, "prompt", "one prompt"),
        ({"prompt": "x", "echo": True}, "echo", "echo"),
        (
            {"prompt": "x", "structured_outputs": {"json": {"type": "object"}}},
            "structured_outputs.json",
            "use grammar",
        ),
        ({"prompt": "x " * 3000}, "prompt", "context window"),
    ],
)
def test_bad_completion_requests_get_openai_errors(
    client: TestClient, body: dict[str, Any], param: str, message: str
) -> None:
    response = client.post("/v1/completions", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and message in error["message"], error


# --- the bearer key --------------------------------------------------------------------------------------


def test_a_key_protects_every_route(tiny_model_chat: Path) -> None:
    with tiny_client(tiny_engine(tiny_model_chat), api_key="s3cret-key") as keyed:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-key"}):
            refused = keyed.get("/v1/models", headers=headers)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        assert keyed.get("/v1/models", headers={"Authorization": "Bearer s3cret-key"}).status_code == 200


def test_each_request_is_logged_with_its_outcome_and_tokens(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="localagent.serve")
    client.post(
        CHAT, json={"messages": QUESTION, "tools": TOOLS, "tool_choice": "required", "max_tokens": 256}
    )
    client.post("/v1/completions", json={"prompt": "Hello", "max_tokens": 4, "stream": True})
    chat_line, completion_line = (record.getMessage() for record in caplog.records[-2:])
    assert re.fullmatch(
        r"chat/completions: 1 tool call, prompt \d+ tokens \(\d+ already in the KV cache\), "
        r"\d+ generated, [\d.]+ s",
        chat_line,
    )
    assert re.fullmatch(
        r"completions \(stream\): ended \((end|length)\), prompt \d+ tokens \(\d+ already in the KV cache\), "
        r"[1-4] generated, [\d.]+ s",
        completion_line,
    )
