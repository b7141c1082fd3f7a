"""The concrete text-tag grammar for one tool set and tool choice, generated from grammars/texttag.lark."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from localagent.core.messages import ToolChoice
from localagent.formats.base import ReplyGrammar
from localagent.formats.grammar_building import (
    ToolCalls,
    finished_grammar,
    grammar_header,
    reply_choices,
    tool_calls,
)
from localagent.formats.react.template import template_definitions
from localagent.schema_grammar.compiler import GrammarLimits
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
    choices = reply_choices(tools, tool_choice, options.max_actions)
    definitions = dict(template_definitions())
    for generic in ("TOOL_NAME", "ACTION_INPUT"):
        del definitions[generic]

    plain = options.prompt_format == "plain"
    if choices.may_act and choices.may_answer:
        definitions["start"] = "thought (actions | final)"
    elif choices.may_act:
        definitions["start"] = "thought actions"
    else:
        definitions["start"] = "thought final"

    calls: ToolCalls | None = None
    if choices.may_act:
        # The reply may end after any action: where the model starts an observation, or ends its turn.
        definitions["actions"] = f"action~1..{options.max_actions} actions_end"
        calls = tool_calls(
            choices.tools, options.limits, lambda name, arguments: f'"{name}" "\\nAction Input: " {arguments}'
        )
        definitions["tool_call"] = calls.alternatives
    else:
        for unreachable in ("actions", "action", "tool_call", "actions_end"):
            del definitions[unreachable]

    if choices.may_answer:
        if plain:
            definitions["ANSWER"] = _PLAIN_ANSWER
        else:
            definitions["final"] = '"Final Answer: " ANSWER'
            del definitions["final_end"]
    else:
        for unreachable in ("final", "final_end", "ANSWER"):
            del definitions[unreachable]

    header = grammar_header("text-tag", choices.tools, tool_choice, f"{options.prompt_format} prompt format")
    return finished_grammar(header, definitions, calls, options.limits, choices.tools)
