"""The steps every format's reply grammar shares: which tools a reply may call, each tool's call
with its arguments under the tool's schema, and the finished grammar's text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from localagent.core.messages import NamedToolChoice, ToolChoice, describe_tool_choice
from localagent.formats.base import GrammarBuildError, ReplyGrammar
from localagent.schema_grammar.compiler import (
    GrammarLimits,
    SchemaGrammarError,
    reachable_rules,
    render_rules,
    schema_rules,
    shared_rules,
)
from localagent.tools.spec import ToolSpec


@dataclass(frozen=True)
class ReplyChoices:
    """What a reply may be under one tool choice."""

    tools: list[ToolSpec]  # the tools it may call
    may_act: bool
    may_answer: bool


@dataclass(frozen=True)
class ToolCalls:
    """Any one tool's call, as alternatives of one rule, and the rules their arguments need."""

    alternatives: str
    rules: dict[str, str]
    loose: tuple[str, ...]


def reply_choices(tools: Sequence[ToolSpec], tool_choice: ToolChoice, max_actions: int) -> ReplyChoices:
    if max_actions < 1:
        raise GrammarBuildError("max_actions must be at least 1")
    callable_tools = allowed_tools(tools, tool_choice)
    may_act = bool(callable_tools)
    return ReplyChoices(callable_tools, may_act, tool_choice in ("auto", "none") or not may_act)


def allowed_tools(tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> list[ToolSpec]:
    """The tools a reply may call under this choice; raises GrammarBuildError when none can be."""
    if tool_choice == "none":
        return []
    if isinstance(tool_choice, NamedToolChoice):
        named = [tool for tool in tools if tool.name == tool_choice.name]
        if not named:
            known = ", ".join(tool.name for tool in tools) or "(none)"
            raise GrammarBuildError(
                f"tool choice names {tool_choice.name!r}, which is not a tool; tools: {known}"
            )
        return named
    if tool_choice == "required" and not tools:
        raise GrammarBuildError("tool choice 'required' needs at least one tool")
    return list(tools)


def tool_calls(
    tools: Sequence[ToolSpec], limits: GrammarLimits, call: Callable[[str, str], str]
) -> ToolCalls:
    """`call(name, arguments)` writes one tool's call around the rule of its arguments."""
    alternatives = []
    rules: dict[str, str] = {}
    loose: list[str] = []
    for index, tool in enumerate(tools):
        try:
            converted = schema_rules(tool.grammar_schema, f"t{index}", limits, root_type="object")
        except SchemaGrammarError as error:
            raise GrammarBuildError(f"tool {tool.name!r}: {error}") from None
        alternatives.append(call(tool.name, converted.root))
        rules.update(converted.rules)
        loose.extend(f"{tool.name}: {note}" for note in converted.loose)
    return ToolCalls(" | ".join(alternatives), rules, tuple(loose))


def finished_grammar(
    header: str,
    rules: dict[str, str],
    calls: ToolCalls | None,
    limits: GrammarLimits,
    tools: Sequence[ToolSpec],
) -> ReplyGrammar:
    """The grammar from its `start` rule, with the rules the calls' arguments need when it has calls."""
    if calls is not None:
        rules = {**rules, **shared_rules(limits), **calls.rules}
    text = header + render_rules(reachable_rules(rules, "start"))
    return ReplyGrammar(text, tuple(tool.name for tool in tools), calls.loose if calls else ())


def grammar_header(format_name: str, tools: Sequence[ToolSpec], tool_choice: ToolChoice, detail: str) -> str:
    names = ", ".join(tool.name for tool in tools) or "(none)"
    return (
        f"// localagent {format_name} grammar: tools {names}; "
        f"tool choice {describe_tool_choice(tool_choice)}; {detail}\n"
    )
