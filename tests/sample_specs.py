"""Tool specs the format tests share: a required string, an optional integer, two required
strings, and no parameters at all.

Import explicitly (`from sample_specs import ...`); this is not a pytest conftest.
"""

from __future__ import annotations

from localagent.tools.spec import ToolSpec

CALCULATOR = ToolSpec(
    name="calculator",
    description="Evaluate arithmetic.",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)
SEARCH = ToolSpec(
    name="search",
    description="Search the notes.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
)
WRITE_FILE = ToolSpec(
    name="write_file",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
CLOCK = ToolSpec(name="clock", description="The current time.")
