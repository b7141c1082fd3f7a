"""The grammar of a reply in the tool-call format, for one tool set and tool choice.

A reply is either an answer in plain text, or an optional preface (a line of text) and then tool
calls, each wrapped as the model's chat template writes them:

    <tool_call>
    {"name": "read_file", "arguments": {"path": "notes.txt"}}
    </tool_call>

Text may not hold `<`, `{` or a backtick, so the moment the model opens a call, in whatever way it
starts one, the grammar knows the reply is a call; and a reply ends right after its last call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from localagent.core.messages import ToolChoice
from localagent.formats.base import ReplyGrammar
from localagent.formats.grammar_building import (
    ToolCalls,
    finished_grammar,
    grammar_header,
    reply_choices,
    tool_calls,
)
from localagent.schema_grammar.compiler import GrammarLimits
from localagent.tools.spec import ToolSpec


@dataclass(frozen=True)
class Wrapper:
    """How one call is written around its JSON object."""

    open: str
    close: str


TOOL_CALL_TAGS = Wrapper("<tool_call>\n", "\n</tool_call>")
JSON_FENCE = Wrapper("```json\n", "\n```")
BARE_JSON = Wrapper("", "")
WRAPPERS = {"tool_call": TOOL_CALL_TAGS, "json_fence": JSON_FENCE, "bare": BARE_JSON}


@dataclass(frozen=True)
class ToolCallGrammarOptions:
    wrapper: Wrapper = TOOL_CALL_TAGS
    max_actions: int = 1
    # A line of text before the calls: what the model means to do.
    preface: bool = True
    limits: GrammarLimits = field(default_factory=GrammarLimits)


def lark_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def call_prefix(name: str) -> str:
    """What a call's JSON object says up to its arguments."""
    return f'{{"name": "{name}", "arguments": '


def build_tool_call_grammar(
    tools: Sequence[ToolSpec], tool_choice: ToolChoice, options: ToolCallGrammarOptions | None = None
) -> ReplyGrammar:
    options = options or ToolCallGrammarOptions()
    choices = reply_choices(tools, tool_choice, options.max_actions)
    wrapper = options.wrapper
    # Text (an answer, or the line before a call) holds nothing that could open a call in any of
    # the ways models write one: <tool_call>, <tools>, ```json, or a bare JSON object.
    banned = "<{`"
    rules: dict[str, str] = {}
    branches = []
    calls: ToolCalls | None = None
    if choices.may_act:
        preface = "PREFACE? " if options.preface else ""
        branches.append(f"{preface}calls")
        more = f' ("\\n" call)~0..{options.max_actions - 1}' if options.max_actions > 1 else ""
        rules["calls"] = f"call{more}"
        rules["call"] = (
            f"{lark_string(wrapper.open)} call_body {lark_string(wrapper.close)}"
            if wrapper.open
            else "call_body"
        )
        calls = tool_calls(
            choices.tools,
            options.limits,
            lambda name, arguments: f'{lark_string(call_prefix(name))} {arguments} "}}"',
        )
        rules["call_body"] = calls.alternatives
        # One line, then one or two line breaks before the first call.
        rules["PREFACE"] = rf"/[^{banned}\s][^{banned}\n]{{0,300}}\n\n?/"
    if choices.may_answer:
        branches.append("ANSWER")
        rules["ANSWER"] = rf"/[^{banned}\s][^{banned}]{{0,5999}}/"
    rules = {"start": " | ".join(branches), **rules}
    shape = f"wrapped as {wrapper.open.strip()}…{wrapper.close.strip()}" if wrapper.open else "as bare JSON"
    detail = f"calls {shape}, at most {options.max_actions}"
    header = grammar_header("tool-call", choices.tools, tool_choice, detail)
    return finished_grammar(header, rules, calls, options.limits, choices.tools)
