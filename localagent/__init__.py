"""localagent: an offline-first ReAct agent for local and hosted language models.

    from localagent import Agent
    result = Agent(workspace="notes/").run("How many lines does todo.txt have?")

Names are imported when first used, so `import localagent` stays light (llama.cpp loads only when a
local model does).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Agent": "localagent.agent",
    "opening_messages": "localagent.agent",
    "RunStream": "localagent.loop.run_stream",
    "RunResult": "localagent.loop.runner",
    "Settings": "localagent.settings",
    "SettingsError": "localagent.settings",
    "load_settings": "localagent.settings",
    "McpServer": "localagent.mcp_servers.spec",
    "Tool": "localagent.tools.base",
    "ToolError": "localagent.tools.base",
    "ToolLoadError": "localagent.tools.loading",
    "LocalagentError": "localagent.errors",
    "BackendError": "localagent.errors",
    "CancelToken": "localagent.core.cancel",
    "ModelTurn": "localagent.turn.model_turn",
}
__all__ = [
    "Agent",
    "BackendError",
    "CancelToken",
    "LocalagentError",
    "McpServer",
    "ModelTurn",
    "RunResult",
    "RunStream",
    "Settings",
    "SettingsError",
    "Tool",
    "ToolError",
    "ToolLoadError",
    "__version__",
    "load_settings",
    "opening_messages",
]

if TYPE_CHECKING:
    from localagent.agent import Agent, opening_messages
    from localagent.core.cancel import CancelToken
    from localagent.errors import BackendError, LocalagentError
    from localagent.loop.run_stream import RunStream
    from localagent.loop.runner import RunResult
    from localagent.mcp_servers.spec import McpServer
    from localagent.settings import Settings, SettingsError, load_settings
    from localagent.tools.base import Tool, ToolError
    from localagent.tools.loading import ToolLoadError
    from localagent.turn.model_turn import ModelTurn


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'localagent' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
