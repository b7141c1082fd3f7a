"""The turn for text-completion models: render the history in a reply format, generate under the
format's grammar, parse the reply. What generates is pluggable: a local GGUF model or a remote
`/completions` endpoint; what the reply looks like is the format (formats/).
"""

from __future__ import annotations

from collections.abc import Sequence

from localagent.backends.reply import TextGenerator
from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import ReplyNote, TokensGenerated, TurnEventSink
from localagent.core.messages import Final, Message, ToolChoice, ToolRequests
from localagent.errors import RecoverableTurnError
from localagent.formats.base import HowWritten, Prompt, ReplyFormat, TextSink
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts
from localagent.turn.context import ContextOverflow, elide_observations


class TextTurn:
    def __init__(
        self,
        generator: TextGenerator,
        reply_format: ReplyFormat,
        name: str,
        context_budget: int | None = None,
    ) -> None:
        """`context_budget`, in prompt tokens, needs a generator that counts tokens (`count_tokens`)."""
        self.name = name
        self.generator = generator
        self.format = reply_format
        self.context_budget = context_budget

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_event: TurnEventSink | None = None,
    ) -> Final | ToolRequests:
        cancel.raise_if_cancelled()
        grammar = self.format.grammar(tools, tool_choice) if self.generator.constrained else None
        prompt = self._prompt(messages, tools)
        reply = self.generator.generate(
            prompt, grammar, cancel, _counting(self.format.display(on_event), on_event), self.format.stops
        )
        if reply.stop == "cancelled":
            raise Cancelled()
        if reply.stop == "interrupted":
            raise RecoverableTurnError(prompts.INTERRUPTED, reply.text, "cut_off", reply.usage)
        looped = reply.stop == "loop"
        try:
            cut_off = looped or reply.stop == "length"
            how = HowWritten(grammar is not None, cut_off, self.generator.max_tokens, looped)
            parsed = self.format.parse(reply.text, tools, tool_choice, how)
        except RecoverableTurnError as error:
            feedback = prompts.LOOPING if looped and error.problem == "cut_off" else error.feedback
            raise RecoverableTurnError(feedback, error.raw, error.problem, reply.usage) from None
        if on_event is not None:
            for note in parsed.notes:
                on_event(ReplyNote(text=note))
        return parsed.result.model_copy(update={"usage": reply.usage})

    def _prompt(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Prompt:
        budget = self.context_budget
        count = getattr(self.generator, "count_tokens", None)
        if budget is None or count is None:
            return self.format.render(messages, tools)

        def fits(history: Sequence[Message]) -> bool:
            return count(self.format.render(history, tools)) <= budget

        try:
            return self.format.render(elide_observations(messages, fits), tools)
        except ContextOverflow:
            size = count(self.format.render(messages, tools))
            raise ContextOverflow(
                f"the prompt needs {size} tokens, but the context window has room for {budget} beside "
                "the reply; raise --n-ctx or shorten the task"
            ) from None


def _counting(sink: TextSink, on_event: TurnEventSink | None) -> TextSink:
    """`sink`, also reporting how many pieces of text (one a token) the reply has so far."""
    if on_event is None:
        return sink
    count = 0

    def feed(piece: str) -> None:
        nonlocal count
        count += 1
        sink(piece)
        on_event(TokensGenerated(tokens=count))

    return feed
