"""What every reply format provides to the text turn, and the types they share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Protocol

from localagent.core.events import TurnEventSink
from localagent.core.messages import Final, Message, NamedToolChoice, ToolChoice, ToolRequests, UserMessage
from localagent.errors import LocalagentError
from localagent.formats.call_stream import CallSink
from localagent.schema_grammar.gbnf import lark_to_gbnf
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

FormatName = Literal["react", "tool_call"]
TextSink = Callable[[str], None]


class GrammarBuildError(LocalagentError):
    pass


@dataclass(frozen=True)
class Prompt:
    text: str
    # The text holds a chat template's markers, to be read as special tokens.
    special: bool = False
    # Starts of `text` that other prompts share, shortest first, each a start of the next: the
    # instructions (the same for every task with these tools), then those and the workspace's listing
    # (the same for every task in that folder). A local engine keeps a KV snapshot of each on disk,
    # so a new process need not evaluate them again.
    shared_starts: tuple[str, ...] = ()


def shared_starts(text: str, instructions: str, messages: Sequence[Message]) -> tuple[str, ...]:
    """The starts of a rendered prompt that other prompts share: `instructions` when `text` starts
    with it, then `text` up to the end of the workspace's listing in the first user message."""
    starts = (instructions,) if instructions and text.startswith(instructions) else ()
    first_user = next((m for m in messages if isinstance(m, UserMessage)), None)
    listing = prompts.listing_block(first_user.content) if first_user else ""
    at = text.find(listing, len(starts[0]) if starts else 0) if listing else -1
    return starts + ((text[: at + len(listing)],) if at >= 0 else ())


@dataclass(frozen=True)
class ReplyGrammar:
    """The grammar of one reply for one tool set and tool choice, in Lark (llguidance, vLLM, lark)."""

    lark: str
    tool_names: tuple[str, ...]
    # Keywords the grammar only approximates; parsed arguments are validated against the schema anyway.
    loose: tuple[str, ...] = ()

    @cached_property
    def gbnf(self) -> str:
        """The same grammar for llama.cpp."""
        return lark_to_gbnf(self.lark)


@dataclass(frozen=True)
class ParsedReply:
    result: Final | ToolRequests
    # Liberties the parser took (a repaired argument, a dropped observation), for the display and transcript.
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class HowWritten:
    """How a reply came to be: under its grammar or not, and whether it hit the token limit or was
    stopped for repeating itself (`looped`, a cut_off too)."""

    constrained: bool = True
    cut_off: bool = False
    token_limit: int | None = None
    looped: bool = False


class ReplyFormat(Protocol):
    name: FormatName
    # Tool calls one reply may hold.
    max_actions: int
    # Where a reply generated without a grammar ends: what the model would write next on its own.
    stops: tuple[str, ...]

    def render(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Prompt: ...

    def grammar(self, tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> ReplyGrammar: ...

    def parse(
        self, text: str, tools: Sequence[ToolSpec], tool_choice: ToolChoice, how: HowWritten
    ) -> ParsedReply:
        """The turn result, or RecoverableTurnError with feedback when the model must write it again."""
        ...

    def display(self, on_event: TurnEventSink | None) -> TextSink:
        """A sink for the reply's text as it is generated, turning it into reasoning and content deltas."""
        ...

    def calls(self, on_call: CallSink) -> TextSink:
        """A sink for the reply's text as it is generated, reporting each tool call as it is written."""
        ...


class GrammarCache:
    """One grammar per tool set and tool choice, built on first use."""

    def __init__(self, build: Callable[[Sequence[ToolSpec], ToolChoice], ReplyGrammar]) -> None:
        self._build = build
        self._grammars: dict[tuple[str, str], ReplyGrammar] = {}

    def get(self, tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> ReplyGrammar:
        choice = f"tool:{tool_choice.name}" if isinstance(tool_choice, NamedToolChoice) else tool_choice
        key = ("\x00".join(tool.model_dump_json() for tool in tools), choice)
        grammar = self._grammars.get(key)
        if grammar is None:
            grammar = self._grammars[key] = self._build(tools, tool_choice)
        return grammar


class CachedGrammars:
    """A format's `grammar()`, each built once by the function its constructor passes `_build_with`."""

    _grammars: GrammarCache

    def _build_with(self, build: Callable[[Sequence[ToolSpec], ToolChoice], ReplyGrammar]) -> None:
        self._grammars = GrammarCache(build)

    def grammar(self, tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> ReplyGrammar:
        return self._grammars.get(tools, tool_choice)
