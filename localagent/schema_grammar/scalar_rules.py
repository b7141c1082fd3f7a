"""Lark for bounded numbers and for `enum` / `const` values: terminal bodies, or the shared symbol."""

from __future__ import annotations

import json
import math
from typing import Any

from localagent.schema_grammar.integer_ranges import integer_range_regex
from localagent.schema_grammar.json_lexemes import (
    INT_LIMIT,
    NUMBER_REGEX,
    lark_literal,
    layout_regex,
)
from localagent.schema_grammar.keywords import (
    NoValue,
    SchemaGrammarError,
    bound,
    has_type,
    json_equal,
    json_text,
)
from localagent.schema_grammar.regex_syntax import Alt, to_regex


def integer_rule(schema: dict[str, Any], where: str) -> str:
    """`JSON_INTEGER`, or a regex body for exactly the integers between the bounds."""
    low = bound(schema, "minimum", "exclusiveMinimum", where)
    high = bound(schema, "maximum", "exclusiveMaximum", where)
    if low is None and high is None:
        return "JSON_INTEGER"
    lowest = -math.inf if low is None else (math.floor(low[0]) + 1 if low[1] else math.ceil(low[0]))
    highest = math.inf if high is None else (math.ceil(high[0]) - 1 if high[1] else math.floor(high[0]))
    if lowest > highest:
        raise NoValue(where, "no integer lies between `minimum` and `maximum`")
    lowest, highest = max(lowest, -INT_LIMIT), min(highest, INT_LIMIT)
    if lowest > highest:
        raise NoValue(where, f"every integer allowed has more than {len(str(INT_LIMIT))} digits")
    return f"/{integer_range_regex(int(lowest), int(highest))}/"


def number_rule(schema: dict[str, Any], where: str) -> tuple[str, bool]:
    """`JSON_NUMBER` or a regex body, and whether it enforces the bounds exactly (only `minimum: 0`)."""
    low = bound(schema, "minimum", "exclusiveMinimum", where)
    high = bound(schema, "maximum", "exclusiveMaximum", where)
    if low is None and high is None:
        return "JSON_NUMBER", True
    if low is not None and high is not None and _empty_interval(low, high):
        raise NoValue(where, "no number lies between `minimum` and `maximum`")
    exact = high is None and low == (0, False)
    if low is not None and low[0] >= 0:
        return f"/{NUMBER_REGEX.removeprefix('-?')}/", exact
    return "JSON_NUMBER", exact


def enum_rule(schema: dict[str, Any], types: list[str] | None, where: str) -> str:
    """A terminal body for the `enum` or `const` values of the declared types."""
    values = _enum_values(schema, where)
    if types is not None:
        values = [v for v in values if any(has_type(v, t) for t in types)]
    if not values:
        raise NoValue(where, "no `enum` or `const` value has the schema's type")
    texts = sorted({json_text(v, where) for v in values}, key=lambda t: (-len(t), t))
    plain = [t for t in texts if isinstance(json.loads(t), str | bool) or t == "null"]
    nodes = [layout_regex(json.loads(text)) for text in texts if text not in plain]
    options = [lark_literal(text) for text in plain]
    if nodes:  # numbers (`-2` is also `-2.0`), arrays and objects, with the layout's spaces
        options.append(f"/{to_regex(Alt(tuple(nodes)) if len(nodes) > 1 else nodes[0])}/")
    return " | ".join(options)


def _empty_interval(low: tuple[float, bool], high: tuple[float, bool]) -> bool:
    """Whether no number lies between two (value, is_exclusive) bounds."""
    return low[0] > high[0] or (low[0] == high[0] and (low[1] or high[1]))


def _enum_values(schema: dict[str, Any], where: str) -> list[Any]:
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list):
            raise SchemaGrammarError(f"{where}: `enum` must be a list")
        if not values:
            raise NoValue(where, "`enum` is empty")
        if "const" in schema:
            values = [v for v in values if json_equal(v, schema["const"])]
        return values
    return [schema["const"]]
