"""A turn over an OpenAI-compatible chat-completions API with native tool calls, streamed.

A server that sends no event at all for a request with tools is asked again without streaming
(llama-cpp-python's chatml-function-calling handler cannot stream a call chosen under `auto`).

Here: history -> request, and the turn. The HTTP side (client, cancellable stream, errors) is in
`openai_http`, the adding up of streamed chunks in `openai_stream`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai
from openai import Stream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from localagent.backends.openai_http import (
    DEFAULT_KEY_ENV,
    ErrorContext,
    SamplingParams,
    backend_error,
    make_openai_client,
    not_json,
    read_stream,
    refused_options,
)
from localagent.backends.openai_stream import StreamedReply, completion_as_chunk, sum_usage
from localagent.core.cancel import CancelToken
from localagent.core.events import DeltaSink, TurnEventSink
from localagent.core.messages import (
    AssistantMessage,
    Final,
    Message,
    NamedToolChoice,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    ToolRequest,
    ToolRequests,
    UserMessage,
)
from localagent.errors import RecoverableTurnError
from localagent.settings import HTTP_TIMEOUT
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts
from localagent.turn.feedback import call_required, chat_result, native_reply_shapes

# --- history -> request ---------------------------------------------------------------------------


def to_openai_messages(messages: Sequence[Message], no_text: str | None = None) -> list[dict[str, Any]]:
    """Chat messages for the API; every assistant tool call is answered by its tool message.

    `no_text` is the content of an assistant message that has tool calls and no text: null by
    default, since some servers reject empty text blocks; "" for those that want a string.
    """
    converted: list[dict[str, Any]] = []
    unanswered: dict[str, str] = {}  # id -> name of the calls of the last assistant message

    def answer_the_rest() -> None:
        for request_id in unanswered:
            converted.append({"role": "tool", "tool_call_id": request_id, "content": prompts.MISSING_RESULT})
        unanswered.clear()

    for message in messages:
        if isinstance(message, ToolMessage):
            if unanswered.pop(message.request_id, None) is not None:
                converted.append(
                    {"role": "tool", "tool_call_id": message.request_id, "content": message.content}
                )
            else:  # answers no open call: the API would reject it as a tool message, so keep it as text
                text = prompts.unanswered_result(
                    message.name or "the call", message.request_id, message.content
                )
                converted.append({"role": "user", "content": text})
            continue
        answer_the_rest()
        if isinstance(message, AssistantMessage):
            converted.append(_assistant_message(message, no_text))
            unanswered.update((request.id, request.name) for request in _sent_requests(message))
        elif isinstance(message, SystemMessage | UserMessage):
            converted.append({"role": message.role, "content": message.content})
    answer_the_rest()
    return converted


def _sent_requests(message: AssistantMessage) -> list[ToolRequest]:
    """The calls to send back: one without a function name would be refused, so its result goes as text."""
    return [request for request in message.tool_requests if request.name]


def _assistant_message(message: AssistantMessage, no_text: str | None) -> dict[str, Any]:
    # Reasoning stays out: several servers reject `reasoning_content` in the input (DeepSeek: HTTP 400).
    requests = _sent_requests(message)
    if not requests:
        return {"role": "assistant", "content": message.content}
    return {
        "role": "assistant",
        "content": message.content or no_text,
        "tool_calls": [
            {
                "id": request.id,
                "type": "function",
                "function": {"name": request.name, "arguments": request.raw_arguments or "{}"},
            }
            for request in requests
        ],
    }


def to_openai_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if isinstance(choice, NamedToolChoice):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


# --- the turn ---------------------------------------------------------------------------------------


class OpenAIChatTurn:
    """ModelTurn over `POST {base_url}/chat/completions` with `stream=True` and native tool calls."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = HTTP_TIMEOUT,
        max_retries: int = 2,
        extra_body: dict[str, Any] | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
        sampling: SamplingParams | None = None,
    ) -> None:
        self.name = f"openai-chat:{model}"
        self.model = model
        self.extra_body = dict(extra_body or {})
        self.sampling = sampling or SamplingParams()
        self._where = ErrorContext(base_url.rstrip("/"), model, api_key, timeout, max_retries, api_key_env)
        self._client = make_openai_client(base_url, api_key, timeout, max_retries)
        # Learned from the server's refusals, for the life of this instance.
        self._refused_options: set[str] = set()
        self._send_tools_with_none = True
        self._no_text: str | None = None

    @property
    def plain(self) -> OpenAIChatTurn:
        """Asked without tools, a chat model already answers in plain text."""
        return self

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_event: TurnEventSink | None = None,
    ) -> Final | ToolRequests:
        history = to_openai_messages(messages, self._no_text)
        reply = self._request(history, tools, tool_choice, cancel, on_event)
        usage = reply.usage
        if call_required(tool_choice) and reply.complete and not reply.has_calls:
            # Ask once more, within this turn, before calling it a malformed reply.
            history += [
                {"role": "assistant", "content": reply.content},
                {"role": "user", "content": native_reply_shapes(tool_choice)},
            ]
            reply = self._request(history, tools, tool_choice, cancel, on_event)
            usage = sum_usage(usage, reply.usage)
        if not reply.complete and reply.finish_reason != "length":
            raise RecoverableTurnError(prompts.INTERRUPTED, reply.partial_text(), "cut_off")
        return chat_result(
            reply.content,
            reply.reasoning or None,
            reply.requests() if reply.has_calls else [],
            tool_choice,
            cut_off=reply.finish_reason == "length",
            token_limit=self.sampling.max_tokens,
            usage=usage,
            partial=reply.partial_text(),
        )

    def close(self) -> None:
        """Release the pooled connections."""
        self._client.close()

    def _request(
        self,
        history: list[dict[str, Any]],
        tools: Sequence[ToolSpec],
        choice: ToolChoice,
        cancel: CancelToken,
        on_delta: DeltaSink | None,
    ) -> StreamedReply:
        while True:
            params = self._params(history, tools, choice)
            try:
                reply = self._stream(params, cancel, on_delta)
                if reply.received == 0 and "tools" in params:
                    # llama-cpp-python (chatml-function-calling) cannot stream a call chosen under
                    # `auto`: it answers HTTP 200 with no event at all. Ask for the whole reply instead.
                    reply = self._ask_whole(params, cancel, on_delta)
                return reply
            except (
                openai.BadRequestError,
                openai.UnprocessableEntityError,
                openai.InternalServerError,  # llama-cpp-python's answer to a body it cannot validate
            ) as error:
                if not self._give_up_rejected_option(error, params):
                    raise backend_error(error, self._where) from None
            except openai.OpenAIError as error:
                raise backend_error(error, self._where) from None

    def _params(
        self, history: list[dict[str, Any]], tools: Sequence[ToolSpec], choice: ToolChoice
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": history, "stream": True}
        # With `none` the tools still go along, so the server can render the earlier calls.
        if tools and (choice != "none" or self._send_tools_with_none):
            params["tools"] = [tool.to_openai() for tool in tools]
            params["tool_choice"] = to_openai_tool_choice(choice)
        options = {"stream_options": {"include_usage": True}, **self.sampling.as_params()}
        params.update((name, value) for name, value in options.items() if name not in self._refused_options)
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    def _give_up_rejected_option(self, error: openai.APIStatusError, params: dict[str, Any]) -> bool:
        """Drop or change what a server rejected; False when the error is about something else."""
        message = f"{error.message} {error.body}".lower()
        # The turn's own history: fixed here, a second request of this turn sends the fix too.
        nulls = [m for m in params["messages"] if m["role"] == "assistant" and m["content"] is None]
        if nulls and "content" in message and "valid string" in message:
            self._no_text = ""  # null next to tool calls refused (llama-cpp-python wants a string)
            for sent in nulls:
                sent["content"] = ""
            return True
        refused = refused_options(error, params)
        if refused:
            self._refused_options.update(refused)
            return True
        if params.get("tool_choice") == "none" and "tool" in message:
            self._send_tools_with_none = False
            return True
        return False

    def _stream(
        self, params: dict[str, Any], cancel: CancelToken, on_delta: DeltaSink | None
    ) -> StreamedReply:
        reply = StreamedReply(on_delta)

        def open_stream() -> Stream[ChatCompletionChunk]:
            return self._client.chat.completions.create(**params)

        reply.interrupted = read_stream(open_stream, reply.add, cancel, self._where)
        return reply

    def _ask_whole(
        self, params: dict[str, Any], cancel: CancelToken, on_delta: DeltaSink | None
    ) -> StreamedReply:
        """The same request without streaming; the reply is read as one chunk."""
        whole = {key: value for key, value in params.items() if key not in ("stream", "stream_options")}
        reply = StreamedReply(on_delta)

        def open_reply() -> list[ChatCompletionChunk]:
            raw = self._client.chat.completions.with_raw_response.create(**whole)
            completion = raw.parse()
            if not isinstance(completion, ChatCompletion):  # the SDK hands over a body that is not JSON
                raise not_json(self._where, raw.headers.get("content-type"))
            return [completion_as_chunk(completion)]

        read_stream(open_reply, reply.add, cancel, self._where)
        return reply
