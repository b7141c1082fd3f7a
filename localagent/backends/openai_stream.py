"""Streamed chunks added up into one reply: chat (text, reasoning, tool calls) or plain completion text."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openai.types import Completion
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from localagent.backends.arguments import parse_tool_call
from localagent.core.events import ContentDelta, DeltaSink, ReasoningDelta
from localagent.core.messages import ToolRequest, Usage
from localagent.turn import prompts


def new_request_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(kw_only=True)
class _Streamed:
    """The first choice's chunks added up, with the usage and finish reason the stream reported."""

    finish_reason: str | None = None
    usage: Usage | None = None
    interrupted: bool = False  # the connection dropped before the end
    received: int = 0  # chunks, including those that carried nothing

    def add(self, chunk: ChatCompletionChunk | Completion) -> None:
        self.received += 1
        if getattr(chunk, "usage", None):
            self.usage = read_usage(chunk.usage)
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue  # only the first choice is ever asked for
            self._add_choice(choice)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason

    @property
    def complete(self) -> bool:
        return self.finish_reason is not None and not self.interrupted

    def _add_choice(self, choice: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not read a choice")


@dataclass
class StreamedReply(_Streamed):
    """What one streamed chat reply added up to; tool-call deltas are joined by their `index`."""

    on_delta: DeltaSink | None = None
    content: str = ""
    reasoning: str = ""
    calls: list[_CallParts] = field(default_factory=list)
    _by_index: dict[int | None, _CallParts] = field(default_factory=dict)

    @property
    def has_calls(self) -> bool:
        return any(call.id or call.name or call.arguments for call in self.calls)

    def requests(self) -> list[ToolRequest]:
        requests: list[ToolRequest] = []
        seen: set[str] = set()
        for call in self.calls:
            if not (call.id or call.name or call.arguments):
                continue
            request_id = call.id if call.id and call.id not in seen else new_request_id()
            seen.add(request_id)
            if call.name.strip():
                requests.append(parse_tool_call(request_id, call.name, call.arguments))
            else:
                nameless = {"raw_arguments": call.arguments, "parse_error": prompts.NO_FUNCTION_NAME}
                requests.append(ToolRequest(id=request_id, name="", **nameless))
        return requests

    def partial_text(self) -> str:
        """Everything the model wrote, unfinished calls included, for a reply that cannot be used."""
        notes = [f"[unfinished call to {call.name or '?'}: {call.arguments}]" for call in self.calls]
        return "\n".join(part for part in (self.content, *notes) if part)

    def _add_choice(self, choice: Any) -> None:
        delta = getattr(choice, "delta", None)
        if delta is None:
            return
        reasoning = _extra(delta, "reasoning_content") or _extra(delta, "reasoning")
        if reasoning:
            self.reasoning += reasoning
            self._emit(ReasoningDelta(text=reasoning))
        content = getattr(delta, "content", None)
        if isinstance(content, str) and content:
            self.content += content
            self._emit(ContentDelta(text=content))
        for call_delta in getattr(delta, "tool_calls", None) or []:
            self._add_call_delta(call_delta)

    def _add_call_delta(self, call_delta: Any) -> None:
        index = getattr(call_delta, "index", None)
        call_id = getattr(call_delta, "id", None) or ""
        function = getattr(call_delta, "function", None)
        name = getattr(function, "name", None) or ""
        arguments = getattr(function, "arguments", None) or ""
        call = self._by_index.get(index)
        # A new id at a known index is a new call: some servers send every call at index 0.
        if call is None or (call_id and call.id and call_id != call.id):
            call = self._by_index[index] = _CallParts()
            self.calls.append(call)
        # Later deltas may repeat "id": "" or "name": "": the first non-empty value wins.
        call.id = call.id or call_id
        call.name = call.name or name
        call.arguments += arguments

    def _emit(self, delta: ReasoningDelta | ContentDelta) -> None:
        if self.on_delta is not None:
            self.on_delta(delta)


@dataclass
class StreamedText(_Streamed):
    """What one streamed `/completions` reply added up to; each piece also goes to `on_text`."""

    on_text: Callable[[str], None] | None = None
    text: str = ""

    def _add_choice(self, choice: Any) -> None:
        piece = getattr(choice, "text", None)
        if isinstance(piece, str) and piece:
            self.text += piece
            if self.on_text is not None:
                self.on_text(piece)


def completion_as_chunk(completion: ChatCompletion) -> ChatCompletionChunk:
    """A whole (non-streamed) reply as the one chunk that would have streamed it."""
    choices = []
    for choice in completion.choices:
        delta = choice.message.model_dump(exclude_none=True)  # reasoning fields stay in as extras
        calls = delta.pop("tool_calls", None) or []
        delta["tool_calls"] = [{**call, "index": index} for index, call in enumerate(calls)]
        choices.append({"index": choice.index, "delta": delta, "finish_reason": choice.finish_reason})
    usage = completion.usage.model_dump() if completion.usage else None
    return ChatCompletionChunk.model_validate(
        {
            "id": completion.id,
            "object": "chat.completion.chunk",
            "created": completion.created,
            "model": completion.model,
            "choices": choices,
            "usage": usage,
        }
    )


def _extra(delta: Any, name: str) -> str:
    """A field the SDK does not declare (reasoning), kept in `model_extra`."""
    value = getattr(delta, name, None)
    if value is None:
        value = (getattr(delta, "model_extra", None) or {}).get(name)
    return value if isinstance(value, str) else ""


def read_usage(raw: Any) -> Usage:
    """Token counts as the server reported them (chat and completions use the same shape)."""
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:  # DeepSeek reports its prompt cache under its own name
        cached = (getattr(raw, "model_extra", None) or {}).get("prompt_cache_hit_tokens")
    return Usage(
        prompt_tokens=_count(getattr(raw, "prompt_tokens", 0)),
        completion_tokens=_count(getattr(raw, "completion_tokens", 0)),
        cached_prompt_tokens=_count(cached),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def sum_usage(first: Usage | None, second: Usage | None) -> Usage | None:
    if first is None or second is None:
        return first or second
    return first + second
