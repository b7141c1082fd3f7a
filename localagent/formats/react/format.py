"""The text-tag (ReAct) format: Thought, then Action and Action Input, or Final Answer.

A base model gets the plain prompt (instructions, then Question / Thought / Observation text); a
model with a chat template gets the same conversation laid out by its template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from localagent.core.events import TurnEventSink
from localagent.core.messages import Message, ToolChoice
from localagent.formats.base import CachedGrammars, HowWritten, ParsedReply, Prompt, TextSink, shared_starts
from localagent.formats.call_stream import CallSink, ReactCallReader
from localagent.formats.chat_template import ChatTemplate
from localagent.formats.react.grammar import GrammarOptions, build_grammar
from localagent.formats.react.parser import parse_reply
from localagent.formats.react.render import (
    UNCONSTRAINED_STOPS,
    chat_messages,
    instructions_of,
    prompt_turns,
    render_plain,
)
from localagent.formats.react.stream import ReplyStream
from localagent.schema_grammar.compiler import GrammarLimits
from localagent.tools.spec import ToolSpec


@dataclass
class ReactFormat(CachedGrammars):
    template: ChatTemplate | None = None
    max_actions: int = 1
    limits: GrammarLimits = field(default_factory=GrammarLimits)
    # False: no agent instructions or worked runs of localagent's, only the tools and the reply's
    # shape after the client's own system prompt (a served request).
    agent_instructions: bool = True
    name: str = field(default="react", init=False)
    stops: tuple[str, ...] = field(default=UNCONSTRAINED_STOPS, init=False)

    def __post_init__(self) -> None:
        options = GrammarOptions(
            max_actions=self.max_actions,
            prompt_format="plain" if self.template is None else "chat",
            limits=self.limits,
        )
        self._build_with(lambda tools, choice: build_grammar(tools, choice, options))

    def render(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Prompt:
        turns = prompt_turns(messages, tools, plain=self.template is None, agent=self.agent_instructions)
        if self.template is None:
            text = render_plain(turns)
            starts = shared_starts(text, instructions_of(turns), messages)
            return Prompt(text, special=False, shared_starts=starts)
        chat = chat_messages(turns)
        text = self.template.render(chat)
        instructions = self.template.render(chat[:1], generation=False)
        return Prompt(text, special=True, shared_starts=shared_starts(text, instructions, messages))

    def parse(
        self, text: str, tools: Sequence[ToolSpec], tool_choice: ToolChoice, how: HowWritten
    ) -> ParsedReply:
        return parse_reply(
            text,
            tools,
            tool_choice,
            tolerant=not how.constrained,
            cut_off=how.cut_off,
            token_limit=how.token_limit,
            keep_cut_answer=not how.looped,
        )

    def display(self, on_event: TurnEventSink | None) -> TextSink:
        return ReplyStream(on_event).feed

    def calls(self, on_call: CallSink) -> TextSink:
        return ReactCallReader(on_call).feed
