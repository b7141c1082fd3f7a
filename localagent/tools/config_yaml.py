"""YAML for set_key: where each key of the file's nested mappings has its value, found by reading
its lines by their indentation, and parsed by PyYAML. What is inside a list, a flow collection
(`{a: 1}`) or a value over several lines has no line of its own to change."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import yaml

from localagent.tools.config_syntax import (
    MULTI_LINE,
    Place,
    Unparsable,
    WrongKind,
    kind_name,
    lines_with_offsets,
    one_line,
    same_kind,
)

_QUOTED_KEY = r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'"
_PLAIN_KEY = r"[^\s#'\"\[\]{},&*!|>%@`?:-](?:[^#]*?[^\s#])?"
_KEY = re.compile(rf"(?P<key>{_QUOTED_KEY}|{_PLAIN_KEY})[ \t]*:(?=[ \t]|$)")
_COMMENT = re.compile(r"[ \t]#")
_ANCHOR_OR_TAG_ALONE = re.compile(r"[&!][^\s]*[ \t]*(?:#.*)?$")
_ANCHOR_OR_TAG = "its value has a YAML anchor, alias or tag"
_DOCUMENT_MARKS = ("---", "...", "%")
_NOT_PLAIN = object()  # what _plain gives for text that is no plain YAML scalar


class YamlSyntax:
    name = "YAML"
    suffixes = (".yaml", ".yml")

    def parse(self, text: str) -> Any:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise Unparsable(_reason(error)) from None

    def places(self, text: str) -> list[Place]:
        found: list[Place] = []
        parents: list[tuple[int, str]] = []  # the mappings a line is in: each one's indent and key
        below: int | None = None  # the indent of a line whose deeper lines are its own value or list
        continued: int | None = None  # the place of a plain value that deeper lines would go on with
        for offset, line in lines_with_offsets(text):
            stripped = line.strip()
            indent = len(line) - len(line.lstrip(" "))
            if below is not None and (not stripped or indent > below):
                if continued is not None and stripped and not stripped.startswith("#"):
                    found[continued] = replace(found[continued], refusal=MULTI_LINE)
                continue
            below = continued = None
            if not stripped or stripped.startswith("#"):
                continue
            if stripped.startswith(_DOCUMENT_MARKS):
                parents = []
                continue
            while parents and parents[-1][0] >= indent:
                parents.pop()
            key = _KEY.match(line, indent)
            if key is None:
                below = indent  # a list's item, with whatever is below it
                continue
            path = (*(name for _, name in parents), _key_name(key["key"]))
            rest = line[key.end() :]
            value_at = key.end() + len(rest) - len(rest.lstrip(" \t"))
            if not line[value_at:] or line[value_at] == "#":
                # A mapping or a list below, or else no value (null).
                found.append(Place(path, offset + key.end(), offset + key.end()))
                parents.append((indent, path[-1]))
                continue
            if _ANCHOR_OR_TAG_ALONE.match(line, value_at):
                # `base: &base`, a mapping below with a name for other keys to merge.
                found.append(Place(path, offset + value_at, offset + value_at, _ANCHOR_OR_TAG))
                parents.append((indent, path[-1]))
                continue
            found.append(_value_place(path, line[value_at:], offset + value_at))
            below = indent
            continued = len(found) - 1 if found[-1].refusal is None else None
        return found

    def written(self, old: Any, old_source: str, value: str) -> tuple[Any, str]:
        plain = _plain(value)
        if isinstance(old, str):
            quote = old_source[:1] if old_source[:1] in ("'", '"') else ""
            if not quote and plain == value:
                return value, value
            return value, _quoted(value, quote or '"')
        if old is None:
            return (value, _quoted(value, '"')) if plain is _NOT_PLAIN else (plain, value)
        if plain is _NOT_PLAIN or not same_kind(old, plain):
            raise WrongKind(kind_name(old))
        return plain, value


def _value_place(path: tuple[str, ...], value: str, start: int) -> Place:
    """The place of a value written after its key on the key's line."""
    first = value[0]
    if first in "|>":
        return Place(path, start, start, MULTI_LINE)
    if first in "[{":
        return Place(path, start, start, "its value is a list or a mapping")
    if first in "&*!":
        return Place(path, start, start, _ANCHOR_OR_TAG)
    if first in "'\"":
        end = _quoted_end(value)
        return Place(path, start, start, MULTI_LINE) if end is None else Place(path, start, start + end)
    comment = _COMMENT.search(value)
    return Place(path, start, start + len(value[: comment.start() if comment else None].rstrip()))


def _quoted_end(value: str) -> int | None:
    """Where the quoted scalar at the start of `value` ends, after its closing quote; None when it
    does not end on this line."""
    quote, position = value[0], 1
    escape = "\\" if quote == '"' else "''"  # a quote inside '...' is written twice
    while position < len(value):
        if value.startswith(escape, position):
            position += 2
        elif value[position] == quote:
            return position + 1
        else:
            position += 1
    return None


def _key_name(written: str) -> str:
    """The key as PyYAML reads it, as text: `"a b"` is a b, and `1` is 1."""
    try:
        return str(yaml.safe_load(written))
    except yaml.YAMLError:
        return written


def _plain(value: str) -> Any:
    """What PyYAML reads `value` as when it is written as it is after `key: `."""
    if not value or value[0] in "&*!|>%@`'\"" or _COMMENT.search(value):
        return _NOT_PLAIN
    try:
        loaded = yaml.safe_load(f"key: {value}\n")
    except yaml.YAMLError:
        return _NOT_PLAIN
    if not isinstance(loaded, dict) or list(loaded) != ["key"] or isinstance(loaded["key"], dict | list):
        return _NOT_PLAIN
    return loaded["key"]


def _quoted(value: str, quote: str) -> str:
    if quote == "'" and value.isprintable():
        return "'" + value.replace("'", "''") + "'"
    return json.dumps(value, ensure_ascii=False)  # JSON's escapes are all YAML escapes


def _reason(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        return f"{error.problem or error.context} (line {error.problem_mark.line + 1})"
    return one_line(error)
