"""The one interface between the runner and a model: run one turn of the conversation.

A turn reads the history and returns either a final answer or tool requests. A reply the model got
wrong in a way it can fix (unparsable text, output cut off, no call where one was required) raises
`RecoverableTurnError`; the runner sends its feedback back to the model. While it runs, a turn may
emit the reply as it streams and notes on how it was read (`on_event`). `BackendError` means the
backend cannot go on; `Cancelled` means the cancel token fired.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from localagent.core.cancel import CancelToken
from localagent.core.events import TurnEventSink
from localagent.core.messages import Final, Message, ToolChoice, ToolRequests
from localagent.tools.spec import ToolSpec


@runtime_checkable
class ModelTurn(Protocol):
    name: str

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_event: TurnEventSink | None = None,
    ) -> Final | ToolRequests: ...
