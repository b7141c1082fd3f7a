"""The entries of a BibTeX file as records: a reference list is a table of its own kind."""

from __future__ import annotations

import re

_ENTRY = re.compile(r"@(?P<type>\w+)\s*[{(]\s*(?P<key>[^,\s]+)\s*,")
_FIELD = re.compile(r"\s*(?P<name>[\w-]+)\s*=\s*")
_SKIPPED_TYPES = {"comment", "preamble", "string"}


def bibtex_records(text: str) -> tuple[list[str], list[list[str]]]:
    """The column names (key, type, then every field name in order of appearance) and a row per entry."""
    entries: list[dict[str, str]] = []
    for match in _ENTRY.finditer(text):
        if match.group("type").lower() in _SKIPPED_TYPES:
            continue
        fields = {"key": match.group("key"), "type": match.group("type").lower()}
        fields.update(_fields(text, match.end()))
        entries.append(fields)
    names = list(dict.fromkeys(name for entry in entries for name in entry))
    return names, [[entry.get(name, "") for name in names] for entry in entries]


def _fields(text: str, at: int) -> dict[str, str]:
    fields: dict[str, str] = {}
    while True:
        match = _FIELD.match(text, at)
        if not match:
            return fields
        value, at = _value(text, match.end())
        fields[match.group("name").lower()] = " ".join(value.split())
        at = _after_comma(text, at)
        if at < 0:
            return fields


def _value(text: str, at: int) -> tuple[str, int]:
    """A field's value (braces or quotes taken off) and where it ends."""
    if at < len(text) and text[at] in '{"':
        closing = "}" if text[at] == "{" else '"'
        depth, start = 0, at + 1
        for end in range(at + 1, len(text)):
            char = text[end]
            if char == "{":
                depth += 1
            elif char == "}" and depth > 0:
                depth -= 1
            elif char == closing and depth == 0:
                return text[start:end].replace("{", "").replace("}", ""), end + 1
        return text[start:], len(text)
    match = re.compile(r"[^,}\n]*").match(text, at)
    end = match.end() if match else at
    return text[at:end].strip(), end


def _after_comma(text: str, at: int) -> int:
    """Where the next field starts, or -1 at the end of the entry."""
    match = re.compile(r"\s*(,?)").match(text, at)
    if not match or not match.group(1):
        return -1
    return match.end()
