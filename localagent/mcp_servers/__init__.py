"""Tools from Model Context Protocol servers, started over stdio with the official `mcp` SDK.

`spec` says how to start a server (light: the settings use it); `connection` and `toolset` import the
SDK and run only when an agent has MCP servers.
"""

from localagent.mcp_servers.spec import McpServer

__all__ = ["McpServer"]
