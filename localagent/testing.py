"""Testing your tools and grammars with localagent, in your own pytest.

Installed with localagent, this module is a pytest plugin: the `scripted_model` fixture is there in
every test without an import. The rest is imported as usual:

    from localagent import Agent
    from localagent.testing import answer, assert_grammar_accepts, call

    def test_word_count(scripted_model, tmp_path):
        model = scripted_model([call("word_count", {"text": "to be or not"}), answer("4 words")])
        result = Agent(model=model, tools=[word_count], workspace=tmp_path).run("Count the words")
        assert result.messages[-2].content.startswith("4")  # what the tool returned

    def test_the_grammar_takes_a_call():
        assert_grammar_accepts([word_count], call("word_count", {"text": "a"}))
        assert_grammar_rejects([word_count], call("word_count", {"words": "a"}))

The scripted model replays the replies you give it through the real parser and runner, one per
turn; a test sees exactly what a model writing those replies would cause.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from localagent.backends.scripted import ScriptedTurn, ScriptItem
from localagent.core.messages import Final, ToolChoice, ToolRequests, parse_tool_choice
from localagent.errors import RecoverableTurnError
from localagent.formats.base import HowWritten, ReplyFormat, ReplyGrammar
from localagent.tools.loading import ToolsArgument, select_tools
from localagent.tools.spec import ToolSpec
from localagent.tools.workspace import Workspace

Engine = Literal["lark", "llguidance", "gbnf"]
ScriptedModel = ScriptedTurn
__all__ = [
    "ScriptedModel",
    "answer",
    "assert_grammar_accepts",
    "assert_grammar_rejects",
    "call",
    "reply_grammar",
    "scripted_model",
]


def call(tool: str, arguments: dict[str, Any], thought: str = "I will use a tool.") -> str:
    """A reply that calls `tool`, as a model writes it in the text-tag format."""
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(arguments, ensure_ascii=False)}\n"


def answer(text: str, thought: str = "I know the answer.") -> str:
    """A reply that ends the run with `text`, as a model writes it in the text-tag format."""
    return f"Thought: {thought}\nFinal Answer: {text}"


@pytest.fixture
def scripted_model() -> Callable[[Sequence[ScriptItem]], ScriptedTurn]:
    """Make a model that gives these replies, one per turn: text-tag strings (see `call` and `answer`)
    or chat turns `{"content": ..., "tool_calls": [{"name": ..., "arguments": ...}]}`. Pass it to
    `Agent(model=...)`; its `calls` record what each turn was asked."""

    def make(replies: Sequence[ScriptItem]) -> ScriptedTurn:
        return ScriptedTurn(list(replies))

    return make


def reply_grammar(
    tools: ToolsArgument,
    tool_choice: ToolChoice | str = "auto",
    reply_format: ReplyFormat | None = None,
) -> ReplyGrammar:
    """The grammar a reply must follow with these tools: the grammar decoding runs under.

    `tools` is what `Agent(tools=...)` takes, or a list of ToolSpecs. The format is the text-tag
    format of the embedded model unless `reply_format` gives another (e.g. `ToolCallFormat`).
    """
    from localagent.formats.react.format import ReactFormat

    specs = _specs(tools)
    return (reply_format or ReactFormat()).grammar(specs, _choice(tool_choice))


def assert_grammar_accepts(
    tools: ToolsArgument,
    reply: str,
    *,
    tool_choice: ToolChoice | str = "auto",
    reply_format: ReplyFormat | None = None,
    engines: Sequence[Engine] = ("lark", "llguidance"),
) -> Final | ToolRequests:
    """Assert the grammar for `tools` lets a model write `reply`, in each engine; returns the reply
    as the agent reads it, so a test can check the arguments too."""
    from localagent.formats.react.format import ReactFormat

    reply_format = reply_format or ReactFormat()
    _judge(reply_grammar(tools, tool_choice, reply_format), reply, engines, accept=True)
    try:
        parsed = reply_format.parse(reply, _specs(tools), _choice(tool_choice), HowWritten())
    except RecoverableTurnError as error:
        raise AssertionError(
            f"the grammar accepts {reply!r}, but the agent cannot read it: {error}"
        ) from None
    return parsed.result


def assert_grammar_rejects(
    tools: ToolsArgument,
    reply: str,
    *,
    tool_choice: ToolChoice | str = "auto",
    reply_format: ReplyFormat | None = None,
    engines: Sequence[Engine] = ("lark", "llguidance"),
) -> None:
    """Assert no engine lets a model write `reply` under the grammar for `tools`."""
    _judge(reply_grammar(tools, tool_choice, reply_format), reply, engines, accept=False)


def _judge(grammar: ReplyGrammar, reply: str, engines: Sequence[Engine], *, accept: bool) -> None:
    wrong = [engine for engine in engines if _accepts(engine, grammar, reply) != accept]
    if wrong:
        verdict = "refused" if accept else "accepted"
        raise AssertionError(f"{', '.join(wrong)} {verdict} {reply!r} under the grammar:\n{grammar.lark}")


def _specs(tools: ToolsArgument) -> list[ToolSpec]:
    if not isinstance(tools, str | None) and all(isinstance(tool, ToolSpec) for tool in tools):
        return list(tools)  # type: ignore[arg-type]
    return [tool.spec for tool in select_tools(tools, Workspace(Path.cwd()))]


def _choice(tool_choice: ToolChoice | str) -> ToolChoice:
    return parse_tool_choice(tool_choice) if isinstance(tool_choice, str) else tool_choice


def _accepts(engine: Engine, grammar: ReplyGrammar, reply: str) -> bool:
    # The engines load llama.cpp and the embedded model's vocabulary: only when a test asks.
    from localagent.grammar_checks.files import lark_accepts, llamacpp_accepts, llguidance_accepts

    if engine == "lark":
        return lark_accepts(grammar.lark, reply)
    if engine == "llguidance":
        return llguidance_accepts(grammar.lark, reply)
    return llamacpp_accepts(grammar.gbnf, reply)
