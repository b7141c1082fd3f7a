"""The text-tag grammar source (grammars/texttag.lark), read as an ordered set of one-line definitions."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_DEFINITION = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<body>.+?)\s*$")


@cache
def template_text() -> str:
    return resources.files("localagent").joinpath("data/texttag.lark").read_text(encoding="utf-8")


@cache
def template_definitions() -> dict[str, str]:
    """Rule and terminal bodies by name, in file order."""
    definitions: dict[str, str] = {}
    for number, line in enumerate(template_text().splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        match = _DEFINITION.match(stripped)
        if match is None:
            raise ValueError(f"texttag.lark:{number}: expected one 'name: body' definition per line")
        definitions[match["name"]] = match["body"]
    return definitions


def render_definitions(definitions: dict[str, str]) -> str:
    return "".join(f"{name}: {body}\n" for name, body in definitions.items())
