"""Runs of a real turn as the runner makes them, and the check every reply under a grammar passes.

Import explicitly (`from turn_runs import ...`); this is not a pytest conftest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from localagent.core.cancel import CancelToken
from localagent.core.messages import (
    Final,
    Message,
    NamedToolChoice,
    ToolChoice,
    ToolRequests,
    assistant_message_for,
)
from localagent.loop.tool_execution import ToolExecutor
from localagent.tools import InvalidArguments, Tool
from localagent.turn.model_turn import ModelTurn


def assert_well_formed(result: Final | ToolRequests, tools: Sequence[Tool], choice: ToolChoice) -> None:
    """An answer where the choice allows one, or calls to known tools with arguments that validate."""
    if isinstance(result, Final):
        assert choice in ("auto", "none")
        assert result.content.strip()
        return
    assert choice != "none"
    by_name = {tool.name: tool for tool in tools}
    for request in result.requests:
        assert request.parse_error is None
        assert request.name in by_name
        if isinstance(choice, NamedToolChoice):
            assert request.name == choice.name
        try:
            by_name[request.name].validate(request.arguments or {})
        except InvalidArguments as error:
            pytest.fail(f"{request.name} arguments {request.raw_arguments} do not validate: {error}")


def run_steps(
    turn: ModelTurn, tools: Sequence[Tool], choices: Sequence[ToolChoice], messages: list[Message]
) -> Iterator[Final | ToolRequests]:
    """A run as the runner makes it: each reply and the real tools' results are appended to `messages`."""
    executor = ToolExecutor({tool.name: tool for tool in tools}, on_event=lambda event: None)
    for choice in choices:
        result = turn(messages, [tool.spec for tool in tools], choice, CancelToken())
        yield result
        messages.append(assistant_message_for(result))
        if isinstance(result, ToolRequests):
            messages.extend(executor.run_step(result.requests, CancelToken()))
