"""Tools the agent can call: the Tool type, built-in tools and loading user tools."""

from localagent.tools.base import InvalidArguments, Tool, ToolError
from localagent.tools.loading import DEFAULT_TOOLS, ToolLoadError, builtin_tools, select_tools
from localagent.tools.spec import ToolSpec
from localagent.tools.workspace import Workspace

__all__ = [
    "DEFAULT_TOOLS",
    "InvalidArguments",
    "Tool",
    "ToolError",
    "ToolLoadError",
    "ToolSpec",
    "Workspace",
    "builtin_tools",
    "select_tools",
]
