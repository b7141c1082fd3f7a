"""Malformed requests, generated: every answer is an OpenAI error in JSON or a valid completion,
never a server error, and the server still answers a good request at the end.

On a tiny random-weight model (tiny_server.py), twice: in-process (fast, every run) and in a real
`localagent serve` process on 127.0.0.1 (slow), which must still be running at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from openai._models import construct_type
from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from server_processes import localagent_server
from tiny_server import MAX_TOKENS, N_CTX, TINY, TOOLS, tiny_client, tiny_engine

GOOD = {"model": TINY, "messages": [{"role": "user", "content": "What is 2 + 2?"}], "max_tokens": 8}

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
TYPES = st.sampled_from(["object", "string", "integer", "number", "boolean", "array", "null", "nonsense"])
SCHEMA = st.recursive(
    st.fixed_dictionaries(
        {}, optional={"type": TYPES | st.lists(TYPES, max_size=2), "description": st.text(max_size=8)}
    ),
    lambda inner: st.fixed_dictionaries(
        {},
        optional={
            "type": TYPES,
            "properties": st.dictionaries(st.text(max_size=6), inner, max_size=3),
            "required": st.lists(st.text(max_size=6), max_size=3) | JSON,
            "items": inner | JSON,
            "enum": st.lists(SCALARS, max_size=3) | JSON,
            "anyOf": st.lists(inner, max_size=2),
            "minimum": SCALARS,
            "maxLength": SCALARS,
            "pattern": st.sampled_from(["^[a-z]+$", "(", "[", "\\d{2,1}", "a{99999}"]) | st.text(max_size=6),
            "$ref": st.sampled_from(["#/$defs/x", "#", "http://example.com/x"]),
            "additionalProperties": st.booleans() | inner,
        },
    ),
    max_leaves=6,
)
TOOL = st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "function", "custom", "x"])},
    optional={
        "function": st.fixed_dictionaries(
            {
                "name": st.sampled_from(["calculator", "read_file", "f", "bad name", "", "x" * 70])
                | st.text(max_size=8)
            },
            optional={"parameters": SCHEMA | JSON, "description": JSON, "strict": JSON},
        )
        | JSON
    },
)
ROLES = st.sampled_from(["system", "developer", "user", "assistant", "tool", "function", "robot"])
CONTENT = st.text(max_size=40) | st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "x"])}, optional={"text": JSON}),
    max_size=2,
)
CALL = st.fixed_dictionaries(
    {"id": st.sampled_from(["call_1", "call_2"]) | JSON},
    optional={
        "type": st.sampled_from(["function", "x"]),
        "function": st.fixed_dictionaries(
            {
                "name": st.sampled_from(["calculator", "nope"]),
                "arguments": st.sampled_from(['{"expression": "1"}', "{", "[]", ""]) | JSON,
            }
        ),
    },
)
MESSAGE = st.fixed_dictionaries(
    {"role": ROLES},
    optional={
        "content": CONTENT | JSON,
        "tool_calls": st.lists(CALL, max_size=2) | JSON,
        "tool_call_id": st.sampled_from(["call_1", "call_2", "call_9"]) | JSON,
        "name": JSON,
        "reasoning_content": JSON,
    },
)
CHOICE = (
    st.sampled_from(
        [
            "auto",
            "none",
            "required",
            "any",
            {"type": "function", "function": {"name": "calculator"}},
            {"type": "function", "function": {"name": "nope"}},
            {"type": "function"},
        ]
    )
    | JSON
)
FIELDS = {
    "messages": st.lists(MESSAGE, max_size=4) | JSON,
    "tools": st.lists(TOOL, max_size=3) | st.just(TOOLS) | JSON,
    "tool_choice": CHOICE,
    "parallel_tool_calls": JSON,
    "stream": st.booleans() | JSON,
    "stream_options": st.fixed_dictionaries({}, optional={"include_usage": st.booleans() | JSON}) | JSON,
    "max_tokens": st.integers(-5, 40) | st.just(10**9) | JSON,
    "max_completion_tokens": st.integers(-5, 40) | JSON,
    "temperature": st.floats(-1, 3, allow_nan=False) | JSON,
    "top_p": st.floats(-1, 2, allow_nan=False) | JSON,
    "seed": st.integers(-(2**70), 2**70) | JSON,
    "stop": st.text(max_size=4) | st.lists(st.text(max_size=4), max_size=6) | JSON,
    "n": st.integers(-1, 3) | JSON,
    "model": st.sampled_from(["tiny", "other", ""]) | JSON,
    "logprobs": JSON,
    "response_format": st.sampled_from([{"type": "text"}, {"type": "json_object"}]) | JSON,
    "unknown_field": JSON,
}
CALL_1 = {"name": "calculator", "arguments": '{"expression": "2 + 2"}'}
EXCHANGE = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": CALL_1}],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "4"},
]
VALID_FIELDS = {
    "messages": st.sampled_from([GOOD["messages"], [*GOOD["messages"], *EXCHANGE]]).map(
        lambda messages: [{"role": "system", "content": "Be brief."}, *messages]
    ),
    "tools": st.just(TOOLS) | st.just(TOOLS[:1]),
    "tool_choice": st.sampled_from(
        ["auto", "none", "required", {"type": "function", "function": {"name": "calculator"}}]
    ),
    "parallel_tool_calls": st.booleans(),
    "stream": st.booleans(),
    "stream_options": st.just({"include_usage": True}),
    "max_tokens": st.integers(1, 24),
    "temperature": st.floats(0, 2),
    "top_p": st.floats(0, 1),
    "seed": st.integers(0, 2**31),
    "stop": st.lists(st.text(min_size=1, max_size=3), max_size=4),
}


def _valid(body: dict[str, Any]) -> dict[str, Any]:
    """stream_options only with stream, tool choices that call only with tools."""
    if not body.get("stream"):
        body.pop("stream_options", None)
    if "tools" not in body and body.get("tool_choice", "auto") not in ("auto", "none"):
        body.pop("tool_choice")
    return body


NEAR_VALID = st.fixed_dictionaries({}, optional=VALID_FIELDS).map(lambda extra: _valid({**GOOD, **extra}))
MUTATIONS = st.lists(st.sampled_from(sorted(FIELDS)), min_size=1, max_size=2, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({name: FIELDS[name] for name in names})
)
# Half good requests with any options, half with one or two fields made up.
CHAT_BODY = st.one_of(NEAR_VALID, st.tuples(NEAR_VALID, MUTATIONS).map(lambda pair: {**pair[0], **pair[1]}))
COMPLETION_BODY = st.fixed_dictionaries(
    {"prompt": st.text(max_size=30) | st.lists(st.text(max_size=5), max_size=2) | JSON},
    optional={
        "grammar": st.sampled_from(['root ::= "a" [0-9]', "root ::= (", 'start: "x"', "root ::= root"])
        | st.text(max_size=20),
        "structured_outputs": st.fixed_dictionaries(
            {}, optional={"grammar": st.text(max_size=20), "regex": JSON}
        )
        | JSON,
        "guided_grammar": st.text(max_size=20) | JSON,
        "max_tokens": st.integers(-2, 16) | JSON,
        "stream": st.booleans(),
        "stop": JSON,
        "echo": JSON,
        "model": st.sampled_from(["tiny", "nope"]),
    },
)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@dataclass(frozen=True)
class Target:
    """Where the requests go: starlette's TestClient or an HTTP client of a server process (the
    same interface), and whether the server is still up."""

    client: Any
    running: Callable[[], bool]


@pytest.fixture(scope="module", params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def target(
    request: pytest.FixtureRequest, tiny_model_chat: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    if request.param == "in_process":
        with tiny_client(tiny_engine(tiny_model_chat, max_actions=2)) as client:
            yield Target(client, lambda: True)
        return
    folder = tmp_path_factory.mktemp("fuzz-serve")
    model = folder / f"{TINY}.gguf"  # requests name the model by the file's stem
    model.symlink_to(tiny_model_chat)
    flags = [
        "--model", str(model), "--max-actions", "2", "--n-ctx", str(N_CTX), "--max-tokens", str(MAX_TOKENS),
    ]  # fmt: skip
    with (
        localagent_server(folder / "serve.log", *flags) as server,
        httpx2.Client(base_url=server.url.removesuffix("/v1"), timeout=300) as client,
    ):
        yield Target(client, server.running)


def assert_json_error_or_valid(response: Any, whole: type[Any], chunk: type[Any]) -> None:
    event(f"HTTP {response.status_code}")
    assert response.status_code in (200, 400, 404, 413), (response.status_code, response.text[:500])
    if response.status_code != 200:
        error = response.json()["error"]
        assert isinstance(error["message"], str) and error["message"], error
        assert error["type"] == "invalid_request_error"
        return
    if not response.headers["content-type"].startswith("text/event-stream"):
        whole.model_validate(response.json())
        return
    sent = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    assert sent and sent[-1] == "[DONE]", response.text[-300:]
    for line in sent[:-1]:
        data = json.loads(line)
        assert "error" not in data, data
        construct_type(type_=chunk, value=data)
        assert data["object"] in ("chat.completion.chunk", "text_completion")


@FUZZ
@given(body=CHAT_BODY)
def test_chat_requests_get_a_json_error_or_a_valid_completion(target: Target, body: dict[str, Any]) -> None:
    response = target.client.post("/v1/chat/completions", json=body)
    assert_json_error_or_valid(response, ChatCompletion, ChatCompletionChunk)


@FUZZ
@given(body=COMPLETION_BODY)
def test_completion_requests_get_a_json_error_or_a_valid_completion(
    target: Target, body: dict[str, Any]
) -> None:
    response = target.client.post("/v1/completions", json=body)
    assert_json_error_or_valid(response, Completion, Completion)


@FUZZ
@given(schema=SCHEMA, stream=st.booleans())
# Found by this test: a property named U+0085 streamed raw, a line end to str.splitlines().
@example(schema={"properties": {"\x85": {}}}, stream=True)
def test_any_tool_schema_is_refused_or_called_with_a_json_object(
    target: Target, schema: dict[str, Any], stream: bool
) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    body = {**GOOD, "tools": [tool], "tool_choice": "required", "max_tokens": 64, "stream": stream}
    response = target.client.post("/v1/chat/completions", json=body)
    assert_json_error_or_valid(response, ChatCompletion, ChatCompletionChunk)
    if response.status_code == 200 and not stream:
        choice = response.json()["choices"][0]
        if choice["finish_reason"] == "tool_calls":
            (call,) = choice["message"]["tool_calls"]
            assert isinstance(json.loads(call["function"]["arguments"]), dict)


@settings(max_examples=60, deadline=None)
@given(raw=st.binary(max_size=64) | JSON.map(lambda value: json.dumps(value).encode()))
def test_bodies_that_are_not_requests_get_a_json_error(target: Target, raw: bytes) -> None:
    response = target.client.post(
        "/v1/chat/completions", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"]


def test_the_server_answers_a_good_request_after_the_fuzzing(target: Target) -> None:
    assert target.running()
    response = target.client.post("/v1/chat/completions", json={**GOOD, "tools": TOOLS})
    assert response.status_code == 200
    ChatCompletion.model_validate(response.json())
