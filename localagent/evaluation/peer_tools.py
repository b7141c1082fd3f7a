"""localagent's tools as smolagents tools, run in-process on the task's workspace, so a peer agent
works with exactly the tools localagent's own runs get. smolagents is an optional extra
(`pip install 'localagent[peers]'`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import smolagents

from localagent.core.cancel import CancelToken
from localagent.tools.base import InvalidArguments, Tool, ToolError
from localagent.turn import prompts

# The JSON Schema types smolagents accepts for an input; any other is shown to the model as "any".
_INPUT_TYPES = frozenset(smolagents.tools.AUTHORIZED_TYPES)


class ToolFailure(Exception):
    """A tool call that did not run as asked; smolagents shows the message to the model."""


@dataclass
class ToolLog:
    """The calls a peer made to the tools of one task, and how many of them failed."""

    calls: int = 0
    errors: int = 0


class PeerTool(smolagents.Tool):
    """One of localagent's tools, called as a smolagents tool (from code or as a tool call)."""

    output_type = "string"
    # The inputs come from the tool's JSON schema, so forward takes them by name.
    skip_forward_signature_validation = True

    def __init__(self, tool: Tool, log: ToolLog, cancel: CancelToken | None = None) -> None:
        self.name = tool.name
        self.description = tool.spec.description
        self.inputs = smolagents_inputs(tool.spec.parameters)
        self._tool = tool
        self._log = log
        self._cancel = cancel or CancelToken()
        super().__init__()

    def forward(self, *args: Any, **kwargs: Any) -> str:
        # Code may pass arguments by position, in the schema's order; a left-out optional one is None.
        given = dict(zip(self.inputs, args, strict=False)) | kwargs
        arguments = {name: value for name, value in given.items() if value is not None}
        self._log.calls += 1
        try:
            return self._tool.run(arguments, self._cancel)
        except InvalidArguments as error:
            self._log.errors += 1
            raise ToolFailure(prompts.invalid_arguments(self.name, str(error))) from None
        except ToolError as error:
            self._log.errors += 1
            raise ToolFailure(prompts.tool_error(str(error))) from None


def smolagents_inputs(parameters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A tool's JSON schema as smolagents' `inputs`: each property keeps its schema (a tool-calling
    agent sends it on), with a type smolagents knows, a description, and `nullable` when optional."""
    required = set(parameters.get("required", []))
    inputs = {}
    for name, schema in (parameters.get("properties") or {}).items():
        entry = dict(schema) if isinstance(schema, dict) else {}
        kind = entry.get("type")
        kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if k in _INPUT_TYPES]
        entry["type"] = kinds[0] if len(kinds) == 1 else (kinds or "any")
        entry["description"] = entry.get("description") or name
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs
