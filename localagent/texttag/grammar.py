"""The concrete text-tag grammar for one tool set and tool choice, generated from grammars/texttag.lark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from localagent.errors import LocalagentError
from localagent.messages import NamedToolChoice, ToolChoice, describe_tool_choice
from localagent.schema_grammar.compiler import (
    GrammarLimits,
    reachable_rules,
    render_rules,
    schema_rules,
    shared_rules,
)
from localagent.schema_grammar.gbnf import lark_to_gbnf
from localagent.texttag.template import template_definitions
from localagent.tools.spec import ToolSpec

PromptFormat = Literal["plain", "chat"]
# A base model would run on past its answer into a next Question, so a plain answer is one line.
_PLAIN_ANSWER = r"/[^\n]{1,2000}/"


class GrammarBuildError(LocalagentError):
    pass


@dataclass(frozen=True)
class GrammarOptions:
    max_actions: int = 8
    prompt_format: PromptFormat = "plain"
    limits: GrammarLimits = field(default_factory=GrammarLimits)


@dataclass(frozen=True)
class TextTagGrammar:
    lark: str
    tool_names: tuple[str, ...]
    # Keywords the grammar only approximates; parsed arguments are validated against the schema anyway.
    loose: tuple[str, ...]

    @cached_property
    def gbnf(self) -> str:
        return lark_to_gbnf(self.lark)


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


def build_grammar(
    tools: Sequence[ToolSpec], tool_choice: ToolChoice, options: GrammarOptions | None = None
) -> TextTagGrammar:
    options = options or GrammarOptions()
    if options.max_actions < 1:
        raise GrammarBuildError("max_actions must be at least 1")
    callable_tools = allowed_tools(tools, tool_choice)
    definitions = dict(template_definitions())
    for generic in ("TOOL_NAME", "ACTION_INPUT"):
        del definitions[generic]

    plain = options.prompt_format == "plain"
    may_act = bool(callable_tools)
    may_answer = tool_choice in ("auto", "none") or not may_act
    if may_act and may_answer:
        definitions["start"] = "thought (actions | final)"
    elif may_act:
        definitions["start"] = "thought actions"
    else:
        definitions["start"] = "thought final"

    loose: list[str] = []
    tool_rules: dict[str, str] = {}
    if may_act:
        end = " actions_end" if plain else ""
        definitions["actions"] = f"action~1..{options.max_actions}{end}"
        alternatives = []
        for index, tool in enumerate(callable_tools):
            rules = schema_rules(tool.parameters, f"t{index}", options.limits)
            alternatives.append(f'"{tool.name}" "\\nAction Input: " {rules.root}')
            tool_rules.update(rules.rules)
            loose.extend(f"{tool.name}: {note}" for note in rules.loose)
        definitions["tool_call"] = " | ".join(alternatives)
    else:
        for unreachable in ("actions", "action", "tool_call"):
            del definitions[unreachable]
    if not plain or not may_act:
        del definitions["actions_end"]

    if may_answer:
        if plain:
            definitions["ANSWER"] = _PLAIN_ANSWER
        else:
            definitions["final"] = '"Final Answer: " ANSWER'
            del definitions["final_end"]
    else:
        for unreachable in ("final", "final_end", "ANSWER"):
            del definitions[unreachable]

    header = (
        f"// localagent text-tag grammar: tools {', '.join(t.name for t in callable_tools) or '(none)'}; "
        f"tool choice {describe_tool_choice(tool_choice)}; {options.prompt_format} prompt format\n"
    )
    if may_act:
        definitions.update(shared_rules(options.limits))
        definitions.update(tool_rules)
    text = header + render_rules(reachable_rules(definitions, "start"))
    return TextTagGrammar(text, tuple(t.name for t in callable_tools), tuple(loose))


class GrammarCache:
    """One grammar per tool set and tool choice, built on first use."""

    def __init__(self, options: GrammarOptions) -> None:
        self.options = options
        self._grammars: dict[tuple[str, str], TextTagGrammar] = {}

    def get(self, tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> TextTagGrammar:
        choice = f"tool:{tool_choice.name}" if isinstance(tool_choice, NamedToolChoice) else tool_choice
        key = ("\x00".join(tool.model_dump_json() for tool in tools), choice)
        grammar = self._grammars.get(key)
        if grammar is None:
            grammar = self._grammars[key] = build_grammar(tools, tool_choice, self.options)
        return grammar
