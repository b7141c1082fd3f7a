"""A chat request with nothing to call, answered as the model itself answers: the conversation laid
out by the GGUF's own chat template, generated without format instructions or a grammar (unless the
request asks for JSON), and all of the text the model wrote sent back as the content.

At temperature 0 this writes what llama-cpp-python's `create_chat_completion` writes with the same
template.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsonschema

from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import ContentDelta
from localagent.formats.base import Prompt, ReplyGrammar
from localagent.formats.chat_template import ChatTemplate, ChatTemplateError
from localagent.schema_grammar.compiler import schema_grammar
from localagent.schema_grammar.keywords import SchemaGrammarError
from localagent.serve.chat_input import message_text
from localagent.serve.chat_request import MessageIn
from localagent.serve.engine import Emit, Engine
from localagent.serve.errors import RequestError
from localagent.serve.generation import Generation
from localagent.serve.jobs import CANCELLED, chat_reply, check_prompt_fits
from localagent.serve.request_log import RequestLog

# OpenAI's newer name for the system role; chat templates know only the older one.
_TEMPLATE_ROLES = {"developer": "system"}
_ANY_OBJECT: dict[str, Any] = {"type": "object"}


def plain_prompt(messages: Sequence[MessageIn], template: ChatTemplate) -> Prompt:
    """The messages as the chat template lays them out, up to where the model's reply starts."""
    chat = [
        {
            "role": _TEMPLATE_ROLES.get(message.role, message.role),
            "content": "" if message.content is None else message_text(message.content, f"messages[{index}]"),
        }
        for index, message in enumerate(messages)
    ]
    try:
        return Prompt(template.render(chat), special=True)
    except ChatTemplateError as error:
        raise RequestError(str(error), param="messages") from None


def response_grammar(response_format: dict[str, Any] | None) -> ReplyGrammar | None:
    """The grammar of the JSON a `response_format` asks for; None for text."""
    kind = (response_format or {}).get("type", "text")
    if kind == "text" or response_format is None:
        return None
    schema: Any = _ANY_OBJECT
    param = "response_format"
    if kind == "json_schema":
        described = response_format.get("json_schema")
        if not isinstance(described, dict):
            missing = "response_format.json_schema"
            raise RequestError(f"Missing required parameter: {missing!r}.", param=missing)
        schema, param = described.get("schema", {}), "response_format.json_schema.schema"
    try:
        if not isinstance(schema, dict | bool):
            raise jsonschema.SchemaError(f"the schema must be a JSON object, not {type(schema).__name__}")
        if isinstance(schema, dict):
            jsonschema.validators.validator_for(schema).check_schema(schema)
        return ReplyGrammar(schema_grammar(schema), ())
    except (jsonschema.SchemaError, SchemaGrammarError) as error:
        reason = error.message if isinstance(error, jsonschema.SchemaError) else str(error)
        raise RequestError(f"Invalid schema for response_format: {reason}", param=param) from None


def run_plain_chat(
    engine: Engine,
    prompt: Prompt,
    grammar: ReplyGrammar | None,
    options: Generation,
    emit: Emit,
    cancel: CancelToken,
) -> dict[str, Any] | None:
    """The chat completion, or None when it was streamed through `emit`."""
    reply = chat_reply(engine, options, emit)
    generator = engine.generator_for(options.max_tokens, options.sampling)
    check_prompt_fits(generator, prompt, "messages")
    log = RequestLog("chat/completions", generator, options.stream)
    try:
        generated = generator.generate(
            prompt,
            grammar if generator.constrained else None,
            cancel,
            lambda piece: reply.on_event(ContentDelta(text=piece)),
            options.stops,
        )
        if generated.stop == "cancelled":
            log.outcome = CANCELLED
            raise Cancelled()
        ended = generated.stop == "end"
        log.outcome = "plain answer" if ended else f"plain answer, cut off ({generated.stop})"
    finally:
        log.end()
    return reply.finish_text(generated.text, "stop" if ended else "length", generated.usage)
