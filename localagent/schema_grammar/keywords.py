"""The JSON Schema vocabulary the grammar converter reads: keyword sets, checked keyword values, errors."""

from __future__ import annotations

import json
from typing import Any


class SchemaGrammarError(ValueError):
    """The schema is invalid or accepts no value at all."""


class NoValue(Exception):
    """The (sub)schema at `where` accepts nothing; the caller decides whether that is an error."""

    def __init__(self, where: str, reason: str = "no value fits") -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


ANNOTATIONS = {
    "$schema",
    "$id",
    "$comment",
    "$anchor",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
}
MAX_COUNT = 1_000_000  # the largest `minLength`, `maxItems`, ... a grammar is built for
TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
STRING_KEYS = {"minLength", "maxLength", "pattern", "format"}
NUMBER_KEYS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
ARRAY_KEYS = {
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedItems",
}
OBJECT_KEYS = {
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
}
TYPED_KEYS = STRING_KEYS | NUMBER_KEYS | ARRAY_KEYS | OBJECT_KEYS  # keywords that apply to one type only
APPLICATORS = {"not", "if", "then", "else"}
# Keywords the grammar leaves to the validation after parsing, by type.
UNSUPPORTED = {
    "integer": {"multipleOf"},
    "number": {"multipleOf"},
    "array": ARRAY_KEYS - {"items", "prefixItems", "additionalItems", "minItems", "maxItems"},
    "object": OBJECT_KEYS - {"properties", "required", "additionalProperties"},
}

# RFC 3339 / RFC 4122 shapes, as llama.cpp writes them (fractional seconds widened to 1..9 digits).
_DATE = r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_TIME = (
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
FORMATS = {
    "date": _DATE,
    "time": _TIME,
    "date-time": f"{_DATE}T{_TIME}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
}


def has_type(value: Any, kind: str) -> bool:
    """Whether the JSON value `value` is of the schema type `kind`."""
    if kind == "integer":
        return has_type(value, "number") and (isinstance(value, int) or value.is_integer())
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    python = {"string": str, "boolean": bool, "null": type(None), "array": list, "object": dict}[kind]
    return isinstance(value, python)


def json_equal(first: Any, second: Any) -> bool:
    """JSON equality: 1 equals 1.0, but true is not 1 (Python says it is)."""
    if isinstance(first, bool) or isinstance(second, bool):
        return type(first) is type(second) and first == second
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(json_equal(first[k], second[k]) for k in first)
    if isinstance(first, list) and isinstance(second, list):
        return len(first) == len(second) and all(map(json_equal, first, second))
    if has_type(first, "number") and has_type(second, "number"):
        return first == second
    return type(first) is type(second) and first == second


def declared_types(declared: Any, where: str) -> list[str]:
    """The types a `type` keyword lists, each once; SchemaGrammarError for anything but known type names."""
    listed = declared if isinstance(declared, list) else [declared]
    for kind in listed:
        if not isinstance(kind, str):
            raise SchemaGrammarError(f"{where}: `type` must be a string or a list of strings, not {kind!r}")
        if kind not in TYPES:
            raise SchemaGrammarError(f"{where}: unknown type {kind!r}; expected one of {', '.join(TYPES)}")
    if not listed:
        raise SchemaGrammarError(f"{where}: `type` is an empty list")
    return list(dict.fromkeys(listed))


def count(schema: dict[str, Any], key: str, default: int | None, where: str) -> int | None:
    if key not in schema:
        return default
    value = schema[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SchemaGrammarError(f"{where}: `{key}` must be a non-negative integer, not {value!r}")
    if value > MAX_COUNT:  # an upper bound this high bounds nothing a model writes; a lower one, no grammar
        if key.startswith("max"):
            return MAX_COUNT
        raise SchemaGrammarError(
            f"{where}: `{key}` {value} is more than a grammar can require (at most {MAX_COUNT})"
        )
    return value


def bound(schema: dict[str, Any], inclusive: str, exclusive: str, where: str) -> tuple[float, bool] | None:
    """The tighter of an inclusive and an exclusive bound, as (value, is_exclusive)."""
    value, flag = schema.get(inclusive), schema.get(exclusive)
    for key, candidate in ((inclusive, value), (exclusive, flag)):
        if candidate is not None and not isinstance(candidate, int | float):
            raise SchemaGrammarError(f"{where}: `{key}` must be a number, not {candidate!r}")
    found: list[tuple[float, bool]] = []
    if has_type(value, "number"):
        found.append((value, flag is True))  # draft 4: a boolean exclusive flag modifies the inclusive bound
    if has_type(flag, "number"):
        found.append((flag, True))
    if not found:
        return None
    lower = inclusive.startswith("min")
    return max(found) if lower else min(found, key=lambda b: (b[0], not b[1]))


def json_text(value: Any, where: str) -> str:
    """`value` as compact JSON (for `const`, `enum` and property names)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise SchemaGrammarError(f"{where}: {value!r} is not a JSON value ({error})") from None


def pointer(key: str) -> str:
    """`key` escaped as one step of a JSON pointer."""
    return key.replace("~", "~0").replace("/", "~1")
