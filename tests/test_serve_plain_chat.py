"""`localagent serve` without tools: the model's own chat under its GGUF's template, no format and no
grammar; and with tools, the client's prompt with only the tools and the reply's shape added.

On a tiny random-weight GGUF in-process (see tiny_server.py), against llama-cpp-python's own chat
completion on the same file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import llama_cpp
import pytest
from starlette.testclient import TestClient
from tiny_gguf import END_LIFTS, GEMMA_LIKE_TEMPLATE, GEMMA_LIKE_TOKENS, build_tiny_gguf
from tiny_server import CALCULATOR, MAX_TOKENS, N_CTX, TINY, TOOLS, tiny_client, tiny_engine

from localagent.backends.cpu_backend import ensure_cpu_backend
from localagent.core.messages import SystemMessage, UserMessage
from localagent.serve.engine import Engine
from localagent.tools.spec import ToolSpec

CHAT = "/v1/chat/completions"
CONVERSATION = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "Name a colour."},
    {"role": "assistant", "content": "Blue."},
    {"role": "user", "content": "Another one?"},
]


@pytest.fixture(scope="module")
def talkative_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny chat GGUF that seldom ends its turn, so a reply runs to the token limit."""
    path = tmp_path_factory.mktemp("tiny") / "tiny-talkative.gguf"
    return build_tiny_gguf(
        path, chat_template=GEMMA_LIKE_TEMPLATE, special=GEMMA_LIKE_TOKENS, lifts=END_LIFTS
    )


@pytest.fixture(scope="module")
def engine(talkative_model: Path) -> Engine:
    return tiny_engine(talkative_model)


@pytest.fixture(scope="module")
def client(engine: Engine) -> Iterator[TestClient]:
    with tiny_client(engine) as client:
        yield client


@pytest.fixture(scope="module")
def reference(talkative_model: Path) -> llama_cpp.Llama:
    """llama-cpp-python on the same file, with the chat handler it picks from the GGUF's template."""
    ensure_cpu_backend()
    llama = llama_cpp.Llama(str(talkative_model), n_ctx=N_CTX, verbose=False)
    assert llama.chat_format == "chat_template.default"
    return llama


def completion(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(CHAT, json={"model": TINY, "messages": CONVERSATION, **body})
    assert response.status_code == 200, response.text
    return response.json()


def streamed_content(client: TestClient, **body: Any) -> str:
    body = {"model": TINY, "messages": CONVERSATION, "stream": True, **body}
    response = client.post(CHAT, json=body)
    assert response.status_code == 200, response.text
    events = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    deltas = [json.loads(event)["choices"][0]["delta"] for event in events[:-1]]
    assert not any("reasoning_content" in delta or "tool_calls" in delta for delta in deltas)
    return "".join(delta.get("content") or "" for delta in deltas)


@pytest.mark.parametrize("extra", [{}, {"tools": TOOLS, "tool_choice": "none"}], ids=["no tools", "none"])
def test_a_chat_without_calls_writes_what_llama_cpp_pythons_chat_completion_writes(
    client: TestClient, reference: llama_cpp.Llama, extra: dict[str, Any]
) -> None:
    ours = completion(client, temperature=0, max_tokens=MAX_TOKENS, **extra)
    theirs = reference.create_chat_completion(CONVERSATION, temperature=0, max_tokens=MAX_TOKENS)  # type: ignore[arg-type]
    message = ours["choices"][0]["message"]
    assert ours["usage"]["completion_tokens"] > MAX_TOKENS // 2, "a reply long enough to tell"
    assert message["content"] == theirs["choices"][0]["message"]["content"]  # type: ignore[index]
    assert "reasoning_content" not in message and "tool_calls" not in message
    assert ours["usage"]["prompt_tokens"] == theirs["usage"]["prompt_tokens"]  # type: ignore[index]
    assert ours["usage"]["completion_tokens"] == theirs["usage"]["completion_tokens"]  # type: ignore[index]
    assert ours["choices"][0]["finish_reason"] == theirs["choices"][0]["finish_reason"]  # type: ignore[index]


def test_a_plain_chat_streams_the_same_text_and_ends_at_a_stop_string(client: TestClient) -> None:
    whole = completion(client, temperature=0)["choices"][0]["message"]["content"]
    assert streamed_content(client, temperature=0) == whole
    stop = whole[len(whole) // 2 : len(whole) // 2 + 3]
    assert len(stop) == 3, f"the reply is too short to cut: {whole!r}"
    expected = whole[: whole.index(stop)]
    stopped = completion(client, temperature=0, stop=[stop])
    assert stopped["choices"][0]["message"]["content"] == expected
    assert stopped["choices"][0]["finish_reason"] == "stop"
    assert streamed_content(client, temperature=0, stop=stop) == expected


def test_a_json_schema_response_format_is_written_under_its_grammar(client: TestClient) -> None:
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string", "maxLength": 8}, "bright": {"type": "boolean"}},
        "required": ["colour", "bright"],
    }
    response_format = {"type": "json_schema", "json_schema": {"name": "colour", "schema": schema}}
    for seed in range(3):
        body = completion(client, response_format=response_format, temperature=1.0, seed=seed, max_tokens=64)
        assert body["choices"][0]["finish_reason"] == "stop"
        jsonschema.validate(json.loads(body["choices"][0]["message"]["content"]), schema)


def test_with_tools_the_clients_prompt_comes_first_and_only_the_format_is_added(
    client: TestClient, engine: Engine
) -> None:
    system = "You are a pirate. Speak like one.\n\nNever use the calculator at night."
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "What is 2 + 3?"}]
    body = completion(client, messages=messages, tools=[CALCULATOR], tool_choice="required", max_tokens=8)
    prompt = engine.reply_format.render(
        [SystemMessage(content=system), UserMessage(content="What is 2 + 3?")],
        [ToolSpec.from_openai(CALCULATOR)],
    )
    # The Gemma-like template puts the system message at the start of the first user turn.
    system_turn = prompt.text.split("<end_of_turn>")[0]
    assert system_turn.startswith(f"<bos><start_of_turn>user\n{system}\n\nTools:\n")
    assert "- calculator: Calculate an arithmetic expression." in system_turn
    assert "Each reply starts with 'Thought:'" in system_turn
    assert "Answer the question" not in prompt.text and "Example" not in prompt.text
    assert body["usage"]["prompt_tokens"] == engine.generator.count_tokens(prompt)
