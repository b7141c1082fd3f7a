"""A backend that replays a fixed list of model outputs, so tests and demos drive the real runner.

Each item is either a string, a raw text-tag completion read by the real text-tag parser, or a
chat-style turn `{"content": ..., "reasoning": ..., "tool_calls": [{"id", "name", "arguments"}]}`
whose `arguments` is the raw string a chat model would send.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localagent.backends.arguments import parse_tool_call
from localagent.core.cancel import CancelToken
from localagent.core.events import ContentDelta, ReasoningDelta, ReplyNote, TurnEventSink
from localagent.core.messages import (
    Final,
    Message,
    ToolChoice,
    ToolRequests,
)
from localagent.core.user_files import read_user_text
from localagent.errors import BackendError, LocalagentError
from localagent.formats.react.parser import parse_reply
from localagent.tools.spec import ToolSpec
from localagent.turn.feedback import chat_result

ScriptItem = str | dict[str, Any]


class ScriptError(LocalagentError):
    pass


@dataclass(frozen=True)
class RecordedTurn:
    """What the runner passed to one turn, for tests to inspect."""

    messages: list[Message]
    tool_names: list[str]
    tool_choice: ToolChoice


@dataclass
class ScriptedTurn:
    items: list[ScriptItem]
    name: str = "script"
    calls: list[RecordedTurn] = field(default_factory=list)
    _next_id: int = 0

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_event: TurnEventSink | None = None,
    ) -> Final | ToolRequests:
        cancel.raise_if_cancelled()
        self.calls.append(RecordedTurn(list(messages), [t.name for t in tools], tool_choice))
        position = len(self.calls) - 1
        if position >= len(self.items):
            raise BackendError(
                f"the script has no output left for turn {position + 1} ({len(self.items)} given)"
            )
        item = self.items[position]
        notes: list[str] = []
        if isinstance(item, str):
            parsed = parse_reply(item, tools, tool_choice, tolerant=True, new_id=self._new_id)
            result, notes = parsed.result, parsed.notes
        else:
            result = self._chat_turn(item, tools, tool_choice)
        if on_event:
            if result.reasoning:
                on_event(ReasoningDelta(text=result.reasoning))
            if result.content:
                on_event(ContentDelta(text=result.content))
            for note in notes:
                on_event(ReplyNote(text=note))
        return result

    def _chat_turn(
        self, item: dict[str, Any], tools: Sequence[ToolSpec], tool_choice: ToolChoice
    ) -> Final | ToolRequests:
        content = str(item.get("content") or "")
        reasoning = item.get("reasoning")
        calls = item.get("tool_calls") or []
        requests = [
            parse_tool_call(str(call.get("id") or self._new_id()), str(call["name"]), _raw(call))
            for call in calls
        ]
        return chat_result(content, reasoning, requests, tool_choice)

    def _new_id(self) -> str:
        self._next_id += 1
        return f"call_{self._next_id}"


def _raw(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", "")
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def load_script(path: Path) -> ScriptedTurn:
    text = read_user_text(path, "script", ScriptError)
    try:
        items = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScriptError(f"script {path} is not valid JSON: {error.msg} at line {error.lineno}") from None
    if not isinstance(items, list):
        raise ScriptError(f"script {path} must be a JSON list of outputs")
    for position, item in enumerate(items, start=1):
        if isinstance(item, dict):
            calls = item.get("tool_calls") or []
            if not isinstance(calls, list) or any(not isinstance(c, dict) or "name" not in c for c in calls):
                raise ScriptError(f"script {path}, item {position}: each tool call needs a name")
        elif not isinstance(item, str):
            raise ScriptError(f"script {path}, item {position}: expected a string or an object")
    return ScriptedTurn(items, name=f"script:{path.name}")
