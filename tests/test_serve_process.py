"""`localagent serve` as a real process on 127.0.0.1, on real models, driven by real clients: the
official `openai` SDK, localagent's own runner, Node's fetch (the examples in docs/serving.md), and raw HTTP.

The default model (Qwen2.5-Coder 1.5B Instruct) answers the SDK for every tool_choice; the
embedded Gemma 3 270M serves where the test is about the wiring (it is fast, and llama-cpp-python's
server runs it too); the 0.5B Qwen shows both reply formats.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import openai
import pytest
from openai.types.chat import ChatCompletionChunk
from server_processes import ServerProcess, localagent_server
from tiny_server import CALCULATOR, READ_FILE

from localagent.models.registry import DEFAULT_MODEL, EMBEDDED_MODEL, ResolvedModel

pytestmark = pytest.mark.slow

SERVING = Path(__file__).resolve().parents[1] / "docs" / "serving.md"
TASK = "What is 12 times 7?"
MESSAGES = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": TASK},
]


@pytest.fixture(scope="module")
def gemma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("serve") / "gemma.log"
    with localagent_server(log, "--model", EMBEDDED_MODEL, "--n-ctx", "4096") as server:
        yield server


@pytest.fixture(scope="module")
def default_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("serve") / "default.log"
    with localagent_server(log, "--n-ctx", "4096") as server:
        yield server


def sdk(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=600)


@dataclass
class StreamRecord:
    """What a stream sent, as a client sees it."""

    chunks: int = 0
    content: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    argument_deltas: int = 0
    usage: dict[str, Any] | None = None
    error: str | None = None

    def add(self, chunk: Any) -> None:
        self.chunks += 1
        if chunk.usage:
            self.usage = chunk.usage.model_dump()
        for choice in chunk.choices:
            delta = choice.delta
            self.content += delta.content or ""
            self.reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
            for call in delta.tool_calls or []:
                if call.id:
                    assert call.function and call.function.name, "the id and name come in the first delta"
                    assert call.index == len(self.calls)
                    self.calls.append({"id": call.id, "name": call.function.name, "arguments": ""})
                if call.function and call.function.arguments:
                    self.calls[call.index]["arguments"] += call.function.arguments
                    self.argument_deltas += 1
            self.finish_reason = choice.finish_reason or self.finish_reason


def stream(client: openai.OpenAI, **body: Any) -> StreamRecord:
    record = StreamRecord()
    try:
        for chunk in client.chat.completions.create(stream=True, **body):
            record.add(chunk)
    except openai.APIError as error:  # recorded: what the server did is the finding
        record.error = f"{type(error).__name__}: {error}"
    return record


def assert_valid_call(call: dict[str, Any], tools: list[dict[str, Any]]) -> None:
    """A call to one of `tools`, with an id, and arguments its schema accepts: what the grammar
    guarantees, whatever the model chose to write."""
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
    assert call["name"] in schemas and call["id"].startswith("call_"), call
    jsonschema.validate(json.loads(call["arguments"]), schemas[call["name"]])


@dataclass
class RawStreamRecord(StreamRecord):
    """A stream read off the wire: the status, every data line, and the chunks as the SDK types them."""

    status: int = 0
    lines: list[str] = field(default_factory=list)


def raw_stream(server: ServerProcess, body: dict[str, Any]) -> RawStreamRecord:
    record = RawStreamRecord()
    with (
        httpx2.Client(timeout=600) as client,
        client.stream("POST", f"{server.url}/chat/completions", json={**body, "stream": True}) as response,
    ):
        record.status = response.status_code
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            record.lines.append(line)
            data = line.removeprefix("data: ")
            if data == "[DONE]":
                continue
            parsed = json.loads(data)
            if "error" in parsed:
                record.error = json.dumps(parsed["error"])
            else:
                record.add(ChatCompletionChunk.model_validate(parsed))
    return record


# --- the SDK, every tool choice -------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(
    ("tools", "choice", "called"),
    [
        ([CALCULATOR], "auto", "calculator"),
        ([CALCULATOR], "required", "calculator"),
        # The model would rather calculate: the named tool is called all the same.
        ([CALCULATOR, READ_FILE], {"type": "function", "function": {"name": "read_file"}}, "read_file"),
        ([CALCULATOR], "none", None),
    ],
    ids=["auto", "required", "named", "none"],
)
def test_the_openai_sdk_gets_calls_for_every_tool_choice(
    default_model: ServerProcess, tools: list[dict[str, Any]], choice: Any, called: str | None, streamed: bool
) -> None:
    body = {
        "model": DEFAULT_MODEL,
        "messages": MESSAGES,
        "tools": tools,
        "tool_choice": choice,
        "max_tokens": 96,
        "temperature": 0,
    }
    client = sdk(default_model)
    if streamed:
        record = stream(client, stream_options={"include_usage": True}, **body)
        reason, content, calls = record.finish_reason, record.content, record.calls
        assert record.usage is not None and record.usage["prompt_tokens"] > 0
    else:
        completion = client.chat.completions.create(**body)
        message = completion.choices[0].message
        reason, content = completion.choices[0].finish_reason, message.content
        calls = [
            {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in message.tool_calls or []
        ]
    print(choice, reason, repr(content), calls)  # shown with -s: what the model did
    if called is None:
        assert (reason, calls) == ("stop", []) and content and content.strip()
        return
    assert reason == "tool_calls"
    (call,) = calls
    assert call["name"] == called
    assert_valid_call(call, tools)
    if streamed:
        assert record.argument_deltas > 1, "the arguments streamed as they were written, not in one piece"


# --- llama-cpp-python's server and localagent serve, side by side ------------------------------------


def test_only_localagent_streams_the_call_that_tool_choice_auto_asks_for(
    llama_server: ServerProcess, gemma: ServerProcess, tmp_path: Path
) -> None:
    body = {
        "model": EMBEDDED_MODEL,
        "messages": MESSAGES,
        "tools": [CALCULATOR],
        "tool_choice": "auto",
        "max_tokens": 96,
        "temperature": 0,
    }
    records = {
        name: raw_stream(server, body)
        for name, server in (("llama_cpp.server", llama_server), ("localagent serve", gemma))
    }
    report = {name: record.__dict__ for name, record in records.items()}
    (tmp_path / "side_by_side.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(json.dumps(report, indent=1))  # the record of what each returned, shown with -s
    llama, ours = records["llama_cpp.server"], records["localagent serve"]
    # llama-cpp-python 0.3.x answers 200, then its handler raises ("Automatic streaming tool choice
    # is not supported") and the stream ends with no event at all: no call, no finish_reason.
    assert llama.calls == [] and llama.finish_reason != "tool_calls"
    assert ours.status == 200 and ours.error is None and ours.finish_reason == "tool_calls"
    assert ours.lines[-1] == "data: [DONE]"
    (call,) = ours.calls
    assert_valid_call(call, [CALCULATOR])


# --- an agent loop over HTTP reuses the KV cache ---------------------------------------------------------


def test_a_five_step_loop_evaluates_only_the_new_tokens_of_each_request(gemma: ServerProcess) -> None:
    client = sdk(gemma)
    messages: list[dict[str, Any]] = [*MESSAGES]
    figures = []
    for step in range(1, 6):
        completion = client.chat.completions.create(
            model=EMBEDDED_MODEL,
            messages=messages,
            tools=[CALCULATOR],
            tool_choice="required" if step < 5 else "none",
            max_tokens=64,
            temperature=0,
        )
        usage = completion.usage
        assert usage is not None and usage.prompt_tokens_details is not None
        figures.append(
            (usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens, usage.completion_tokens)
        )
        message = completion.choices[0].message
        # A client that keeps no reasoning, as most do: the server restores its reply from the call ids.
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [c.model_dump() for c in message.tool_calls or []],
            }
        )
        messages.extend(
            {"role": "tool", "tool_call_id": c.id, "content": "84"} for c in message.tool_calls or []
        )
    print("step: prompt tokens, cached, generated:", figures)
    for (prompt, _, generated), (next_prompt, cached, _) in itertools.pairwise(figures):
        held = prompt + generated
        assert cached >= held - 1, "the last request's prompt and reply were all still in the KV cache"
        assert next_prompt - cached <= 16, "only the tool result and its markers were evaluated"


# --- a bearer key ---------------------------------------------------------------------------------------


def test_a_server_started_with_a_key_answers_only_requests_that_carry_it(
    tiny_model_chat: Path, tmp_path: Path
) -> None:
    model = tmp_path / "tiny.gguf"
    model.symlink_to(tiny_model_chat)
    with localagent_server(tmp_path / "serve.log", "--model", str(model), api_key="s3cret-key") as server:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            refused = httpx2.get(f"{server.url}/models", headers=headers, timeout=30)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            sdk(server).models.list()
        keyed = openai.OpenAI(base_url=server.url, api_key="s3cret-key", max_retries=0)
        assert keyed.models.list().data[0].id == "tiny.gguf"


# --- a client that goes away ------------------------------------------------------------------------------


def test_a_client_that_disconnects_cancels_its_generation(gemma: ServerProcess) -> None:
    body = {
        "prompt": "Count to one thousand: 1, 2, 3, 4,",
        "max_tokens": 3000,
        "stream": True,
        "temperature": 0,
    }
    with (
        httpx2.Client(timeout=300) as client,
        client.stream("POST", f"{gemma.url}/completions", json=body) as response,
    ):
        assert response.status_code == 200
        lines = response.iter_lines()
        received = [line for line, _ in zip(lines, range(6), strict=False) if line.startswith("data: ")]
        assert received
    deadline = time.monotonic() + 120
    while "completions (stream): cancelled" not in gemma.log_text():
        assert time.monotonic() < deadline, gemma.tail()
        time.sleep(0.5)
    cancelled = re.search(r"completions \(stream\): cancelled.*?(\d+) generated", gemma.log_text())
    assert cancelled and int(cancelled[1]) < 3000, gemma.tail()
    after = sdk(gemma).completions.create(model=EMBEDDED_MODEL, prompt="Hello", max_tokens=4)
    assert after.choices[0].finish_reason in ("stop", "length")


# --- malformed requests against the process -------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code_or_param"),
    [
        (b"{not json", 400, None),
        ({"messages": MESSAGES, "frobnicate": True}, 400, "frobnicate"),
        (
            {
                "messages": MESSAGES,
                "tools": [CALCULATOR],
                "tool_choice": {"type": "function", "function": {"name": "nope"}},
            },
            400,
            "tool_choice",
        ),
        (
            {
                "messages": MESSAGES,
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": "f", "parameters": {"type": "object", "required": "x"}},
                    }
                ],
            },
            400,
            "invalid_function_parameters",
        ),
        ({"messages": [{"role": "user", "content": "many words " * 4000}]}, 400, "context_length_exceeded"),
        ({"messages": MESSAGES, "model": "gpt-4o"}, 404, "model_not_found"),
    ],
)
def test_bad_requests_to_the_process_get_json_errors_and_it_goes_on(
    gemma: ServerProcess, body: Any, status: int, code_or_param: str | None
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = httpx2.post(
        f"{gemma.url}/chat/completions",
        content=content,
        headers={"content-type": "application/json"},
        timeout=300,
    )
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"]
    if code_or_param is not None:
        assert code_or_param in (error["code"], error["param"]), error
    assert gemma.running()
    models = httpx2.get(f"{gemma.url}/models", timeout=30).json()
    assert models["data"][0]["id"] == EMBEDDED_MODEL


# --- localagent's own clients ----------------------------------------------------------------------------


def run_cli(*args: str, timeout: float = 900) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "localagent", *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.stdout, f"no output (exit {done.returncode}):\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("mode", ["chat", "completions"])
def test_localagent_run_against_localagent_serve(gemma: ServerProcess, tmp_path: Path, mode: str) -> None:
    run = run_cli(
        "run", TASK, "--api-base", gemma.url, "--api-mode", mode, "--model", EMBEDDED_MODEL,
        "--tools", "calculator", "--max-tokens", "64", "--max-steps", "2", "--workspace", str(tmp_path),
        "--transcript", str(tmp_path / "run.jsonl"), "--json",
    )  # fmt: skip
    messages = run["messages"]
    print(mode, run["status"], run["answer"], run["usage"])
    assert run["status"] == "final" and run["answer"].strip()
    requests = [r for m in messages if m["role"] == "assistant" for r in m["tool_requests"]]
    assert requests and all(r["name"] == "calculator" and r["parse_error"] is None for r in requests)
    assert {r["id"] for r in requests} <= {m["request_id"] for m in messages if m["role"] == "tool"}


def test_eval_tasks_over_http_give_the_model_its_system_prompt_without_localagents_examples(
    gemma: ServerProcess, tmp_path: Path
) -> None:
    # Tasks the embedded model finishes without a malformed reply (a tool call, then an answer).
    chosen = ["read-python-version", "list-top-level", "no_tool-japan-capital"]
    tasks = ["--model", EMBEDDED_MODEL, "--max-steps", "2", "--max-tokens", "96"]
    for task in chosen:
        tasks += ["--task", task]
    folders = {"local": tmp_path / "local", "served": tmp_path / "served"}
    local = run_cli("eval", "tasks", "--json", "--transcripts", str(folders["local"]), *tasks, timeout=1500)
    served = run_cli(
        "eval", "tasks", "--json", "--transcripts", str(folders["served"]), "--api-base", gemma.url,
        *tasks, timeout=1500,
    )  # fmt: skip
    assert served["backend"].startswith("openai-chat")

    def outcome(task: dict[str, Any]) -> tuple[Any, ...]:
        return task["id"], task["success"], task["status"], task["steps"], task["answer"]

    print("local: ", [outcome(t) for t in local["tasks"]])
    print("served:", [outcome(t) for t in served["tasks"]])
    compared = 0
    for here, there in zip(local["tasks"], served["tasks"], strict=True):
        assert here["id"] == there["id"] and there["status"] in ("final", "max_steps"), there
        # The server adds only the tools and the reply's shape to the system prompt the client sent,
        # not the worked examples and agent instructions the local turn renders. (Without them the
        # 270M model writes a malformed first reply more often; such a reply reports no usage.)
        first = {name: first_step_usage(folder / f"{here['id']}.jsonl") for name, folder in folders.items()}
        if first["served"] is not None:
            compared += 1
            assert 0 < first["served"]["prompt_tokens"] < first["local"]["prompt_tokens"], first
    assert compared >= 2


def first_step_usage(transcript: Path) -> dict[str, Any] | None:
    """What the first reply cost; None when it was malformed (its usage is not recorded)."""
    records = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    return next(r["usage"] for r in records if r["type"] == "turn_finished" and r["step"] == 1)


# --- the examples in docs/serving.md ---------------------------------------------------------------


def readme_example(kind: str) -> str:
    text = SERVING.read_text(encoding="utf-8")
    found = re.search(rf"<!-- serve-example: {kind} -->\n```\w+\n(.*?)```", text, re.DOTALL)
    assert found, f"docs/serving.md has no {kind} example for localagent serve"
    return found[1]


def test_the_readme_fetch_loop_runs_to_an_answer(gemma: ServerProcess, tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "this test runs the example in docs/serving.md with Node 18 or newer"
    script = tmp_path / "loop.mjs"
    script.write_text(readme_example("node"), encoding="utf-8")
    done = subprocess.run(
        [node, str(script)],
        capture_output=True,
        text=True,
        timeout=900,
        env={"LOCALAGENT_URL": gemma.url, "PATH": ""},
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1].strip(), "the loop ended with the model's answer"
    assert all(" -> " in line for line in lines[:-1]), "every other line is a tool call and its result"


def test_the_readme_sdk_example_streams_a_call(gemma: ServerProcess, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_example("python"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=900,
        env={"LOCALAGENT_URL": gemma.url},
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr
    call, usage = done.stdout.strip().splitlines()
    name, arguments = call.split(" ", 1)
    assert name == "calculator" and isinstance(json.loads(arguments)["expression"], str)
    assert re.fullmatch(r"\d+ prompt tokens, \d+ generated", usage)


# --- an instruct model, both reply formats -------------------------------------------------------------


@pytest.mark.parametrize("instruct_model", ["qwen2.5-coder-0.5b-instruct"], indirect=True)
@pytest.mark.parametrize("tool_format", ["react", "tool_call"])
def test_an_instruct_model_streams_calls_in_either_format(
    instruct_model: ResolvedModel, tool_format: str, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    with localagent_server(log, "--model", str(instruct_model.path), "--tool-format", tool_format) as server:
        client = sdk(server)
        model = client.models.list().data[0].id
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "Read the file notes.txt and tell me what it says."}],
            "tools": [CALCULATOR, READ_FILE],
            "max_tokens": 128,
            "temperature": 0,
        }
        record = stream(client, **body)
        print(tool_format, record.__dict__)
        assert f"({tool_format} format" in server.log_text()
        assert record.finish_reason == "tool_calls"
        (call,) = record.calls
        assert_valid_call(call, [CALCULATOR, READ_FILE])
        whole = client.chat.completions.create(**body)
        assert (whole.choices[0].message.tool_calls or [])[0].function.arguments == call["arguments"]
