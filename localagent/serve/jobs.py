"""What a request does on the worker thread, with the model to itself: a chat turn, or a completion.

Both read the prompt's tokens against what the KV cache holds, so only the new ones are evaluated.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from llguidance.gbnf_to_lark import any_to_lark

from localagent.backends.guidance import GrammarCompileError
from localagent.backends.local_generator import LocalGenerator
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import TurnEventSink
from localagent.core.messages import ToolRequests, assistant_message_for
from localagent.errors import RecoverableTurnError
from localagent.formats.base import Prompt, ReplyFormat, ReplyGrammar, TextSink
from localagent.formats.call_stream import CallSink
from localagent.formats.chat_template import ChatTemplateError
from localagent.serve.chat_input import TurnInput
from localagent.serve.chat_reply import ChatReply, ReplyHeader, usage_body
from localagent.serve.engine import Emit, Engine
from localagent.serve.errors import RequestError
from localagent.serve.generation import Generation
from localagent.serve.request_log import RequestLog
from localagent.serve.stop_strings import StopStrings
from localagent.turn.context import ContextOverflow

CANCELLED = "cancelled (the client went away, or the server is stopping)"


def reply_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


class CallReportingFormat:
    """A reply format whose display also reports the tool calls as they are written."""

    def __init__(self, inner: ReplyFormat, on_call: CallSink) -> None:
        self._inner = inner
        self._on_call = on_call

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def display(self, on_event: TurnEventSink | None) -> TextSink:
        sinks = (self._inner.display(on_event), self._inner.calls(self._on_call))

        def feed(piece: str) -> None:
            for sink in sinks:
                sink(piece)

        return feed


def chat_reply(
    engine: Engine, options: Generation, emit: Emit, on_stop: Callable[[], None] = lambda: None
) -> ChatReply:
    """The builder of one chat completion, streamed through `emit` when the request asks for it."""
    header = ReplyHeader(reply_id("chatcmpl"), int(time.time()), engine.model.id)
    return ChatReply(
        header,
        stops=options.stops,
        emit=emit if options.stream else None,
        include_usage=options.include_usage,
        on_stop=on_stop,
    )


def run_chat(
    engine: Engine,
    turn_input: TurnInput,
    options: Generation,
    max_actions: int,
    emit: Emit,
    cancel: CancelToken,
) -> dict[str, Any] | None:
    """The chat completion, or None when it was streamed through `emit`."""
    reply = chat_reply(engine, options, emit, on_stop=cancel.cancel)
    generator = engine.generator_for(options.max_tokens, options.sampling)
    reply_format = CallReportingFormat(engine.format_for(max_actions), reply.on_call)
    turn = TextTurn(generator, reply_format, f"serve:{engine.model.id}", generator.context_budget)  # type: ignore[arg-type]
    log = RequestLog("chat/completions", generator, options.stream)
    try:
        result = turn(turn_input.messages, turn_input.tools, turn_input.tool_choice, cancel, reply.on_event)
    except RecoverableTurnError as error:
        log.outcome = f"unusable reply ({error.problem})"
        return reply.finish_unusable(error)
    except Cancelled:
        if reply.stopped and log.step is not None:
            log.outcome = "reached a stop string"
            return reply.finish_stopped(log.step.usage)
        log.outcome = CANCELLED
        raise
    except ContextOverflow as error:
        log.outcome = "context too long"
        raise RequestError(str(error), param="messages", code="context_length_exceeded") from None
    except ChatTemplateError as error:
        log.outcome = "refused by the chat template"
        raise RequestError(str(error), param="messages") from None
    else:
        calls = len(result.requests) if isinstance(result, ToolRequests) else 0
        log.outcome = f"{calls} tool call{'s' if calls > 1 else ''}" if calls else "answer"
    finally:
        log.end()
    if isinstance(result, ToolRequests):
        result = reply.with_sent_ids(result)
    engine.memory.remember(assistant_message_for(result))
    return reply.finish(result, result.usage)


def check_prompt_fits(generator: LocalGenerator, prompt: Prompt, param: str) -> None:
    """A prompt that leaves the context window no room for a reply is the request's error."""
    size, n_ctx = generator.count_tokens(prompt), generator.session.n_ctx
    if size >= n_ctx:
        raise RequestError(
            f"the prompt has {size} tokens; the context window holds {n_ctx}",
            param=param,
            code="context_length_exceeded",
        )


def grammar_of(text: str) -> ReplyGrammar:
    """A client's grammar (GBNF or Lark) as the generator takes it."""
    try:
        return ReplyGrammar(any_to_lark(text), ())
    except Exception as error:  # noqa: BLE001 - llguidance's converter raises plain exceptions too
        raise RequestError(f"Invalid grammar: {error}", param="grammar") from None


def run_completion(
    engine: Engine,
    prompt: str,
    grammar: ReplyGrammar | None,
    options: Generation,
    emit: Emit,
    cancel: CancelToken,
) -> dict[str, Any] | None:
    """The text completion, or None when it was streamed through `emit`."""
    header = ReplyHeader(reply_id("cmpl"), int(time.time()), engine.model.id)
    generator = engine.generator_for(options.max_tokens, options.sampling)
    if grammar is not None and generator.settings.decoder == "llguidance":
        try:
            generator.guidance.compile(grammar.lark)
        except GrammarCompileError as error:
            raise RequestError(f"Invalid grammar: {error}", param="grammar") from None
    source = Prompt(prompt, special=True)
    check_prompt_fits(generator, source, "prompt")
    text = StopStrings(options.stops)

    def on_text(piece: str) -> None:
        sent = text.feed(piece)
        if options.stream and sent:
            emit(_completion_chunk(header, sent, None, options.include_usage))
        if text.hit:
            cancel.cancel()

    log = RequestLog("completions", generator, options.stream)
    try:
        reply = generator.generate(source, grammar, cancel, on_text)
        if reply.stop == "cancelled" and not text.hit:
            log.outcome = CANCELLED
            raise Cancelled()
        log.outcome = "reached a stop string" if text.hit else f"ended ({reply.stop})"
    finally:
        log.end()
    reason = "length" if reply.stop in ("length", "loop") else "stop"
    rest = text.flush()
    if not options.stream:
        choice = {"index": 0, "text": text.text, "logprobs": None, "finish_reason": reason}
        return {**_chunk_head(header, False), "choices": [choice], "usage": usage_body(reply.usage)}
    emit(_completion_chunk(header, rest, reason, options.include_usage))
    if options.include_usage:
        emit({**_chunk_head(header, True), "choices": [], "usage": usage_body(reply.usage)})
    return None


def _completion_chunk(
    header: ReplyHeader, text: str, reason: str | None, include_usage: bool
) -> dict[str, Any]:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": reason}
    return {**_chunk_head(header, include_usage), "choices": [choice]}


def _chunk_head(header: ReplyHeader, include_usage: bool) -> dict[str, Any]:
    head: dict[str, Any] = {
        "id": header.id,
        "object": "text_completion",
        "created": header.created,
        "model": header.model,
        "system_fingerprint": None,
    }
    if include_usage:
        head["usage"] = None
    return head


Job = Callable[[Emit, CancelToken], dict[str, Any] | None]
