"""JSON schema -> Lark rules that accept exactly the JSON texts a small model may write for the schema.

The rules use the subset of Lark that the python `lark` parser, llguidance and (through `gbnf.py`)
llama.cpp all read. The layout is compact and on one line: the only whitespace allowed is one optional
space after `:` and after `,`. Scalars are terminals (single lexemes, fast in llguidance); objects and
arrays are rules. Everything is bounded (string length, items, extra properties, depth of untyped values).

What a grammar cannot express exactly is approximated by a looser rule and listed in `SchemaRules.loose`;
callers validate the parsed value against the schema afterwards.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from localagent.texttag.regex_syntax import (
    JSON_RAW,
    CharSet,
    Node,
    Repeat,
    UnsupportedPattern,
    bound_repeats,
    full_match,
    json_safe,
    literal,
    parse_regex,
    to_regex,
)
from localagent.texttag.regex_syntax import Alt as RegexAlt
from localagent.texttag.regex_syntax import Concat as RegexConcat


class SchemaGrammarError(ValueError):
    """The schema is invalid or accepts no value at all."""


@dataclass(frozen=True)
class GrammarLimits:
    max_string_length: int = 2000  # default cap for strings with no maxLength
    max_array_items: int = 32  # default cap for arrays with no maxItems
    max_extra_properties: int = 16  # cap for additionalProperties pairs
    max_any_depth: int = 3  # nesting depth of an unconstrained JSON value


@dataclass(frozen=True)
class SchemaRules:
    root: str  # rule name matching one JSON value of the schema
    rules: dict[str, str]  # name -> Lark body, in definition order (only this schema's own rules)
    loose: list[str]  # readable notes on each keyword approximated (validate the value after parsing)


# ---------------------------------------------------------------- shared JSON primitives

# llama.cpp's integers: no leading zeros (JSON forbids them), at most 16 digits.
_INT_DIGITS = 16
_INT_LIMIT = 10**_INT_DIGITS - 1
_UNSIGNED = r"0|[1-9][0-9]{0,15}"
# JSON allows leading zeros in an exponent, and Python writes 1e-09.
_NUMBER = rf"-?(?:{_UNSIGNED})(?:\.[0-9]{{1,16}})?(?:[eE][-+]?[0-9]{{1,16}})?"


def shared_rules(limits: GrammarLimits = GrammarLimits()) -> dict[str, str]:
    """The `json_`/`JSON_` rules every schema's rules may refer to; emit them once per grammar."""
    items, pairs = limits.max_array_items, limits.max_extra_properties
    rules = {
        "JSON_ESCAPE": r'/\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4}/',
        "JSON_CHAR": r'/[^"\\\x00-\x1f]/ | JSON_ESCAPE',
        "JSON_STRING": f'"\\"" JSON_CHAR~0..{limits.max_string_length} "\\""',
        "JSON_INTEGER": f"/-?(?:{_UNSIGNED})/",
        "JSON_NUMBER": f"/{_NUMBER}/",
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
        members = _list_of(f"json_member_{depth}", f"json_next_member_{depth}", 0, pairs)
        rules[f"json_object_{depth}"] = " ".join(p for p in ['"{"', members, '"}"'] if p)
        items_text = _list_of(below, f"json_next_item_{depth}", 0, items)
        rules[f"json_array_{depth}"] = " ".join(p for p in ['"["', items_text, '"]"'] if p)
        rules[f"json_value_{depth}"] = f"json_scalar | json_object_{depth} | json_array_{depth}"
        below = f"json_value_{depth}"
    rules["json_value"] = below
    return rules


def render_rules(rules: dict[str, str]) -> str:
    return "".join(f"{name}: {body}\n" for name, body in rules.items())


def schema_grammar(schema: Any, limits: GrammarLimits = GrammarLimits()) -> str:
    """A standalone Lark grammar whose `start` matches one JSON value of `schema`."""
    converted = schema_rules(schema, "schema", limits)
    rules = {"start": converted.root, **converted.rules, **shared_rules(limits)}
    return render_rules(reachable_rules(rules, "start"))


def reachable_rules(rules: dict[str, str], start: str) -> dict[str, str]:
    """The rules `start` can reach; unused shared rules would only slow lark's grammar analysis."""
    seen = {start}
    pending = [start]
    while pending:
        for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rules[pending.pop()]):
            if name in rules and name not in seen:
                seen.add(name)
                pending.append(name)
    return {name: body for name, body in rules.items() if name in seen}


