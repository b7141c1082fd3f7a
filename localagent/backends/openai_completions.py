"""The text-tag turn over an OpenAI-compatible `POST {base_url}/completions` endpoint, streamed.

The prompt is the plain text-tag prompt the local engine uses, and the reply is read by the same
parser, so a model behaves here as it does on the laptop. The grammar for the turn's tools and tool
choice goes where the server takes one (`grammar_field`):

- `gbnf`: `"grammar": <GBNF>` in the body, for llama.cpp's `llama-server` and llama-cpp-python's
  `python -m llama_cpp.server`.
- `lark`: `"structured_outputs": {"grammar": <Lark>}`, for vLLM 0.12 and later with its `guidance`
  structured-outputs backend (which reads Lark). vLLM before 0.12 took `"guided_grammar"` instead.
- `none`: no grammar. The reply is read by the tolerant parser, and generation stops before the
  model can invent an observation (or the next question).

With a grammar the reply is parsed strictly: the grammar already made it well-formed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import openai
from openai import Stream
from openai.types import Completion

from localagent.backends.openai_http import (
    DEFAULT_KEY_ENV,
    INTERRUPTED_FEEDBACK,
    ErrorContext,
    SamplingParams,
    backend_error,
    make_openai_client,
    read_stream,
    refused_options,
    server_message,
)
from localagent.backends.openai_stream import StreamedText
from localagent.cancel import CancelToken
from localagent.errors import BackendError, RecoverableTurnError
from localagent.events import DeltaSink
from localagent.messages import Final, Message, ToolChoice, ToolRequests
from localagent.texttag.grammar import GrammarCache, GrammarOptions, TextTagGrammar
from localagent.texttag.parser import parse_reply
from localagent.texttag.render import UNCONSTRAINED_STOPS, prompt_turns, render_plain
from localagent.texttag.stream import ReplyStream
from localagent.tools.spec import ToolSpec

GrammarField = Literal["gbnf", "lark", "none"]
STOPS = list(UNCONSTRAINED_STOPS)
_FIELD_NAMES = {"gbnf": "grammar", "lark": "structured_outputs"}


class OpenAICompletionsTurn:
    """ModelTurn over `/completions` with `stream=True`: text tags, constrained where the server can."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 300.0,
        max_retries: int = 2,
        grammar_field: GrammarField = "gbnf",
        sampling: SamplingParams | None = None,
        max_actions: int = 8,
        extra_body: dict[str, Any] | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
    ) -> None:
        self.name = f"openai-completions:{model}"
        self.model = model
        self.grammar_field = grammar_field
        self.sampling = sampling or SamplingParams()
        self.max_actions = max_actions
        self.extra_body = dict(extra_body or {})
        self._where = ErrorContext(base_url.rstrip("/"), model, api_key, timeout, max_retries, api_key_env)
        self._client = make_openai_client(base_url, api_key, timeout, max_retries)
        self._grammars = GrammarCache(GrammarOptions(max_actions=max_actions, prompt_format="plain"))
        self._refused_options: set[str] = set()

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_delta: DeltaSink | None = None,
    ) -> Final | ToolRequests:
        cancel.raise_if_cancelled()
        grammar = None if self.grammar_field == "none" else self.grammar_for(tools, tool_choice)
        prompt = render_plain(prompt_turns(messages, tools, plain=True))
        reply = self._request(prompt, grammar, cancel, on_delta)
        cut_off = reply.finish_reason == "length"
        if not reply.complete:
            raise RecoverableTurnError(INTERRUPTED_FEEDBACK, reply.text, "cut_off")
        parsed = parse_reply(
            reply.text,
            tools,
            tool_choice,
            tolerant=grammar is None,
            cut_off=cut_off,
            token_limit=self.sampling.max_tokens,
        )
        return parsed.result.model_copy(update={"usage": reply.usage})

    def grammar_for(self, tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> TextTagGrammar:
        """The grammar for this tool set and choice, built once per instance."""
        return self._grammars.get(tools, tool_choice)

    def close(self) -> None:
        """Release the pooled connections."""
        self._client.close()

    def _request(
        self, prompt: str, grammar: TextTagGrammar | None, cancel: CancelToken, on_delta: DeltaSink | None
    ) -> StreamedText:
        while True:
            params = self._params(prompt, grammar)
            reply = StreamedText(ReplyStream(on_delta).feed)

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

    def _params(self, prompt: str, grammar: TextTagGrammar | None) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "prompt": prompt, "stream": True}
        options = {"stream_options": {"include_usage": True}, **self.sampling.as_params()}
        params.update((name, value) for name, value in options.items() if name not in self._refused_options)
        extra_body = dict(self.extra_body)
        if grammar is None:
            params["stop"] = STOPS
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
