"""TOML for set_key: where each key's value is written, found by reading the file's lines as TOML
does (tables, dotted and quoted keys, strings and lists over several lines), parsed by tomllib."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from localagent.tools.config_syntax import (
    MULTI_LINE,
    KeyPath,
    Place,
    Unparsable,
    WrongKind,
    kind_name,
    one_line,
    same_kind,
)

_BARE = r"[A-Za-z0-9_-]+"
_BASIC = r'"(?:[^"\\\n]|\\.)*"'
_LITERAL = r"'[^'\n]*'"
_NAME = rf"(?:{_BARE}|{_BASIC}|{_LITERAL})"
_DOTTED = rf"{_NAME}(?:[ \t]*\.[ \t]*{_NAME})*"
_KEY_NAME = re.compile(_NAME)
_TABLE = re.compile(rf"[ \t]*(?P<open>\[\[?)[ \t]*(?P<key>{_DOTTED})[ \t]*\]")
_KEY_VALUE = re.compile(rf"[ \t]*(?P<key>{_DOTTED})[ \t]*=[ \t]*")


class TomlSyntax:
    name = "TOML"
    suffixes = (".toml",)

    def parse(self, text: str) -> Any:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise Unparsable(one_line(error)) from None

    def places(self, text: str) -> list[Place]:
        found = []
        table: KeyPath = ()
        in_array_of_tables = False  # its keys repeat in every [[table]], so none is one key
        position = 0
        while position < len(text):
            line_end = _line_end(text, position)
            line = text[position:line_end]
            if header := _TABLE.match(line):
                table = _key_names(header["key"])
                in_array_of_tables = header["open"] == "[["
            elif entry := _KEY_VALUE.match(line):
                start = position + entry.end()
                end, line_end = _value_end(text, start)
                if not in_array_of_tables:
                    refusal = MULTI_LINE if "\n" in text[start:end] else None
                    found.append(Place((*table, *_key_names(entry["key"])), start, end, refusal))
            position = line_end + 1
        return found

    def written(self, old: Any, old_source: str, value: str) -> tuple[Any, str]:
        if isinstance(old, str):
            return value, _string(value, old_source)
        source = value.lower() if isinstance(old, bool) else value
        literal = _literal(source)
        if literal is None or not same_kind(old, literal):
            raise WrongKind(kind_name(old))
        return literal, source


def _string(value: str, old_source: str) -> str:
    """`value` quoted as the key's string was: 'literal' when it can be, else "basic"."""
    if old_source.startswith("'") and "'" not in value and value.isprintable():
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)  # JSON's escapes are all TOML escapes


def _literal(source: str) -> Any:
    """What TOML reads `source` as, written after `key = `; None when it is not one value."""
    if "#" in source:
        return None  # a comment of its own would be written into the line
    try:
        return tomllib.loads(f"key = {source}")["key"]
    except tomllib.TOMLDecodeError:
        return None


def _key_names(dotted: str) -> KeyPath:
    return tuple(_unquoted(name.group()) for name in _KEY_NAME.finditer(dotted))


def _unquoted(name: str) -> str:
    if name.startswith('"'):
        return str(tomllib.loads(f"key = {name}")["key"])
    return name[1:-1] if name.startswith("'") else name


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end == -1 else end


def _value_end(text: str, start: int) -> tuple[int, int]:
    """The end of the value that starts at `start` (before its comment and trailing spaces), and the
    end of its last line: a list or a string may run over several lines."""
    depth = 0
    end = position = start
    while position < len(text):
        char = text[position]
        if char == "\n" and depth == 0:
            return end, position
        if char == "#":
            position = _line_end(text, position)
        elif char in "\"'":
            position = end = _string_end(text, position)
        elif char in " \t\r\n":
            position += 1
        else:
            depth = max(0, depth + (char in "[{") - (char in "]}"))
            position = end = position + 1
    return end, len(text)


def _string_end(text: str, start: int) -> int:
    """Where the string that opens at `start` ends, after its closing quotes."""
    quote = text[start]
    closing = quote * 3 if text.startswith(quote * 3, start) else quote
    position = start + len(closing)
    while position < len(text):
        if text[position] == "\\" and quote == '"':
            position += 2
        elif text.startswith(closing, position):
            end = position + len(closing)
            while len(closing) == 3 and end < len(text) and text[end] == quote and end - position < 5:
                end += 1  # up to two quotes right before the closing three are the string's own
            return end
        elif text[position] == "\n" and len(closing) == 1:
            return position
        else:
            position += 1
    return len(text)
