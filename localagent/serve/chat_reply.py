"""One chat completion in OpenAI's shapes, built as the reply is generated.

The same builder serves both modes: streaming, it sends each piece as a chunk the moment the
format's readers report it (reasoning, content, a call's id and name, then its arguments);
otherwise it answers with the whole message at the end. Either way the parsed reply decides what
the message finally is; a streamed call keeps the id it was sent with.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from localagent.core.events import ContentDelta, ReasoningDelta, TurnEvent
from localagent.core.messages import Final, ToolRequests, Usage
from localagent.errors import RecoverableTurnError
from localagent.formats.call_stream import ArgumentsDelta, CallEvent, CallStarted
from localagent.serve.stop_strings import StopStrings, cut_at_stop

Emit = Callable[[dict[str, Any]], None]
FinishReason = Literal["stop", "length", "tool_calls"]


@dataclass(frozen=True)
class ReplyHeader:
    id: str
    created: int
    model: str


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def usage_body(usage: Usage | None) -> dict[str, Any]:
    usage = usage or Usage()
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_prompt_tokens},
    }


@dataclass
class _Call:
    id: str
    name: str
    arguments: str = ""

    def body(self, index: int | None = None) -> dict[str, Any]:
        call = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
        return call if index is None else {"index": index, **call}


class ChatReply:
    def __init__(
        self,
        header: ReplyHeader,
        *,
        stops: tuple[str, ...] = (),
        emit: Emit | None = None,
        include_usage: bool = False,
        on_stop: Callable[[], None] = lambda: None,
    ) -> None:
        """`emit` sends chunks (streaming); `on_stop` is called when the content reaches a stop string."""
        self.header = header
        self._emit = emit
        self._include_usage = include_usage
        self._on_stop = on_stop
        self._content = StopStrings(stops)
        self._role_sent = False
        self.reasoning = ""
        self.content = ""
        self.calls: list[_Call] = []

    @property
    def stopped(self) -> bool:
        """The content reached one of the request's stop strings."""
        return self._content.hit

    # --- what the turn reports while it runs --------------------------------------------------------

    def on_event(self, event: TurnEvent) -> None:
        if isinstance(event, ReasoningDelta):
            self._add_reasoning(event.text)
        elif isinstance(event, ContentDelta):
            self._add_content(self._content.feed(event.text))
            if self._content.hit:
                self._on_stop()

    def on_call(self, event: CallEvent) -> None:
        if isinstance(event, CallStarted):
            call = _Call(new_call_id(), event.name)
            self.calls.append(call)
            self._send({"tool_calls": [call.body(event.index)]})
        elif isinstance(event, ArgumentsDelta) and event.index < len(self.calls):
            self.calls[event.index].arguments += event.text
            self._send({"tool_calls": [{"index": event.index, "function": {"arguments": event.text}}]})

    # --- how it ends --------------------------------------------------------------------------------

    def with_sent_ids(self, result: ToolRequests) -> ToolRequests:
        """The parsed calls under the ids their first deltas carried."""
        requests = [
            request.model_copy(update={"id": self.calls[index].id}) if index < len(self.calls) else request
            for index, request in enumerate(result.requests)
        ]
        return result.model_copy(update={"requests": requests})

    def finish(self, result: Final | ToolRequests, usage: Usage | None) -> dict[str, Any] | None:
        """The whole completion, or None when streaming (the last chunks are sent instead)."""
        reasoning = (result.reasoning or "").strip()
        if isinstance(result, Final):
            return self._end("stop", reasoning, cut_at_stop(result.content, self._content.stops), [], usage)
        result = self.with_sent_ids(result)
        calls = [
            _Call(request.id, request.name, request.raw_arguments or "{}") for request in result.requests
        ]
        return self._end("tool_calls", reasoning, result.content, calls, usage)

    def finish_text(self, text: str, reason: FinishReason, usage: Usage | None) -> dict[str, Any] | None:
        """A reply in no format: all of its text is the content."""
        return self._end(reason, "", cut_at_stop(text, self._content.stops), [], usage)

    def finish_stopped(self, usage: Usage | None) -> dict[str, Any] | None:
        """The content reached a stop string and generation was stopped there."""
        return self._end("stop", self.reasoning, self._content.text, [], usage)

    def finish_unusable(self, error: RecoverableTurnError) -> dict[str, Any] | None:
        """A reply the turn could not use: cut off at the token limit, or (without a grammar)
        malformed. What was read of it is the message; text nothing could be read from is the content."""
        reason: FinishReason = "length" if error.problem == "cut_off" else "stop"
        if not (self.reasoning or self._content.text or self.calls):
            return self._end(reason, "", cut_at_stop(error.raw, self._content.stops), [], error.usage)
        return self._end(reason, self.reasoning, self._content.text, list(self.calls), error.usage)

    def _end(
        self, reason: FinishReason, reasoning: str, content: str, calls: list[_Call], usage: Usage | None
    ) -> dict[str, Any] | None:
        if self._emit is None:
            return self._completion(reason, reasoning, content, calls, usage)
        self._send_rest(reasoning, content, calls)
        self._send({}, reason)
        if self._include_usage:
            self._emit({**self._chunk_head(), "choices": [], "usage": usage_body(usage)})
        return None

    def _completion(
        self, reason: FinishReason, reasoning: str, content: str, calls: list[_Call], usage: Usage | None
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content or (None if calls else ""),
            "refusal": None,
        }
        if reasoning:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = [call.body() for call in calls]
        return {
            "id": self.header.id,
            "object": "chat.completion",
            "created": self.header.created,
            "model": self.header.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reason}],
            "usage": usage_body(usage),
        }

    # --- streaming ----------------------------------------------------------------------------------

    def _add_reasoning(self, text: str) -> None:
        if text:
            self.reasoning += text
            self._send({"reasoning_content": text})

    def _add_content(self, text: str) -> None:
        if text:
            self.content += text
            self._send({"content": text})

    def _send_rest(self, reasoning: str, content: str, calls: list[_Call]) -> None:
        """What the readers did not stream of the final message (a held-back tail, a late call)."""
        if reasoning.startswith(self.reasoning):
            self._add_reasoning(reasoning[len(self.reasoning) :])
        self._add_content(self._content.flush())
        if content.startswith(self.content):
            self._add_content(content[len(self.content) :])
        for index, call in enumerate(calls):
            if index >= len(self.calls):
                self._send({"tool_calls": [call.body(index)]})
            elif call.arguments.startswith(self.calls[index].arguments):
                rest = call.arguments[len(self.calls[index].arguments) :]
                if rest:
                    self._send({"tool_calls": [{"index": index, "function": {"arguments": rest}}]})

    def _send(self, delta: dict[str, Any], finish_reason: FinishReason | None = None) -> None:
        if self._emit is None:
            return
        if not self._role_sent:
            self._role_sent = True
            self._emit(self._chunk({"role": "assistant", "content": ""}))
        if delta or finish_reason:
            self._emit(self._chunk(delta, finish_reason))

    def _chunk(self, delta: dict[str, Any], finish_reason: FinishReason | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**self._chunk_head(), "choices": [choice]}

    def _chunk_head(self) -> dict[str, Any]:
        head = {
            "id": self.header.id,
            "object": "chat.completion.chunk",
            "created": self.header.created,
            "model": self.header.model,
            "system_fingerprint": None,
        }
        if self._include_usage:
            head["usage"] = None
        return head
