"""Events the runner and the backends emit during a run; the CLI shows them, the transcript keeps them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from localagent.core.messages import Usage

RunStatus = Literal["final", "max_steps", "tool_failures", "cancelled", "error"]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    at: float = Field(default_factory=time.time)


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    task: str
    tools: list[str]
    max_steps: int


class TurnStarted(_Event):
    type: Literal["turn_started"] = "turn_started"
    step: int
    tool_choice: str
    steps_left: int


class ReasoningDelta(_Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ContentDelta(_Event):
    type: Literal["content_delta"] = "content_delta"
    text: str


class TokensGenerated(_Event):
    """How many tokens the current turn has generated so far, for a progress line."""

    type: Literal["tokens_generated"] = "tokens_generated"
    tokens: int


class ReplyNote(_Event):
    """A liberty the turn took reading a reply (a repaired argument, a dropped observation)."""

    type: Literal["reply_note"] = "reply_note"
    text: str


TurnKind = Literal["final", "tool_requests", "format_error"]


class TurnFinished(_Event):
    type: Literal["turn_finished"] = "turn_finished"
    step: int
    kind: TurnKind
    seconds: float
    usage: Usage | None = None


class FormatError(_Event):
    type: Literal["format_error"] = "format_error"
    step: int
    problem: str
    feedback: str


class ToolStarted(_Event):
    type: Literal["tool_started"] = "tool_started"
    request_id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str


class ToolFinished(_Event):
    type: Literal["tool_finished"] = "tool_finished"
    request_id: str
    name: str
    content: str
    is_error: bool
    seconds: float
    repeated: bool = False


class RunFinished(_Event):
    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    answer: str
    steps: int
    usage: Usage
    error: str | None = None


Event = Annotated[
    RunStarted
    | TurnStarted
    | ReasoningDelta
    | ContentDelta
    | ReplyNote
    | TokensGenerated
    | TurnFinished
    | FormatError
    | ToolStarted
    | ToolFinished
    | RunFinished,
    Field(discriminator="type"),
]
Delta = ReasoningDelta | ContentDelta
TurnEvent = ReasoningDelta | ContentDelta | ReplyNote | TokensGenerated
EventSink = Callable[[Event], None]
DeltaSink = Callable[[Delta], None]
# What a model turn may emit while it runs: the reply as it streams, and notes on how it was read.
TurnEventSink = Callable[[TurnEvent], None]


def ignore_event(event: Event) -> None:
    """An event sink that drops everything."""
