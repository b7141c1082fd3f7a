"""Message and result types shared by the runner, the backends and the transcript.

A whole history is a `list[Message]`; `HISTORY` writes and reads it as JSON without loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SystemMessage(_Frozen):
    role: Literal["system"] = "system"
    content: str


class UserMessage(_Frozen):
    role: Literal["user"] = "user"
    content: str
    # True when the runner wrote this to correct a malformed reply, not the person asking.
    feedback: bool = False


class ToolRequest(_Frozen):
    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""
    parse_error: str | None = None


class AssistantMessage(_Frozen):
    role: Literal["assistant"] = "assistant"
    content: str = ""
    reasoning: str | None = None
    tool_requests: list[ToolRequest] = Field(default_factory=list)


class ToolMessage(_Frozen):
    role: Literal["tool"] = "tool"
    request_id: str
    name: str
    content: str
    is_error: bool = False


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage,
    Field(discriminator="role"),
]
HISTORY: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


class Usage(_Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the backend did not have to evaluate again (KV-cache prefix reuse).
    cached_prompt_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
        )


class Final(_Frozen):
    kind: Literal["final"] = "final"
    content: str
    reasoning: str | None = None
    usage: Usage | None = None


class ToolRequests(_Frozen):
    kind: Literal["tool_requests"] = "tool_requests"
    requests: list[ToolRequest]
    content: str = ""
    reasoning: str | None = None
    usage: Usage | None = None


TurnResult = Annotated[Final | ToolRequests, Field(discriminator="kind")]


class NamedToolChoice(_Frozen):
    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice


def parse_tool_choice(text: str) -> ToolChoice:
    """Read a tool choice as written on a command line: auto, none, required, or a tool name."""
    if text in ("auto", "none", "required"):
        return text  # type: ignore[return-value]
    return NamedToolChoice(name=text)


def describe_tool_choice(choice: ToolChoice) -> str:
    return choice.name if isinstance(choice, NamedToolChoice) else choice


def assistant_message_for(result: Final | ToolRequests) -> AssistantMessage:
    if isinstance(result, Final):
        return AssistantMessage(content=result.content, reasoning=result.reasoning)
    return AssistantMessage(
        content=result.content, reasoning=result.reasoning, tool_requests=list(result.requests)
    )


def last_answer(messages: Sequence[Message]) -> str:
    """The newest text the model wrote for this task, leaving out replies that were malformed."""
    following: Message | None = None
    for message in reversed(messages):
        if isinstance(message, UserMessage) and not message.feedback:
            return ""
        malformed = isinstance(following, UserMessage) and following.feedback
        if isinstance(message, AssistantMessage) and message.content.strip() and not malformed:
            return message.content
        following = message
    return ""


def refused_call(request: ToolRequest, content: str) -> ToolMessage:
    """The tool message that answers a call which was not run."""
    return ToolMessage(request_id=request.id, name=request.name, content=content, is_error=True)
