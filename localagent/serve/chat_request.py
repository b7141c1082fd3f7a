"""The body of `POST /v1/chat/completions`, validated as OpenAI validates it.

Fields OpenAI does not know are refused by name; known fields that change nothing here (metadata,
penalties, reasoning effort, ...) are accepted and ignored; known fields this server cannot honour
(n > 1, logprobs, audio, a JSON response format beside tools) are refused with a reason.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from localagent.serve.sampling_request import SamplingRequest


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContentPart(_Strict):
    type: str
    text: str | None = None
    # OpenAI's other part types carry their payload under their own name: refused with a reason
    # (this model reads text) rather than as unknown fields.
    image_url: Any = None
    input_audio: Any = None
    file: Any = None
    refusal: str | None = None


Content = str | list[ContentPart]


class FunctionCall(_Strict):
    name: str
    arguments: str


class ToolCall(_Strict):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class SystemIn(_Strict):
    role: Literal["system", "developer"]
    content: Content
    name: str | None = None


class UserIn(_Strict):
    role: Literal["user"]
    content: Content
    name: str | None = None


class AssistantIn(_Strict):
    role: Literal["assistant"]
    content: Content | None = None
    tool_calls: list[ToolCall] | None = None
    # The reasoning this server sent with the reply; clients that echo the reply send it back.
    reasoning_content: str | None = None
    name: str | None = None
    # Fields of OpenAI's reply message that SDK clients echo back with it.
    refusal: str | None = None
    function_call: None = None
    audio: Any = None
    annotations: list[Any] | None = None


class ToolResultIn(_Strict):
    role: Literal["tool"]
    content: Content
    tool_call_id: str


MessageIn = Annotated[SystemIn | UserIn | AssistantIn | ToolResultIn, Field(discriminator="role")]


class FunctionSpec(_Strict):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDefinition(_Strict):
    type: str
    function: FunctionSpec | None = None
    custom: Any = None  # OpenAI's free-form tools: refused with a reason


class NamedFunction(_Strict):
    name: str


class NamedChoice(_Strict):
    type: Literal["function"]
    function: NamedFunction


RESPONSE_FORMATS = ("text", "json_object", "json_schema")


class ChatRequest(SamplingRequest):
    messages: list[MessageIn] = Field(min_length=1)
    tools: list[ToolDefinition] | None = None
    tool_choice: Literal["auto", "none", "required"] | NamedChoice | None = None
    parallel_tool_calls: bool | None = None
    max_completion_tokens: int | None = Field(None, ge=1)
    response_format: dict[str, Any] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    # Accepted and ignored: they change nothing a local text turn does.
    reasoning_effort: str | None = None
    verbosity: str | None = None
    modalities: list[str] | None = None
    store: bool | None = None
    metadata: dict[str, str] | None = None
    service_tier: str | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    # Refused when set: this server has no audio, no predicted outputs, no web search, and takes
    # tools in the current shape only.
    audio: Any = None
    prediction: Any = None
    web_search_options: Any = None
    functions: Any = None
    function_call: Any = None

    @property
    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens

    @property
    def answers_plainly(self) -> bool:
        """Nothing may be called and no earlier call is in the history: the model's own chat, with
        no reply format to write in."""
        if self.tools and self.tool_choice != "none":
            return False
        return not any(
            isinstance(message, ToolResultIn) or (isinstance(message, AssistantIn) and message.tool_calls)
            for message in self.messages
        )

    def unsupported(self) -> list[tuple[str, str]]:
        problems = super().unsupported()
        if self.logprobs or self.top_logprobs:
            problems.append(("logprobs", "logprobs are not supported by this server"))
        kind = (self.response_format or {}).get("type", "text")
        if kind not in RESPONSE_FORMATS:
            problems.append(
                ("response_format", f"response_format type must be one of {', '.join(RESPONSE_FORMATS)}")
            )
        elif kind != "text" and not self.answers_plainly:
            problems.append(
                (
                    "response_format",
                    f"a {kind} response_format goes with a request that calls no tool; "
                    "with tools, only 'text'",
                )
            )
        if self.modalities is not None and set(self.modalities) - {"text"}:
            problems.append(("modalities", "this server writes text only"))
        for name in ("audio", "prediction", "web_search_options"):
            if getattr(self, name) is not None:
                problems.append((name, f"{name} is not supported by this server"))
        for name in ("functions", "function_call"):
            if getattr(self, name) is not None:
                problems.append((name, f"{name} is deprecated and not supported: use tools and tool_choice"))
        if self.tools is not None and not self.tools:
            problems.append(("tools", "tools is empty: leave it out, or give at least one tool"))
        return problems
