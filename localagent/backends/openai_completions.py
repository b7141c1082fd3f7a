"""Generating a reply over an OpenAI-compatible `POST {base_url}/completions` endpoint, streamed.

The prompt is the one the local engine would see, and the reply is read by the same format, so a
model behaves here as it does on the laptop. The grammar for the turn's tools and tool choice goes
where the server takes one (`grammar_field`):

- `gbnf`: `"grammar": <GBNF>` in the body, for llama.cpp's `llama-server` and llama-cpp-python's
  `python -m llama_cpp.server`.
- `lark`: `"structured_outputs": {"grammar": <Lark>}`, for vLLM 0.12 and later with its `guidance`
  structured-outputs backend (which reads Lark). vLLM before 0.12 took `"guided_grammar"` instead.
- `none`: no grammar. The reply is read by the tolerant parser, and generation stops before the
  model can invent an observation (or the next question).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import openai
from openai import Stream
from openai.types import Completion

from localagent.backends.openai_http import (
    DEFAULT_KEY_ENV,
    ErrorContext,
    SamplingParams,
    backend_error,
    make_openai_client,
    read_stream,
    refused_options,
    server_message,
)
from localagent.backends.openai_stream import StreamedText
from localagent.backends.reply import Reply
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import CancelToken
from localagent.errors import BackendError
from localagent.formats.base import Prompt, ReplyFormat, ReplyGrammar, TextSink
from localagent.formats.react.format import ReactFormat
from localagent.settings import HTTP_TIMEOUT

GrammarField = Literal["gbnf", "lark", "none"]
_FIELD_NAMES = {"gbnf": "grammar", "lark": "structured_outputs"}


def completions_turn(
    base_url: str, model: str, reply_format: ReplyFormat | None = None, **options: Any
) -> TextTurn:
    """The text turn over `/completions`; plain text tags unless another reply format is given."""
    generator = CompletionsGenerator(base_url, model, **options)
    return TextTurn(generator, reply_format or ReactFormat(), f"openai-completions:{model}")


class CompletionsGenerator:
    """A TextGenerator over `/completions` with `stream=True`, constrained where the server can be."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = HTTP_TIMEOUT,
        max_retries: int = 2,
        grammar_field: GrammarField = "gbnf",
        sampling: SamplingParams | None = None,
        extra_body: dict[str, Any] | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
    ) -> None:
        self.model = model
        self.grammar_field = grammar_field
        self.constrained = grammar_field != "none"
        self.sampling = sampling or SamplingParams()
        self.max_tokens = self.sampling.max_tokens
        self.extra_body = dict(extra_body or {})
        self._where = ErrorContext(base_url.rstrip("/"), model, api_key, timeout, max_retries, api_key_env)
        self._client = make_openai_client(base_url, api_key, timeout, max_retries)
        self._refused_options: set[str] = set()

    def generate(
        self,
        prompt: Prompt,
        grammar: ReplyGrammar | None,
        cancel: CancelToken,
        on_text: TextSink,
        stops: Sequence[str] = (),
    ) -> Reply:
        reply = self._request(prompt.text, grammar, stops, cancel, on_text)
        if not reply.complete:
            return Reply(reply.text, "interrupted", reply.usage)
        return Reply(reply.text, "length" if reply.finish_reason == "length" else "end", reply.usage)

    def close(self) -> None:
        """Release the pooled connections."""
        self._client.close()

    def _request(
        self,
        prompt: str,
        grammar: ReplyGrammar | None,
        stops: Sequence[str],
        cancel: CancelToken,
        on_text: TextSink,
    ) -> StreamedText:
        while True:
            params = self._params(prompt, grammar, stops)
            reply = StreamedText(on_text)

            def open_stream(params: dict[str, Any] = params) -> Stream[Completion]:
                return self._client.completions.create(**params)

            try:
                reply.interrupted = read_stream(open_stream, reply.add, cancel, self._where)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as error:
                refused = refused_options(error, params)
                if not refused:
                    raise self._rejected(error) from None
                self._refused_options |= refused
                continue
            except openai.OpenAIError as error:
                raise backend_error(error, self._where) from None
            return reply

    def _params(self, prompt: str, grammar: ReplyGrammar | None, stops: Sequence[str]) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "prompt": prompt, "stream": True}
        options = {"stream_options": {"include_usage": True}, **self.sampling.as_params()}
        params.update((name, value) for name, value in options.items() if name not in self._refused_options)
        extra_body = dict(self.extra_body)
        if grammar is None:
            if stops:
                params["stop"] = list(stops)
        elif self.grammar_field == "gbnf":
            extra_body["grammar"] = grammar.gbnf
        else:
            extra_body["structured_outputs"] = {"grammar": grammar.lark}
        if extra_body:
            params["extra_body"] = extra_body
        return params

    def _rejected(self, error: openai.APIStatusError) -> BackendError:
        """The usual one-line error, with a hint when the server refused the grammar itself."""
        failure = backend_error(error, self._where)
        field = _FIELD_NAMES.get(self.grammar_field)
        if field is not None and field in server_message(error).lower():
            return BackendError(
                f"{failure} (this server may not take a grammar in {field!r}: "
                "try another --grammar-field, or none)"
            )
        return failure