def schema_rules(schema: Any, prefix: str, limits: GrammarLimits = GrammarLimits()) -> SchemaRules:
    """Lark rules for `schema`, all named `{prefix}_...` (rules) or `{PREFIX}_...` (terminals)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", prefix):
        raise ValueError(f"grammar prefix must match [a-z][a-z0-9_]*, not {prefix!r}")
    converter = _Converter(schema, prefix, limits)
    converter.refs["#"] = prefix
    try:
        converter.visit_named(schema, prefix, "#")
    except _NoValue as nothing:
        raise SchemaGrammarError(f"{nothing}: the schema accepts no value") from None
    rules = {prefix: converter.rules.pop(prefix), **converter.rules}
    return SchemaRules(root=prefix, rules=rules, loose=converter.loose)


def _repeat(symbol: str, low: int, high: int) -> str:
    """`symbol` repeated low..high times, as Lark; empty text when high is 0.

    Repeat single symbols, not groups: lark expands `x~0..n` into n+1 alternatives and analyses them
    in time cubic in their length, so a two-symbol group costs eight times as much.
    """
    if high <= 0:
        return ""
    return f"{symbol}~{low}" if low == high else f"{symbol}~{low}..{high}"


def _list_of(first: str, next_one: str, low: int, high: int) -> str:
    """`first` then `next_one` (a comma and another one) repeated, low..high items in all."""
    if high <= 0:
        return ""
    sequence = f"{first} {_repeat(next_one, max(low - 1, 0), high - 1)}".strip()
    return sequence if low else f"({sequence})?"


# ---------------------------------------------------------------- the converter

_ANNOTATIONS = {
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
_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
_STRING_KEYS = {"minLength", "maxLength", "pattern", "format"}
_NUMBER_KEYS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
_ARRAY_KEYS = {
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
_OBJECT_KEYS = {
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
_APPLICATORS = {"not", "if", "then", "else"}
_UNSUPPORTED = {
    "integer": {"multipleOf"},
    "number": {"multipleOf"},
    "array": {"uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems"},
    "object": {
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "unevaluatedProperties",
    },
}

# RFC 3339 / RFC 4122 shapes, as llama.cpp writes them (fractional seconds widened to 1..9 digits).
_DATE = r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_TIME = (
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_FORMATS = {
    "date": _DATE,
    "time": _TIME,
    "date-time": f"{_DATE}T{_TIME}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
}
_MAX_REF_HOPS = 32
_MAX_DISTRIBUTED = 16


class _NoValue(Exception):
    """The (sub)schema accepts nothing; the caller decides whether that is an error."""


@dataclass
class _Converter:
    root: Any
    prefix: str
    limits: GrammarLimits
    rules: dict[str, str] = field(default_factory=dict)
    loose: list[str] = field(default_factory=list)
    refs: dict[str, str] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    pending: str | None = None  # a name already chosen for the schema being visited
    merge_depth: int = 0

    # -- naming and output

    def fresh(self, base: str) -> str:
        if base == self.pending:
            self.pending = None
            return base
        name = re.sub(r"[^a-z0-9]+", "_", base.lower()).strip("_")[:60].rstrip("_") or self.prefix
        if name != self.prefix and not name.startswith(f"{self.prefix}_"):
            name = f"{self.prefix}_{name}"
        candidate, number = name, 2
        while candidate in self.names:
            candidate, number = f"{name}_{number}", number + 1
        self.names.add(candidate)
        return candidate

    def define_rule(self, name: str, body: str) -> str:
        self.rules[name] = body
        return name

    def terminal(self, base: str, body: str) -> str:
        return self.define_rule(self.fresh(base).upper(), body)

    def note(self, where: str, message: str) -> None:
        self.loose.append(f"{where}: {message}")

    def visit_named(self, schema: Any, rule: str, where: str) -> str:
        """Visit `schema` so that the lowercase rule `rule` matches it (directly, or as an alias)."""
        self.names.add(rule)
        self.rules.setdefault(rule, "")  # keeps definition order stable for recursive references
        outer, self.pending = self.pending, rule
        try:
            symbol = self.visit(schema, rule, where)
        finally:
            self.pending = outer
        if self.rules.get(symbol) == "":  # the schema only refers back to a reference being defined
            self.note(where, "`$ref` cycle with no schema in between; any JSON value accepted")
            symbol = "json_value"
        if symbol != rule:
            self.define_rule(rule, symbol)
        return rule

    # -- dispatch

    def visit(self, schema: Any, name: str, where: str) -> str:
        """The Lark symbol for one JSON value of `schema`; new rules are named after `name`."""
        if schema is True or schema == {}:
            return "json_value"
        if schema is False:
            raise _NoValue(where)
        if not isinstance(schema, dict):
            raise SchemaGrammarError(f"{where}: a schema must be an object or a boolean, not {schema!r}")
        if "$ref" in schema:
            return self.visit_ref(schema, name, where)
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return self.visit({"anyOf": [rest, {"type": "null"}]}, name, where)
        if "allOf" in schema:
            return self.visit(self.merge_all_of(schema, where), name, where)
        if "anyOf" in schema or "oneOf" in schema:
            return self.visit_any_of(schema, name, where)
        for keyword in sorted(_APPLICATORS & schema.keys()):
            self.note(where, f"`{keyword}` is not enforced")
        if "const" in schema or "enum" in schema:
            return self.visit_enum(schema, name, where)
        types = self.types(schema, where)
        if types is None:
            return "json_value"
        if len(types) > 1:
            options = [self.visit_typed(schema, t, f"{name}_{t}", where) for t in types]
            return self.define_rule(self.fresh(name), " | ".join(dict.fromkeys(options)))
        return self.visit_typed(schema, types[0], name, where)

    def types(self, schema: dict[str, Any], where: str) -> list[str] | None:
        declared = schema.get("type")
        if declared is None:
            return self.inferred_type(schema)
        listed = declared if isinstance(declared, list) else [declared]
        for t in listed:
            if not isinstance(t, str):
                raise SchemaGrammarError(f"{where}: `type` must be a string or a list of strings, not {t!r}")
            if t not in _TYPES:
                raise SchemaGrammarError(f"{where}: unknown type {t!r}; expected one of {', '.join(_TYPES)}")
        if not listed:
            raise SchemaGrammarError(f"{where}: `type` is an empty list")
        unique = list(dict.fromkeys(listed))
        if "number" in unique and "integer" in unique:
            unique.remove("integer")
        return unique

    @staticmethod
    def inferred_type(schema: dict[str, Any]) -> list[str] | None:
        keys = schema.keys()
        for keywords, inferred in (
            (_OBJECT_KEYS, "object"),
            (_ARRAY_KEYS, "array"),
            (_STRING_KEYS, "string"),
        ):
            if keys & keywords:
                return [inferred]
        if keys & _NUMBER_KEYS:
            return ["number"]
        return None

    def visit_typed(self, schema: dict[str, Any], kind: str, name: str, where: str) -> str:
        for keyword in sorted(_UNSUPPORTED.get(kind, set()) & schema.keys()):
            self.note(where, f"`{keyword}` is not enforced")
        if kind == "string":
            return self.visit_string(schema, name, where)
        if kind == "integer":
            return self.visit_integer(schema, name, where)
        if kind == "number":
            return self.visit_number(schema, name, where)
        if kind == "array":
            return self.visit_array(schema, name, where)
        if kind == "object":
            return self.visit_object(schema, name, where)
        return "JSON_BOOLEAN" if kind == "boolean" else "JSON_NULL"

    # -- $ref

    def visit_ref(self, schema: dict[str, Any], name: str, where: str) -> str:
        ref = schema["$ref"]
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in _ANNOTATIONS}
        if siblings:
            return self.visit({"allOf": [{"$ref": ref}, siblings]}, name, where)
        if not isinstance(ref, str):
            raise SchemaGrammarError(f"{where}: `$ref` must be a string, not {ref!r}")
        if ref in self.refs:
            return self.refs[ref]
        try:
            target = self.resolve(ref)
        except LookupError as error:
            self.note(where, f"`$ref` {ref!r} not followed ({error}); any JSON value accepted")
            return "json_value"
        rule = self.fresh(f"{self.prefix}_{ref.rsplit('/', 1)[-1]}")
        self.refs[ref] = rule
        return self.visit_named(target, rule, ref)

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise LookupError("only references inside the same schema are supported")
        node = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            key = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise LookupError(f"no {key!r} in the schema")
        return node

    def dereferenced(self, schema: Any, where: str) -> Any:
        """`schema` with a top-level `$ref` replaced by its target (merged with its siblings)."""
        for _ in range(_MAX_REF_HOPS):
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
                return schema
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            target = self.resolve(schema["$ref"])
            if not siblings:
                schema = target
            elif isinstance(target, dict):
                schema = {"allOf": [target, siblings]}
            else:
                schema = siblings if target is True else False
        raise SchemaGrammarError(f"{where}: `$ref` chain longer than {_MAX_REF_HOPS}")

    # -- combinators

    def visit_any_of(self, schema: dict[str, Any], name: str, where: str) -> str:
        keyword = "anyOf" if "anyOf" in schema else "oneOf"
        if "anyOf" in schema and "oneOf" in schema:
            self.note(where, "`oneOf` next to `anyOf` is not enforced")
        options = schema[keyword]
        if not isinstance(options, list) or not options:
            raise SchemaGrammarError(f"{where}: `{keyword}` must be a non-empty list")
        siblings = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf") and k not in _ANNOTATIONS}
        symbols = []
        for index, option in enumerate(options):
            merged = {"allOf": [siblings, option]} if siblings else option
            try:
                symbols.append(self.visit(merged, f"{name}_{index}", f"{where}/{keyword}/{index}"))
            except _NoValue:
                continue
        if not symbols:
            raise _NoValue(where)
        if keyword == "oneOf" and len(symbols) > 1 and not self.exclusive_types(options):
            self.note(where, "`oneOf` is treated as `anyOf` (a value may match several options)")
        unique = list(dict.fromkeys(symbols))
        return unique[0] if len(unique) == 1 else self.define_rule(self.fresh(name), " | ".join(unique))

    @staticmethod
    def exclusive_types(options: list[Any]) -> bool:
        kinds = [o.get("type") if isinstance(o, dict) else None for o in options]
        if not all(isinstance(k, str) for k in kinds) or len(set(kinds)) != len(kinds):
            return False
        return not {"integer", "number"} <= set(kinds)

    def merge_all_of(self, schema: dict[str, Any], where: str) -> Any:
        self.merge_depth += 1
        try:
            if self.merge_depth > _MAX_REF_HOPS:
                raise SchemaGrammarError(f"{where}: `allOf` nests or refers to itself too deeply")
            return self.merged(schema, where)
        finally:
            self.merge_depth -= 1

    def merged(self, schema: dict[str, Any], where: str) -> Any:
        members = schema["allOf"]
        if not isinstance(members, list) or not members:
            raise SchemaGrammarError(f"{where}: `allOf` must be a non-empty list")
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        parts = [self.dereferenced(m, where) for m in ([rest, *members] if rest else members)]
        if any(p is False for p in parts):
            raise _NoValue(where)
        parts = [p for p in parts if p is not True]
        for index, part in enumerate(parts):
            if not isinstance(part, dict):
                raise SchemaGrammarError(
                    f"{where}/allOf: a schema must be an object or a boolean, not {part!r}"
                )
            if "anyOf" in part or "oneOf" in part:  # allOf(A, anyOf(B, C)) == anyOf(allOf(A, B), allOf(A, C))
                keyword = "anyOf" if "anyOf" in part else "oneOf"
                options = part[keyword]
                others = [
                    *parts[:index],
                    {k: v for k, v in part.items() if k != keyword},
                    *parts[index + 1 :],
                ]
                if isinstance(options, list) and 0 < len(options) <= _MAX_DISTRIBUTED:
                    return {"anyOf": [{"allOf": [*others, option]} for option in options]}
        merged: dict[str, Any] = {}
        for part in parts:
            if "allOf" in part:
                part = self.merge_all_of(part, where)
            for key, value in part.items():
                merged[key] = (
                    value if key not in merged else self.merge_keyword(key, merged[key], value, where)
                )
        return merged

    def merge_keyword(self, key: str, old: Any, new: Any, where: str) -> Any:
        if key in _ANNOTATIONS or old == new:
            return old
        if key == "type":
            kept = [
                t for t in dict.fromkeys(_as_list(old) + _as_list(new)) if _allows(old, t) and _allows(new, t)
            ]
            if not kept:
                raise _NoValue(where)
            return kept
        if key == "enum" and isinstance(old, list) and isinstance(new, list):
            return [value for value in old if value in new]
        if key == "const":
            raise _NoValue(where)
        if key == "properties" and isinstance(old, dict) and isinstance(new, dict):
            both = {**old, **new}
            return {k: {"allOf": [old[k], new[k]]} if k in old and k in new else v for k, v in both.items()}
        if key == "required" and isinstance(old, list) and isinstance(new, list):
            return list(dict.fromkeys(old + new))
        if key in ("minimum", "minLength", "minItems", "exclusiveMinimum", "minProperties"):
            return max(old, new)
        if key in ("maximum", "maxLength", "maxItems", "exclusiveMaximum", "maxProperties"):
            return min(old, new)
        if key == "additionalProperties" and (old is False or new is False):
            self.note(
                where, "`additionalProperties: false` of one `allOf` member applied to the merged object"
            )
            return False
        self.note(where, f"`allOf`: only the first `{key}` is enforced")
        return old

    # -- enum and const

    def visit_enum(self, schema: dict[str, Any], name: str, where: str) -> str:
        values = self.enum_values(schema, where)
        types = self.types(schema, where) if "type" in schema else None
        if types is not None:
            values = [v for v in values if any(_has_type(v, t) for t in types)]
        if not values:
            raise _NoValue(where)
        texts = sorted({_json_text(v, where) for v in values}, key=lambda t: (-len(t), t))
        if all(not isinstance(v, dict | list) for v in values):
            body = " | ".join(lark_literal(text) for text in texts)
        else:
            nodes = [_layout_regex(json.loads(text)) for text in texts]
            body = f"/{to_regex(RegexAlt(tuple(nodes)))}/"
        return self.terminal(name, body)

    @staticmethod
    def enum_values(schema: dict[str, Any], where: str) -> list[Any]:
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise SchemaGrammarError(f"{where}: `enum` must be a non-empty list")
            if "const" in schema:
                values = [v for v in values if v == schema["const"]]
            return values
        return [schema["const"]]

    # -- strings

    def visit_string(self, schema: dict[str, Any], name: str, where: str) -> str:
        low = _count(schema, "minLength", 0, where)
        high = _count(schema, "maxLength", None, where)
        if high is not None and high < low:
            raise _NoValue(where)
        pattern, fmt = schema.get("pattern"), schema.get("format")
        if pattern is not None or fmt is not None:
            body = self.string_shape(pattern, fmt, where)
            if body is not None:
                if "minLength" in schema or "maxLength" in schema:
                    self.note(
                        where, "`minLength`/`maxLength` are not enforced together with a pattern or format"
                    )
                return self.terminal(name, f"/{body}/")
        if high is None:
            high = max(low, self.limits.max_string_length)
            if low == 0:
                return "JSON_STRING"
        return self.terminal(name, f'"\\"" {_repeat("JSON_CHAR", low, high)} "\\""')

    def string_shape(self, pattern: Any, fmt: Any, where: str) -> str | None:
        """A regex for the quoted string, or None when the pattern or format is not supported."""
        if pattern is not None:
            if not isinstance(pattern, str):
                raise SchemaGrammarError(f"{where}: `pattern` must be a string")
            if fmt is not None:
                self.note(where, f"`format` {fmt!r} is not enforced together with a pattern")
            try:
                return to_regex(RegexConcat((literal('"'), self.pattern_node(pattern), literal('"'))))
            except UnsupportedPattern as error:
                self.note(where, f"`pattern` {pattern!r} is not enforced ({error})")
                return None
        if fmt in _FORMATS:
            return f'"{_FORMATS[fmt]}"'
        self.note(where, f"`format` {fmt!r} is not enforced")
        return None

    def pattern_node(self, pattern: str) -> Node:
        limit = self.limits.max_string_length
        any_chars = Repeat(JSON_RAW, 0, None)
        return json_safe(bound_repeats(full_match(parse_regex(pattern), any_chars), limit))

    # -- numbers

    def visit_integer(self, schema: dict[str, Any], name: str, where: str) -> str:
        low, high = (
            _bound(schema, "minimum", "exclusiveMinimum", where),
            _bound(schema, "maximum", "exclusiveMaximum", where),
        )
        if low is None and high is None:
            return "JSON_INTEGER"
        lowest = -_INT_LIMIT if low is None else (math.floor(low[0]) + 1 if low[1] else math.ceil(low[0]))
        highest = _INT_LIMIT if high is None else (math.ceil(high[0]) - 1 if high[1] else math.floor(high[0]))
        lowest, highest = max(lowest, -_INT_LIMIT), min(highest, _INT_LIMIT)
        if lowest > highest:
            raise _NoValue(where)
        return self.terminal(name, f"/{integer_range_regex(lowest, highest)}/")

    def visit_number(self, schema: dict[str, Any], name: str, where: str) -> str:
        low, high = (
            _bound(schema, "minimum", "exclusiveMinimum", where),
            _bound(schema, "maximum", "exclusiveMaximum", where),
        )
        if low is None and high is None:
            return "JSON_NUMBER"
        exact = high is None and low == (0, False)
        if not exact:
            self.note(where, "number bounds are checked after parsing, not by the grammar")
        if low is not None and low[0] >= 0:
            return self.terminal(name, f"/{_NUMBER.removeprefix('-?')}/")
        return "JSON_NUMBER"

    # -- arrays

    def visit_array(self, schema: dict[str, Any], name: str, where: str) -> str:
        items, prefix_items = schema.get("items"), schema.get("prefixItems")
        if prefix_items is not None and not isinstance(prefix_items, list):
            self.note(where, "`prefixItems` is not a list; read as `items`")
            items, prefix_items = (prefix_items if items is None else items), None
        if isinstance(items, list):  # draft 4 tuple form
            prefix_items, items = items, schema.get("additionalItems", False)
        elif prefix_items is not None and items is None:
            items = False
        low = _count(schema, "minItems", 0, where)
        high = _count(schema, "maxItems", None, where)
        rule = self.define_rule(self.fresh(name), "")  # the array comes before its helper rules
        head = [
            self.visit(s, f"{rule}_{i}", f"{where}/prefixItems/{i}") for i, s in enumerate(prefix_items or [])
        ]
        try:
            item = self.visit(True if items is None else items, f"{rule}_item", f"{where}/items")
        except _NoValue:
            item = None
        extra_low = max(0, low - len(head))
        cap = max(extra_low, self.limits.max_array_items - len(head)) if high is None else high - len(head)
        if item is None:
            cap = 0
        if cap < extra_low:
            raise _NoValue(where)
        next_item = self.define_rule(f"{rule}_next", f"JSON_COMMA {item}") if cap else ""
        if head:
            parts = [" JSON_COMMA ".join(head), _repeat(next_item, extra_low, cap)]
        else:
            parts = [_list_of(str(item), next_item, extra_low, cap)]
        return self.define_rule(rule, " ".join(p for p in ['"["', *parts, '"]"'] if p))

    # -- objects

    def visit_object(self, schema: dict[str, Any], name: str, where: str) -> str:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(properties, dict):
            raise SchemaGrammarError(f"{where}: `properties` must be an object")
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaGrammarError(f"{where}: `required` must be a list of strings")
        fields = dict(properties)
        fields.update({key: True for key in required if key not in fields})
        rule = self.define_rule(self.fresh(name), "")  # the object comes before its helper rules
        entries: list[tuple[str, bool]] = []
        for key, sub in fields.items():
            try:
                value = self.visit(sub, f"{rule}_{key}", f"{where}/properties/{_pointer(key)}")
            except _NoValue:
                if key in required:
                    raise _NoValue(where) from None
                continue
            entries.append((f"{lark_literal(_json_text(key, where))} JSON_COLON {value}", key in required))
        extra = self.extra_pair(schema, rule, list(fields), where)
        return self.define_rule(rule, self.object_body(rule, entries, extra))

    def object_body(self, rule: str, entries: list[tuple[str, bool]], extra: str | None) -> str:
        """Known properties in schema order (optional ones may be left out), then bounded extra pairs."""
        max_extra = self.limits.max_extra_properties if extra else 0
        next_extra = self.define_rule(f"{rule}_next_extra", f"JSON_COMMA {extra}") if extra else ""
        # Lark expands each optional item into two alternatives of the whole rule, so runs of more than
        # one are split into tail rules: tail(i) matches the items from i on, each after its comma.
        items = [(f"JSON_COMMA {text}" if req else f"(JSON_COMMA {text})?", not req) for text, req in entries]
        if extra:
            items.append((_repeat(next_extra, 0, max_extra), True))
        tails: dict[int, str] = {}

        def tail(start: int) -> str:
            if sum(optional for _, optional in items[start:]) <= 1:
                return " ".join(text for text, _ in items[start:])
            text, optional = items[start]
            if not optional:
                return f"{text} {tail(start + 1)}"
            if start not in tails:
                tails[start] = f"{rule}_tail_{start}"
                self.define_rule(tails[start], f"{text} {tail(start + 1)}")
            return tails[start]

        first_required = next((i for i, (_, req) in enumerate(entries) if req), None)
        starts = range(len(entries) if first_required is None else first_required + 1)
        options = [f"{entries[start][0]} {tail(start + 1)}".strip() for start in starts]
        if extra and first_required is None:
            options.append(_list_of(extra, next_extra, 1, max_extra))
        if not options:
            return '"{" "}"'
        if first_required is not None and len(options) == 1:
            return f'"{{" {options[0]} "}}"'
        return f'"{{" ({" | ".join(options)}){"?" if first_required is None else ""} "}}"'

    def extra_pair(self, schema: dict[str, Any], rule: str, known: list[str], where: str) -> str | None:
        additional = schema.get(
            "additionalProperties", "properties" not in schema and "required" not in schema
        )
        if additional is False or self.limits.max_extra_properties == 0:
            return None
        try:
            value = self.visit(additional, f"{rule}_extra_value", f"{where}/additionalProperties")
        except _NoValue:
            return None
        key = self.terminal(f"{rule}_key", _key_excluding(known, self.limits)) if known else "JSON_STRING"
        return self.define_rule(f"{rule}_extra", f"{key} JSON_COLON {value}")


# ---------------------------------------------------------------- helpers


_BACKSLASH = CharSet.char("\\")


def _key_excluding(known: list[str], limits: GrammarLimits) -> str:
    """A terminal for a JSON string key that is none of `known` (so extras cannot redefine a property)."""
    trie: dict[str, Any] = {}
    for key in known:
        node = trie
        for unit in (_json_unit(c) for c in key):
            node = node.setdefault(unit, {})
        node[""] = {}  # end marker: the key stops here

    def diverging(node: dict[str, Any]) -> str:
        """Keys that leave the trie at this node: a character (or escape) no known key has here."""
        units = [u for u in node if u]
        raw = CharSet.of((ord(u), ord(u)) for u in units if len(u) == 1)
        options = [f"/{to_regex(JSON_RAW.minus(raw))}/"]
        if all(len(u) == 1 for u in units):
            options.append("JSON_ESCAPE")
        else:  # no key writes "/" as an escape, so some simple escape is always left
            taken = CharSet.of((ord(u[1]), ord(u[1])) for u in units if len(u) == 2)
            letters = CharSet.of((ord(c), ord(c)) for c in '"\\/bfnrt').minus(taken)
            options.append(f"/{to_regex(RegexConcat((_BACKSLASH, letters)))}/")
            if all(len(u) <= 2 for u in units):  # a known key's \uXXXX here rules out all of them (stricter)
                options.append(r"/\\u[0-9a-fA-F]{4}/")
        options += [f"{lark_literal(u)} ({diverging(node[u])})" for u in units]
        return " | ".join(options)

    def proper_prefixes(node: dict[str, Any]) -> list[str]:
        options = [] if "" in node else [""]
        for unit in (u for u in node if u):
            rest = proper_prefixes(node[unit])
            if rest:
                options.append(f"{lark_literal(unit)} {_optional_group(rest)}".strip())
        return options

    tail = _repeat("JSON_CHAR", 0, limits.max_string_length)
    options = [f"({diverging(trie)}) {tail}", *proper_prefixes(trie)]
    return f'"\\"" {_optional_group(options)} "\\""'


def _optional_group(options: list[str]) -> str:
    present = [o for o in options if o]
    if not present:
        return ""
    group = f"({' | '.join(present)})"
    return group + "?" if len(present) < len(options) else group


def _json_unit(c: str) -> str:
    return json.dumps(c, ensure_ascii=False)[1:-1]


def lark_literal(text: str) -> str:
    """A Lark string literal for `text`, or a regex when a literal could not be read the same everywhere."""
    if all(0x20 <= ord(c) < 0x7F or (ord(c) > 0xA0 and c.isprintable()) for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"/{to_regex(literal(text))}/"


def integer_range_regex(low: int, high: int) -> str:
    """A regex for the integers in [low, high] written without leading zeros (and no `-0`).

    Alternatives run from the most digits to the fewest, so a leftmost-first regex engine (Python's,
    as lark uses it) matches the whole digit run rather than a prefix of it.
    """
    parts = []
    if low < 0:
        parts.append("-" + _group(_unsigned_range(max(1, -min(high, -1)), -low)))
    if high >= 0:
        parts.append(_unsigned_range(max(low, 0), high))
    return "|".join(parts)


def _unsigned_range(low: int, high: int) -> str:
    blocks: list[tuple[int, int, str]] = []  # (min digits, max digits, regex) from long to short
    for digits in range(len(str(high)), len(str(low)) - 1, -1):
        start = max(low, 10 ** (digits - 1) if digits > 1 else 0)
        end = min(high, 10**digits - 1)
        full = digits > 1 and start == 10 ** (digits - 1) and end == 10**digits - 1
        if full and blocks and blocks[-1][2] == "" and blocks[-1][0] == digits + 1:
            blocks[-1] = (digits, blocks[-1][1], "")
        else:
            blocks.append((digits, digits, "" if full else _same_length(str(start), str(end))))
    out = []
    for shortest, longest, regex in blocks:
        if regex:
            out.append(regex)
        else:
            count = f"{{{shortest - 1}}}" if shortest == longest else f"{{{shortest - 1},{longest - 1}}}"
            out.append(f"[1-9][0-9]{count}")
    return "|".join(out)


def _same_length(low: str, high: str) -> str:
    if low == high:
        return low
    if low[0] == high[0]:
        return low[0] + _group(_same_length(low[1:], high[1:]))
    rest = len(low) - 1
    options = []
    first, last = int(low[0]), int(high[0])
    if low[1:] != "0" * rest:
        options.append(low[0] + _group(_same_length(low[1:], "9" * rest)))
        first += 1
    tail = ""
    if high[1:] != "9" * rest:
        tail = high[0] + _group(_same_length("0" * rest, high[1:]))
        last -= 1
    if first <= last:
        digit = str(first) if first == last else f"[{first}-{last}]"
        options.append(digit + ("" if rest == 0 else "[0-9]" if rest == 1 else f"[0-9]{{{rest}}}"))
    if tail:
        options.append(tail)
    return "|".join(options)


def _group(regex: str) -> str:
    return f"(?:{regex})" if "|" in regex else regex


def _layout_regex(value: Any) -> Node:
    """The regex AST for `value` written compactly, with the optional space after `:` and `,`."""
    space = Repeat(CharSet.char(" "), 0, 1)
    if isinstance(value, dict):
        items: list[Node] = [literal("{")]
        for index, (key, item) in enumerate(value.items()):
            if index:
                items += [literal(","), space]
            items += [literal(json.dumps(key, ensure_ascii=False)), literal(":"), space, _layout_regex(item)]
        return RegexConcat((*items, literal("}")))
    if isinstance(value, list):
        items = [literal("[")]
        for index, item in enumerate(value):
            if index:
                items += [literal(","), space]
            items.append(_layout_regex(item))
        return RegexConcat((*items, literal("]")))
    return literal(json.dumps(value, ensure_ascii=False))


def _json_text(value: Any, where: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise SchemaGrammarError(f"{where}: {value!r} is not a JSON value ({error})") from None


def _has_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return _has_type(value, "number") and (isinstance(value, int) or value.is_integer())
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    python = {"string": str, "boolean": bool, "null": type(None), "array": list, "object": dict}[kind]
    return isinstance(value, python)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _allows(declared: Any, kind: str) -> bool:
    """Whether a `type` keyword admits values of `kind` (every integer is a number)."""
    types = _as_list(declared)
    return kind in types or (kind == "integer" and "number" in types)


def _count(schema: dict[str, Any], key: str, default: int | None, where: str) -> int | None:
    value = schema.get(key, default)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SchemaGrammarError(f"{where}: `{key}` must be a non-negative integer, not {value!r}")
    return value


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str, where: str) -> tuple[float, bool] | None:
    """The tighter of an inclusive and an exclusive bound, as (value, is_exclusive)."""
    found: list[tuple[float, bool]] = []
    value = schema.get(inclusive)
    flag = schema.get(exclusive)
    for key, candidate in ((inclusive, value), (exclusive, flag)):
        if (
            candidate is not None
            and not isinstance(candidate, bool)
            and not isinstance(candidate, int | float)
        ):
            raise SchemaGrammarError(f"{where}: `{key}` must be a number, not {candidate!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        found.append((value, flag is True))  # draft 4: a boolean exclusive flag modifies the inclusive bound
    if isinstance(flag, int | float) and not isinstance(flag, bool):
        found.append((flag, True))
    if not found:
        return None
    lower = inclusive.startswith("min")
    return max(found) if lower else min(found, key=lambda b: (b[0], not b[1]))


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
