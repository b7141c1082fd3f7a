"""Reading an Action Input that is almost JSON: in code fences, with trailing text, single quotes or
trailing commas. A repair is made only when it is unambiguous; each one is reported."""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

_SPACES = re.compile(r"\s*")
_TOO_DEEP = "the JSON is nested too deeply"
_JSON_WORDS = {"true": "True", "false": "False", "null": "None"}


@dataclass(frozen=True)
class ReadJson:
    value: Any
    text: str  # the JSON object text that was read, before any repair
    repairs: tuple[str, ...] = ()


class JsonUnreadable(ValueError):
    pass


class _NotJsonConstant(ValueError):
    pass


def load_json(text: str) -> Any:
    """json.loads, with every way it can fail (and NaN or Infinity, which JSON lacks) as JsonUnreadable."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise JsonUnreadable(f"{error.msg} at column {error.colno}") from None
    except _NotJsonConstant as error:
        raise JsonUnreadable(f"{error} is not a JSON value") from None
    except ValueError:  # Python refuses integers of more than 4300 digits
        raise JsonUnreadable("a number is too long") from None
    except RecursionError:
        raise JsonUnreadable(_TOO_DEEP) from None
    return _whole_characters(value)


def _reject_constant(name: str) -> Any:
    raise _NotJsonConstant(name)


def _whole_characters(value: Any) -> Any:
    """The value, unless an escape like \\ud800 left half a surrogate pair, which no file can hold."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise JsonUnreadable("a \\u escape is half of a surrogate pair, not a character") from None
    except RecursionError:
        raise JsonUnreadable(_TOO_DEEP) from None
    return value


def read_json_object(text: str) -> ReadJson:
    """The first JSON object in text; raises JsonUnreadable with a short reason."""
    repairs: list[str] = []
    start = text.find("{")
    if start < 0:
        raise JsonUnreadable("no JSON object (it must start with '{')")
    fenced = "```" in text[:start]
    if fenced:
        repairs.append("took the JSON out of a code fence")
    end = _matching_brace(text, start)
    if end is None:
        left_open = "a quote or bracket is left open" if "}" in text[start:] else "missing '}'"
        raise JsonUnreadable(f"the JSON object is not closed ({left_open})")
    candidate = text[start : end + 1]
    after = text[end + 1 :].strip()
    if after.removeprefix("```" if fenced else "").strip():
        repairs.append("ignored the text after the JSON object")
    try:
        value = load_json(candidate)
    except JsonUnreadable as error:
        value = _repaired(candidate, error, repairs)
    if not isinstance(value, dict):
        raise JsonUnreadable("the arguments must be a JSON object")
    return ReadJson(value, candidate, tuple(repairs))


def _repaired(candidate: str, error: JsonUnreadable, repairs: list[str]) -> Any:
    without_commas = _drop_trailing_commas(candidate)
    if without_commas != candidate:
        try:
            value = load_json(without_commas)
        except JsonUnreadable:
            pass
        else:
            repairs.append("removed trailing commas")
            return value
    # Python's own literal parser settles quoting unambiguously, or fails.
    for source in (candidate, _python_words(candidate)):
        try:
            with warnings.catch_warnings():  # invalid escapes like '\d' warn, and are read as written
                warnings.simplefilter("ignore")
                value = ast.literal_eval(source)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if _is_json_like(value):
            repairs.append("read single quotes or Python literals as JSON")
            return _whole_characters(value)
    raise error


def _matching_brace(text: str, start: int) -> int | None:
    depth = 0
    quote: str | None = None
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index
    return None


def _drop_trailing_commas(text: str) -> str:
    out: list[str] = []
    quote: str | None = None
    escaped = False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char == '"':
            quote = char
        elif char == ",":
            following = _SPACES.match(text, index + 1).end()
            if text[following : following + 1] in ("}", "]"):
                continue
        out.append(char)
    return "".join(out)


def _python_words(text: str) -> str:
    """Replace JSON's true/false/null outside strings with Python's names."""
    out: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote:
            out.append(char)
            if char == "\\" and index + 1 < len(text):
                out.append(text[index + 1])
                index += 2
                continue
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
            out.append(char)
        else:
            word = next((w for w in _JSON_WORDS if text.startswith(w, index)), None)
            if word and not text[index + len(word) : index + len(word) + 1].isalnum():
                out.append(_JSON_WORDS[word])
                index += len(word)
                continue
            out.append(char)
        index += 1
    return "".join(out)


def _is_json_like(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json_like(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_is_json_like(item) for item in value)
    return value is None or isinstance(value, str | int | float | bool)
