"""Tool schemas written in the Gorilla / BFCL dialect, read as JSON Schema.

The Berkeley Function Calling Leaderboard and the Gorilla tool sets write Python type names in `type`
(`dict`, `float`, `tuple`, `any`) and flag parameters with a non-standard `optional` (the `required`
list decides). Published tool sets copy them, so they are read as object, number, array and no
constraint, in every subschema. The BFCL data's other quirks need no mapping: `required` may name a
parameter missing from `properties` (it takes any value), `minItems`/`maxItems` may sit on a non-array
(JSON Schema ignores them there), and a `default` may not fit its type (it is only an annotation).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

DIALECT_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}
_ONE_SCHEMA = {
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
}
_SCHEMA_LISTS = {"items", "prefixItems", "allOf", "anyOf", "oneOf"}
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}


@dataclass(frozen=True)
class DialectReading:
    schema: Any
    mapped: tuple[str, ...]  # the dialect's names found, as "dict→object", in a fixed order


def from_gorilla_dialect(schema: Any) -> DialectReading:
    """`schema` with the dialect's type names mapped to JSON Schema; a plain schema comes back as is."""
    found: set[str] = set()
    converted = _schema(schema, found)
    return DialectReading(converted if found else schema, _readings(found))


def describe_dialect(mapped: Iterable[str]) -> str:
    """One line for the display: which dialect names were read, and as what."""
    names = {reading.split("→")[0] for reading in mapped}
    return f"read Gorilla/BFCL type names as JSON Schema: {', '.join(_readings(names))}"


def _readings(names: set[str]) -> tuple[str, ...]:
    return tuple(f"{name}→{DIALECT_TYPES[name] or 'any value'}" for name in DIALECT_TYPES if name in names)


def _schema(schema: Any, found: set[str]) -> Any:
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            kept = _types(value, found)
            if kept is not None:
                out[key] = kept
        elif key == "optional" and isinstance(value, bool | list):
            continue  # BFCL's flag; `required` says which parameters are optional
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_schema(item, found) for item in value]
        elif key in _ONE_SCHEMA or key in _SCHEMA_LISTS:
            out[key] = _schema(value, found)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _schema(sub, found) for name, sub in value.items()}
        else:
            out[key] = value
    return out


def _types(value: Any, found: set[str]) -> Any:
    """The `type` value in JSON Schema, or None when one of its types is `any`."""
    listed = value if isinstance(value, list) else [value]
    names = [t for t in listed if isinstance(t, str) and t in DIALECT_TYPES]
    found.update(names)
    if "any" in names:
        return None
    if not names:
        return value
    mapped: list[Any] = []
    for kind in listed:
        kind = DIALECT_TYPES.get(kind, kind) if isinstance(kind, str) else kind
        if kind not in mapped:  # float and number are one type now
            mapped.append(kind)
    return mapped if isinstance(value, list) else mapped[0]
