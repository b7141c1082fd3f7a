"""Agent frameworks that users point at a local server, run against a real `localagent serve`
process on 127.0.0.1 with the default model: smolagents' CodeAgent and ToolCallingAgent and
pydantic-ai's Agent, on a task that needs two tool calls; every reply must parse on the client's
side, and the tool-calling clients must answer right. Beside them, the `openai` SDK's plain chat:
the model's own reply under its template, as llama-cpp-python writes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import llama_cpp
import openai
import pytest
import smolagents
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from server_processes import ServerProcess, localagent_server
from smolagents.memory import ActionStep
from smolagents.utils import AgentParsingError, AgentToolCallError

from localagent.backends.cpu_backend import ensure_cpu_backend
from localagent.models.registry import DEFAULT_MODEL, ResolvedModel

pytestmark = pytest.mark.slow

QUESTION = (
    "How much do 3 box kites cost? Look up the price of one box kite with kite_price, "
    "then multiply it by 3 with the calculator."
)
ANSWER = "12.75"
CALLS: list[str] = []


def kite_price(kite: str) -> str:
    """Look up the price of one kite in the shop.

    Args:
        kite: The kind of kite.
    """
    CALLS.append("kite_price")
    return "4.25" if "box" in kite.lower() else "There is no such kite in the shop."


def calculator(expression: str) -> str:
    """Calculate an arithmetic expression.

    Args:
        expression: The arithmetic expression to calculate.
    """
    CALLS.append("calculator")
    if not re.fullmatch(r"[\d\s.+\-*/()]+", expression):
        raise ValueError(f"not an arithmetic expression: {expression!r}")
    return str(eval(expression, {"__builtins__": {}}))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("serve") / "default.log"
    with localagent_server(log) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_calls() -> None:
    CALLS.clear()


def smolagents_run(agent_class: type[smolagents.MultiStepAgent], server: ServerProcess) -> tuple[str, list]:
    model = smolagents.OpenAIServerModel(
        model_id=DEFAULT_MODEL, api_base=server.url, api_key="none", temperature=0, max_tokens=256
    )
    tools = [smolagents.tool(kite_price), smolagents.tool(calculator)]
    agent = agent_class(tools=tools, model=model, max_steps=4, verbosity_level=-1)
    answer = agent.run(QUESTION)
    steps = [step for step in agent.memory.steps if isinstance(step, ActionStep)]
    for step in steps:
        print(step.step_number, repr(step.model_output), step.tool_calls, step.observations, step.error)
    return str(answer), steps


def test_smolagents_tool_calling_agent_calls_both_tools_and_answers_right(served: ServerProcess) -> None:
    answer, steps = smolagents_run(smolagents.ToolCallingAgent, served)
    assert [step.error for step in steps] == [None] * len(steps), "every reply is a well-formed call"
    assert CALLS[:2] == ["kite_price", "calculator"]
    assert ANSWER in answer


def test_smolagents_code_agent_reads_code_from_every_reply(served: ServerProcess) -> None:
    answer, steps = smolagents_run(smolagents.CodeAgent, served)
    # "Error in code parsing" is smolagents' AgentParsingError: a reply without a code block it reads.
    unread = (AgentParsingError, AgentToolCallError)
    assert not [step.error for step in steps if isinstance(step.error, unread)]
    assert all(step.code_action for step in steps if step.error is None)
    assert "kite_price" in CALLS
    print("code agent:", answer, CALLS)


def test_pydantic_ai_calls_both_tools_and_answers_right(served: ServerProcess) -> None:
    provider = OpenAIProvider(base_url=served.url, api_key="none")
    agent = Agent(
        OpenAIChatModel(DEFAULT_MODEL, provider=provider),
        tools=[kite_price, calculator],
        model_settings={"temperature": 0, "max_tokens": 256},
    )
    result = agent.run_sync(QUESTION)
    print(result.all_messages())
    assert CALLS[:2] == ["kite_price", "calculator"]
    assert ANSWER in result.output


def test_a_chat_without_tools_gets_the_models_own_code_block(served: ServerProcess) -> None:
    client = openai.OpenAI(base_url=served.url, api_key="none", max_retries=0, timeout=600)
    asked = "Write a Python function that adds two numbers. Reply with one fenced code block only."
    reply = client.chat.completions.create(
        model=DEFAULT_MODEL, messages=[{"role": "user", "content": asked}], temperature=0, max_tokens=160
    )
    message = reply.choices[0].message
    print(message.content)
    assert re.search(r"```python\n.*def \w+\(.*\n```", message.content or "", re.DOTALL)
    assert getattr(message, "reasoning_content", None) is None and not message.tool_calls


@pytest.mark.parametrize("instruct_model", ["qwen2.5-coder-0.5b-instruct"], indirect=True)
def test_a_chat_without_tools_writes_what_llama_cpp_python_writes(
    instruct_model: ResolvedModel, tmp_path: Path
) -> None:
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Name three colours of the rainbow, in one sentence."},
    ]
    ensure_cpu_backend()
    reference = llama_cpp.Llama(str(instruct_model.path), n_ctx=2048, verbose=False)
    assert reference.chat_format == "chat_template.default", "llama-cpp-python uses the GGUF's template"
    theirs = reference.create_chat_completion(messages, temperature=0, max_tokens=48)  # type: ignore[arg-type]
    del reference
    flags = ("--model", str(instruct_model.path), "--n-ctx", "2048")
    with localagent_server(tmp_path / "serve.log", *flags) as server:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0, timeout=600)
        ours = client.chat.completions.create(
            messages=messages,  # type: ignore[arg-type]
            model=client.models.list().data[0].id,
            temperature=0,
            max_tokens=48,
        )
    print(repr(ours.choices[0].message.content))
    assert ours.choices[0].message.content == theirs["choices"][0]["message"]["content"]  # type: ignore[index]
    assert ours.usage is not None
    assert ours.usage.prompt_tokens == theirs["usage"]["prompt_tokens"]  # type: ignore[index]
    assert ours.usage.completion_tokens == theirs["usage"]["completion_tokens"] > 5  # type: ignore[index]
