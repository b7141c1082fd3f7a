"""The tool-call format: the conversation laid out by the model's own chat template, with the tools
in its system turn and calls written as `<tool_call>{"name": ..., "arguments": ...}</tool_call>`,
as Qwen and Hermes models are trained to; or, for a template that does not lay out tools, with the
same Hermes-style tools block added to the system message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent.core.events import ContentDelta, ReasoningDelta, TurnEventSink
from localagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    UserMessage,
)
from localagent.formats.base import CachedGrammars, HowWritten, ParsedReply, Prompt, TextSink, shared_starts
from localagent.formats.call_stream import CallSink, WrappedCallReader
from localagent.formats.chat_template import ChatTemplate
from localagent.formats.tool_call.grammar import (
    TOOL_CALL_TAGS,
    ToolCallGrammarOptions,
    Wrapper,
    build_tool_call_grammar,
)
from localagent.formats.tool_call.parser import parse_tool_call_reply, render_calls
from localagent.schema_grammar.compiler import GrammarLimits
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

_RESPONSE_OPEN, _RESPONSE_CLOSE = "<tool_response>\n", "\n</tool_response>"


@dataclass
class ToolCallFormat(CachedGrammars):
    template: ChatTemplate
    max_actions: int = 1
    wrapper: Wrapper = TOOL_CALL_TAGS
    preface: bool = True
    limits: GrammarLimits = field(default_factory=GrammarLimits)
    name: str = field(default="tool_call", init=False)
    stops: tuple[str, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        options = ToolCallGrammarOptions(self.wrapper, self.max_actions, self.preface, self.limits)
        self._build_with(lambda tools, choice: build_tool_call_grammar(tools, choice, options))
        # Without a grammar the model stops at its end of turn; a made-up tool response also ends it.
        self.stops = (_RESPONSE_OPEN.strip(),)

    def render(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Prompt:
        chat = self._chat_messages(messages, tools)
        tool_list = [tool.to_openai() for tool in tools] if self.template.renders_tools else None
        text = self.template.render(chat, tool_list)
        # The system turn is the same for every task; a first user turn is not, but its listing is.
        system = chat[:1] if chat and chat[0]["role"] == "system" else []
        instructions = self.template.render(system, tool_list, generation=False) if system else ""
        return Prompt(text, special=True, shared_starts=shared_starts(text, instructions, messages))

    def parse(
        self, text: str, tools: Sequence[ToolSpec], tool_choice: ToolChoice, how: HowWritten
    ) -> ParsedReply:
        constrained, cut_off, limit = how.constrained, how.cut_off, how.token_limit
        return parse_tool_call_reply(
            text,
            tools,
            tool_choice,
            self.wrapper,
            constrained=constrained,
            cut_off=cut_off,
            token_limit=limit,
        )

    def display(self, on_event: TurnEventSink | None) -> TextSink:
        return _CallStream(on_event, self.wrapper.open or "{").feed

    def calls(self, on_call: CallSink) -> TextSink:
        return WrappedCallReader(on_call, self.wrapper.open or "{").feed

    def _chat_messages(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        native = self.template.renders_tools
        system = next((m.content for m in messages if isinstance(m, SystemMessage)), "")
        if tools and not native:
            system = (
                f"{system}\n\n{prompts.tool_call_instructions(tools)}"
                if system
                else (prompts.tool_call_instructions(tools))
            )
        chat: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        for index, message in enumerate(messages):
            if isinstance(message, UserMessage):
                chat.append({"role": "user", "content": message.content})
            elif isinstance(message, AssistantMessage):
                chat.append({"role": "assistant", "content": self._reply_text(messages, index, message)})
            elif isinstance(message, ToolMessage):
                if native:
                    chat.append({"role": "tool", "content": message.content})
                else:
                    response = f"{_RESPONSE_OPEN}{message.content}{_RESPONSE_CLOSE}"
                    if chat and chat[-1]["role"] == "user" and chat[-1]["content"].endswith(_RESPONSE_CLOSE):
                        chat[-1]["content"] += "\n" + response
                    else:
                        chat.append({"role": "user", "content": response})
        return chat

    def _reply_text(self, messages: Sequence[Message], index: int, message: AssistantMessage) -> str:
        """The reply exactly as the model wrote it: a malformed one as is, else rebuilt from its parts."""
        following = messages[index + 1] if index + 1 < len(messages) else None
        if (isinstance(following, UserMessage) and following.feedback) or not message.tool_requests:
            return message.content
        return (message.reasoning or "") + render_calls(message.tool_requests, self.wrapper)


class _CallStream:
    """A preface (the text before a call) is shown as reasoning; a reply with no call streams as content.

    Until the reply shows which it is (a call opens, or the text runs past its first line), nothing
    is sent.
    """

    def __init__(self, on_event: TurnEventSink | None, opener: str) -> None:
        self._on_event = on_event
        # Without its line break: a model may write `<tool_call>{...` on one line, and the tag's
        # single token arrives before the break does.
        self._opener = opener.strip()
        self._text = ""
        self._sent = 0
        self._state = "undecided"  # then "call" or "answer"

    def feed(self, piece: str) -> None:
        if self._on_event is None or self._state == "call":
            return
        self._text += piece
        if self._state == "undecided":
            cut = self._text.find(self._opener)
            if cut >= 0:
                self._state = "call"
                if self._text[:cut].strip():
                    self._on_event(ReasoningDelta(text=self._text[:cut].strip()))
                return
            # A second line that cannot be the opener's start: no call follows a one-line preface.
            later = re.search(r"\n\s*(\S.*)", self._text, re.DOTALL)
            if later is None or self._opener.startswith(later[1]):
                return
            self._state = "answer"
        self._on_event(ContentDelta(text=self._text[self._sent :]))
        self._sent = len(self._text)
