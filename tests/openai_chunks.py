"""Streamed chunks as OpenAI-compatible servers send them, for tests to queue on the replay server."""

from __future__ import annotations

from typing import Any

MODEL = "test-model"


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish_reason}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [choice],
    }


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [],
        "usage": usage,
    }


def text_chunks(text: str, finish_reason: str | None = "stop") -> list[dict[str, Any]]:
    pieces = [text[i : i + 6] for i in range(0, len(text), 6)]
    chunks = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": piece}) for piece in pieces]
    return chunks + ([chunk(finish_reason=finish_reason)] if finish_reason else [])


def reasoning_chunks(text: str) -> list[dict[str, Any]]:
    """Reasoning deltas (`reasoning_content`, as DeepSeek and vLLM send them), no finish."""
    return [chunk({"reasoning_content": text[i : i + 6]}) for i in range(0, len(text), 6)]


def call_chunks(*calls: tuple[str, str, str], finish_reason: str = "tool_calls") -> list[dict[str, Any]]:
    """Tool calls streamed as OpenAI does: id and name first, then the arguments in small pieces."""
    chunks = [chunk({"role": "assistant", "content": None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        opening = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [opening]}))
        for start in range(0, len(arguments), 5):
            piece = {"index": index, "function": {"arguments": arguments[start : start + 5]}}
            chunks.append(chunk({"tool_calls": [piece]}))
    return [*chunks, chunk(finish_reason=finish_reason)]


def whole_reply(content: str | None, *calls: tuple[str, str, str]) -> dict[str, Any]:
    """A non-streamed chat completion, as a server answers `stream: false`."""
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-whole",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59},
    }


def completion_chunks(
    text: str, finish_reason: str | None = "stop", usage: tuple[int, int] | None = None
) -> list[dict[str, Any]]:
    """A `/completions` stream: the text in small pieces, then the finish, then usage if given."""
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    chunks = [_completion_chunk(piece) for piece in pieces]
    if finish_reason:
        chunks.append(_completion_chunk("", finish_reason))
    if usage:
        prompt, completion = usage
        counts = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        chunks.append({**_completion_chunk(""), "choices": [], "usage": counts})
    return chunks


def _completion_chunk(text: str, finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "cmpl-test",
        "object": "text_completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "text": text, "finish_reason": finish_reason, "logprobs": None}],
    }
