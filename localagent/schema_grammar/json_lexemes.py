"""Lark text for JSON: the shared `json_`/`JSON_` rules, bounded repeats and lists, literals.

The layout is compact and on one line: the only whitespace allowed is one optional space after `:`
and after `,`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localagent.schema_grammar.regex_syntax import CharSet, Node, Repeat, literal, to_regex
from localagent.schema_grammar.regex_syntax import Concat as RegexConcat


@dataclass(frozen=True)
class GrammarLimits:
    max_string_length: int = 2000  # default cap for strings with no maxLength
    max_array_items: int = 32  # default cap for arrays with no maxItems
    max_extra_properties: int = 16  # cap for additionalProperties pairs
    max_any_depth: int = 3  # nesting depth of an unconstrained JSON value


DEFAULT_LIMITS = GrammarLimits()


# llama.cpp's integers: no leading zeros (JSON forbids them), at most 16 digits.
INT_DIGITS = 16
INT_LIMIT = 10**INT_DIGITS - 1
_UNSIGNED = rf"0|[1-9][0-9]{{0,{INT_DIGITS - 1}}}"
# The shortest round-trip form of a double (Python's, JavaScript's) has up to 20 digits after the
# point (0.00012345678901234567); JSON allows leading zeros in an exponent, and Python writes 1e-09.
NUMBER_REGEX = rf"-?(?:{_UNSIGNED})(?:\.[0-9]{{1,20}})?(?:[eE][-+]?[0-9]{{1,16}})?"


def shared_rules(limits: GrammarLimits = DEFAULT_LIMITS) -> dict[str, str]:
    """The `json_`/`JSON_` rules every schema's rules may refer to; emit them once per grammar."""
    rules = {
        "JSON_ESCAPE": r'/\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4}/',
        "JSON_CHAR": r'/[^"\\\x00-\x1f]/ | JSON_ESCAPE',
        "JSON_STRING": f'"\\"" JSON_CHAR~0..{limits.max_string_length} "\\""',
        "JSON_INTEGER": f"/-?(?:{_UNSIGNED})/",
        "JSON_NUMBER": f"/{NUMBER_REGEX}/",
        "JSON_BOOLEAN": '"true" | "false"',
        "JSON_NULL": '"null"',
        "JSON_COLON": '": " | ":"',
        "JSON_COMMA": '", " | ","',
        "json_scalar": "JSON_STRING | JSON_NUMBER | JSON_BOOLEAN | JSON_NULL",
    }
    below = "json_scalar"
    for depth in range(1, limits.max_any_depth + 1):
        rules[f"json_member_{depth}"] = f"JSON_STRING JSON_COLON {below}"
        rules[f"json_next_member_{depth}"] = f"JSON_COMMA json_member_{depth}"
        rules[f"json_next_item_{depth}"] = f"JSON_COMMA {below}"
        members = list_of(f"json_member_{depth}", f"json_next_member_{depth}", 0, limits.max_extra_properties)
        rules[f"json_object_{depth}"] = sequence('"{"', members, '"}"')
        items = list_of(below, f"json_next_item_{depth}", 0, limits.max_array_items)
        rules[f"json_array_{depth}"] = sequence('"["', items, '"]"')
        rules[f"json_value_{depth}"] = f"json_scalar | json_object_{depth} | json_array_{depth}"
        below = f"json_value_{depth}"
    rules["json_value"] = below
    return rules


def sequence(*parts: str) -> str:
    """The non-empty `parts`, one after the other."""
    return " ".join(part for part in parts if part)


def repeat(symbol: str, low: int, high: int) -> str:
    """`symbol` repeated low..high times, as Lark; empty text when high is 0.

    Repeat single symbols, not groups: lark expands `x~0..n` into n+1 alternatives and analyses them
    in time cubic in their length, so a two-symbol group costs eight times as much.
    """
    if high <= 0:
        return ""
    return f"{symbol}~{low}" if low == high else f"{symbol}~{low}..{high}"


def list_of(first: str, next_one: str, low: int, high: int) -> str:
    """`first` then `next_one` (a comma and another one) repeated, low..high items in all."""
    if high <= 0:
        return ""
    items = sequence(first, repeat(next_one, max(low - 1, 0), high - 1))
    return items if low else f"({items})?"


def lark_literal(text: str) -> str:
    """A Lark string literal for `text`, or a regex when a literal could not be read the same everywhere."""
    if all(0x20 <= ord(c) < 0x7F or (ord(c) > 0xA0 and c.isprintable()) for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"/{to_regex(literal(text))}/"


def number_regex(value: float) -> Node:
    """The regex AST for one number: an integral one as an integer (`-2` for -2.0)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= INT_LIMIT:
        value = int(value)
    return literal(str(value) if isinstance(value, int) else json.dumps(value))


def layout_regex(value: Any) -> Node:
    """The regex AST for `value` written compactly, with the optional space after `:` and `,`."""
    space = Repeat(CharSet.char(" "), 0, 1)
    if isinstance(value, dict):
        items: list[Node] = [literal("{")]
        for index, (key, item) in enumerate(value.items()):
            if index:
                items += [literal(","), space]
            items += [literal(json.dumps(key, ensure_ascii=False)), literal(":"), space, layout_regex(item)]
        return RegexConcat((*items, literal("}")))
    if isinstance(value, list):
        items = [literal("[")]
        for index, item in enumerate(value):
            if index:
                items += [literal(","), space]
            items.append(layout_regex(item))
        return RegexConcat((*items, literal("]")))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return number_regex(value)
    return literal(json.dumps(value, ensure_ascii=False))
