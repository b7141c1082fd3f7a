"""The concrete text-tag grammar for one tool set and tool choice, generated from grammars/texttag.lark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from localagent.formats.base import GrammarBuildError, ReplyGrammar, allowed_tools, grammar_header
from localagent.messages import ToolChoice
from localagent.schema_grammar.compiler import (
    GrammarLimits,
    SchemaGrammarError,
    reachable_rules,
    render_rules,
    schema_rules,
    shared_rules,
)
from localagent.texttag.template import template_definitions
from localagent.tools.spec import ToolSpec

PromptFormat = Literal["plain", "chat"]
# A base model would run on past its answer into a next Question, so a plain answer is one line.
_PLAIN_ANSWER = r"/[^\n]{1,2000}/"


@dataclass(frozen=True)
class GrammarOptions:
    max_actions: int = 1
    prompt_format: PromptFormat = "plain"
    limits: GrammarLimits = field(default_factory=GrammarLimits)


def build_grammar(
    tools: Sequence[ToolSpec], tool_choice: ToolChoice, options: GrammarOptions | None = None
) -> ReplyGrammar:
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
        # The reply may end after any action: where the model starts an observation, or ends its turn.
        definitions["actions"] = f"action~1..{options.max_actions} actions_end"
        alternatives = []
        for index, tool in enumerate(callable_tools):
            try:
                rules = schema_rules(tool.grammar_schema, f"t{index}", options.limits, root_type="object")
            except SchemaGrammarError as error:
                raise GrammarBuildError(f"tool {tool.name!r}: {error}") from None
            alternatives.append(f'"{tool.name}" "\\nAction Input: " {rules.root}')
            tool_rules.update(rules.rules)
            loose.extend(f"{tool.name}: {note}" for note in rules.loose)
        definitions["tool_call"] = " | ".join(alternatives)
    else:
        for unreachable in ("actions", "action", "tool_call"):
            del definitions[unreachable]
    if not may_act:
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

    header = grammar_header("text-tag", callable_tools, tool_choice, f"{options.prompt_format} prompt format")
    if may_act:
        definitions.update(shared_rules(options.limits))
        definitions.update(tool_rules)
    text = header + render_rules(reachable_rules(definitions, "start"))
    return ReplyGrammar(text, tuple(t.name for t in callable_tools), tuple(loose))
