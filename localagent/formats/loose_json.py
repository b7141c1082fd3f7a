"""Reading an Action Input that is almost JSON, with the json-repair package.

json-repair reads what models write: single quotes, Python literals, comments, trailing commas,
unquoted keys and words, an object cut before its closing brace. Where it has to guess, it can lose
text without a trace: `{"a": 2+2}` becomes `{"a": 2}` and `{'a': 'it's'}` becomes `{"a": "it's'"}`;
it also lets NaN and half surrogate pairs through. So a repair is kept only when the value holds
every word of the input, in order, and nothing more; otherwise the model is asked to write it again.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import json_repair

_TOO_DEEP = "the JSON is nested too deeply"
_FENCE = "```"
_NOT_JSON_WORDS = {"NaN", "Infinity", "-Infinity"}  # json-repair reads them as strings
# The pieces of almost-JSON: comments are skipped; a string may be cut off by the end of the text.
_TOKEN = re.compile(
    r"""(?P<comment>/\*.*?(?:\*/|\Z)|//[^\n]*)
    |"(?P<double>(?:[^"\\]|\\.)*)(?:"|\Z)
    |'(?P<single>(?:[^'\\]|\\.)*)(?:'|\Z)
    |(?P<word>[^\s{}\[\]:,"'/]+)
    |(?P<punctuation>[{}\[\]:,])
    |(?P<other>\S)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class ReadJson:
    value: Any
    text: str  # the JSON object text that was read, before any repair
    repairs: tuple[str, ...] = ()
    closed: bool = True  # False when the object ran to the end of the text without its closing brace


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


# Longer almost-JSON is not repaired: a model that writes that much broken JSON is looping.
REPAIR_LIMIT = 20_000


def read_json_object(text: str) -> ReadJson:
    """The first JSON object in text, repaired where that loses nothing; raises JsonUnreadable."""
    start = text.find("{")
    if start < 0:
        raise JsonUnreadable("no JSON object (it must start with '{')")
    repairs: list[str] = []
    fenced = _FENCE in text[:start]
    if fenced:
        repairs.append("took the JSON out of a code fence")
    end = matching_bracket(text, start)
    if end is None:
        candidate = text[start:].rstrip()
        candidate = candidate.removesuffix(_FENCE).rstrip() if fenced else candidate
    else:
        candidate = text[start : end + 1]
        after = text[end + 1 :].strip()
        if after.removeprefix(_FENCE if fenced else "").strip():
            repairs.append("ignored the text after the JSON object")
    try:
        value = load_json(candidate)
    except JsonUnreadable as error:
        value = _repaired(candidate, error if end is not None else _not_closed(candidate))
        repairs.append(
            "closed the brackets and quotes the model left open"
            if end is None
            else "repaired almost-JSON (quotes, commas, comments or Python literals)"
        )
    if not isinstance(value, dict):
        raise JsonUnreadable("the arguments must be a JSON object")
    return ReadJson(value, candidate, tuple(repairs), closed=end is not None)


def without_code_fence(text: str) -> str:
    """The inside of a fenced code block (```lang ... ```), or the text itself when it is not one."""
    stripped = text.strip()
    if not stripped.startswith(_FENCE):
        return text
    _, _, inside = stripped.partition("\n")
    closing = inside.rfind(_FENCE)
    return (inside[:closing] if closing >= 0 else inside).strip()


def _not_closed(candidate: str) -> JsonUnreadable:
    left_open = "a quote or bracket is left open" if "}" in candidate else "missing '}'"
    return JsonUnreadable(f"the JSON object is not closed ({left_open})")


def _repaired(candidate: str, refusal: JsonUnreadable) -> Any:
    if len(candidate) > REPAIR_LIMIT:
        raise refusal  # json-repair takes seconds on a long run of braces or escapes
    try:
        value = json_repair.repair_json(candidate, return_objects=True, skip_json_loads=True)
    except Exception:  # noqa: BLE001 - any failure inside the repair means the input stays unreadable
        raise refusal from None
    try:
        value = _whole_characters(_finite(value))
        kept = isinstance(value, dict) and _keeps_every_word(candidate, value)
    except RecursionError:
        raise JsonUnreadable(_TOO_DEEP) from None
    if not kept:
        raise refusal
    return value


def _keeps_every_word(text: str, value: dict[str, Any]) -> bool:
    """Whether the repaired value holds the input's strings, words and numbers, in order, and no others."""
    tokens = list(_scalar_tokens(text))
    position = 0
    for leaf in _leaves(value):
        if position >= len(tokens):
            return False
        kind, token = tokens[position]
        if isinstance(leaf, str) and kind == "string":
            if token != leaf:
                return False
            position += 1
        elif isinstance(leaf, str):  # unquoted words, joined into one string
            words = leaf.split()
            taken = tokens[position : position + len(words)]
            if not words or taken != [("word", word) for word in words] or _NOT_JSON_WORDS & set(words):
                return False
            position += len(words)
        elif kind != "word" or not _same_scalar(token, leaf):
            return False
        else:
            position += 1
    return position == len(tokens)


def _scalar_tokens(text: str) -> Iterator[tuple[str, str]]:
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind in ("comment", "punctuation"):
            continue
        if kind == "double":
            yield "string", _unescaped(match["double"], '"')
        elif kind == "single":
            yield "string", _unescaped(match["single"], "'")
        else:
            yield ("word" if kind == "word" else "other"), match.group()


def _unescaped(body: str, quote: str) -> str:
    source = body if quote == '"' else body.replace("\\'", "'").replace('"', '\\"')
    try:
        value = json.loads(f'"{source}"')
    except ValueError:
        return body
    return _joined_surrogates(value) if isinstance(value, str) else body


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _same_scalar(word: str, leaf: Any) -> bool:
    if isinstance(leaf, bool):
        return word.lower() == str(leaf).lower()
    if leaf is None:
        return word.lower() in ("null", "none")
    try:
        return float(word) == float(leaf)
    except (ValueError, OverflowError):
        return False


def _finite(value: Any) -> Any:
    """The value, unless a number in it is NaN or infinite, which JSON cannot hold."""
    if any(isinstance(leaf, float) and not math.isfinite(leaf) for leaf in _leaves(value)):
        raise JsonUnreadable("NaN or Infinity is not a JSON value")
    return value


def _whole_characters(value: Any) -> Any:
    """The value with surrogate pairs joined, unless half of one is left, which no file can hold."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except RecursionError:
        raise JsonUnreadable(_TOO_DEEP) from None
    joined = _joined_surrogates(text)
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonUnreadable("a \\u escape is half of a surrogate pair, not a character") from None
    return value if joined == text else json.loads(joined)


def _joined_surrogates(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def matching_bracket(text: str, start: int) -> int | None:
    """The index of the bracket that closes the one at `start`, outside '...' and "..." strings."""
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
