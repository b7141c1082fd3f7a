"""JSON schema -> Lark rules that accept exactly the JSON texts a small model may write for the schema.

The rules use the subset of Lark that the python `lark` parser, llguidance and (through `gbnf.py`)
llama.cpp all read. The layout is compact and on one line: the only whitespace allowed is one optional
space after `:` and after `,`. Scalars are terminals (single lexemes, fast in llguidance); objects and
arrays are rules. Everything is bounded (string length, items, extra properties, depth of untyped values).

What a grammar cannot express exactly is approximated by a looser rule and listed in `SchemaRules.loose`;
callers validate the parsed value against the schema afterwards.

The JSON lexemes are in `json_lexemes.py`, integer ranges in `integer_ranges.py`, object bodies in
`object_rules.py`, `allOf` merging in `all_of.py` and the keyword vocabulary in `schema_keywords.py`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from localagent.schema_grammar.all_of import merge_all_of, resolve
from localagent.schema_grammar.integer_ranges import integer_range_regex
from localagent.schema_grammar.json_lexemes import (
    DEFAULT_LIMITS,
    INT_LIMIT,
    NUMBER_REGEX,
    GrammarLimits,
    lark_literal,
    layout_regex,
    list_of,
    repeat,
    sequence,
    shared_rules,
)
from localagent.schema_grammar.keywords import (
    ANNOTATIONS,
    APPLICATORS,
    ARRAY_KEYS,
    FORMATS,
    NUMBER_KEYS,
    OBJECT_KEYS,
    STRING_KEYS,
    TYPES,
    UNSUPPORTED,
    NoValue,
    SchemaGrammarError,
    bound,
    count,
    has_type,
    json_text,
    pointer,
)
from localagent.schema_grammar.object_rules import key_excluding, object_body
from localagent.schema_grammar.regex_syntax import (
    JSON_RAW,
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
from localagent.schema_grammar.regex_syntax import Alt as RegexAlt
from localagent.schema_grammar.regex_syntax import Concat as RegexConcat

__all__ = [
    "GrammarLimits",
    "SchemaGrammarError",
    "SchemaRules",
    "integer_range_regex",
    "lark_literal",
    "reachable_rules",
    "render_rules",
    "schema_grammar",
    "schema_rules",
    "shared_rules",
]


@dataclass(frozen=True)
class SchemaRules:
    root: str  # rule name matching one JSON value of the schema
    rules: dict[str, str]  # name -> Lark body, in definition order (only this schema's own rules)
    loose: list[str]  # readable notes on each keyword approximated (validate the value after parsing)


def render_rules(rules: dict[str, str]) -> str:
    return "".join(f"{name}: {body}\n" for name, body in rules.items())


def schema_grammar(schema: Any, limits: GrammarLimits = DEFAULT_LIMITS) -> str:
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


def schema_rules(schema: Any, prefix: str, limits: GrammarLimits = DEFAULT_LIMITS) -> SchemaRules:
    """Lark rules for `schema`, all named `{prefix}_...` (rules) or `{PREFIX}_...` (terminals)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", prefix):
        raise ValueError(f"grammar prefix must match [a-z][a-z0-9_]*, not {prefix!r}")
    converter = _Converter(schema, prefix, limits)
    converter.refs["#"] = prefix
    try:
        converter.visit_named(schema, prefix, "#")  # defines `prefix` first
    except NoValue as nothing:
        raise SchemaGrammarError(f"{nothing}: the schema accepts no value") from None
    return SchemaRules(root=prefix, rules=converter.rules, loose=converter.loose)


# Real tool schemas nest a few levels; deeper means a $ref cycle that no grammar rule can close.
MAX_NESTING = 64


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
    depth: int = 0  # nesting of visits, to stop $ref cycles that no rule can close

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
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise SchemaGrammarError(
                    f"{where}: the schema nests more than {MAX_NESTING} levels (a $ref cycle?)"
                )
            return self._visit(schema, name, where)
        finally:
            self.depth -= 1

    def _visit(self, schema: Any, name: str, where: str) -> str:
        if schema is True or schema == {}:
            return "json_value"
        if schema is False:
            raise NoValue(where)
        if not isinstance(schema, dict):
            raise SchemaGrammarError(f"{where}: a schema must be an object or a boolean, not {schema!r}")
        if "$ref" in schema:
            return self.visit_ref(schema, name, where)
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return self.visit({"anyOf": [rest, {"type": "null"}]}, name, where)
        if "allOf" in schema:
            return self.visit(merge_all_of(schema, self.root, self.note, where), name, where)
        if "anyOf" in schema or "oneOf" in schema:
            return self.visit_any_of(schema, name, where)
        for keyword in sorted(APPLICATORS & schema.keys()):
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

    @staticmethod
    def types(schema: dict[str, Any], where: str) -> list[str] | None:
        """The declared (or else implied) types, without `integer` when `number` is there too."""
        declared = schema.get("type")
        if declared is None:
            keys = schema.keys()
            for keywords, inferred in (
                (OBJECT_KEYS, "object"),
                (ARRAY_KEYS, "array"),
                (STRING_KEYS, "string"),
                (NUMBER_KEYS, "number"),
            ):
                if keys & keywords:
                    return [inferred]
            return None
        listed = declared if isinstance(declared, list) else [declared]
        for t in listed:
            if not isinstance(t, str):
                raise SchemaGrammarError(f"{where}: `type` must be a string or a list of strings, not {t!r}")
            if t not in TYPES:
                raise SchemaGrammarError(f"{where}: unknown type {t!r}; expected one of {', '.join(TYPES)}")
        if not listed:
            raise SchemaGrammarError(f"{where}: `type` is an empty list")
        unique = list(dict.fromkeys(listed))
        if "number" in unique and "integer" in unique:
            unique.remove("integer")
        return unique

    def visit_typed(self, schema: dict[str, Any], kind: str, name: str, where: str) -> str:
        for keyword in sorted(UNSUPPORTED.get(kind, set()) & schema.keys()):
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
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in ANNOTATIONS}
        if siblings:
            return self.visit({"allOf": [{"$ref": ref}, siblings]}, name, where)
        if not isinstance(ref, str):
            raise SchemaGrammarError(f"{where}: `$ref` must be a string, not {ref!r}")
        if ref in self.refs:
            return self.refs[ref]
        try:
            target = resolve(self.root, ref)
        except LookupError as error:
            self.note(where, f"`$ref` {ref!r} not followed ({error}); any JSON value accepted")
            return "json_value"
        rule = self.fresh(f"{self.prefix}_{ref.rsplit('/', 1)[-1]}")
        self.refs[ref] = rule
        return self.visit_named(target, rule, ref)

    # -- anyOf and oneOf

    def visit_any_of(self, schema: dict[str, Any], name: str, where: str) -> str:
        keyword = "anyOf" if "anyOf" in schema else "oneOf"
        if "anyOf" in schema and "oneOf" in schema:
            self.note(where, "`oneOf` next to `anyOf` is not enforced")
        options = schema[keyword]
        if not isinstance(options, list) or not options:
            raise SchemaGrammarError(f"{where}: `{keyword}` must be a non-empty list")
        siblings = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf") and k not in ANNOTATIONS}
        symbols = []
        for index, option in enumerate(options):
            merged = {"allOf": [siblings, option]} if siblings else option
            try:
                symbols.append(self.visit(merged, f"{name}_{index}", f"{where}/{keyword}/{index}"))
            except NoValue:
                continue
        if not symbols:
            raise NoValue(where)
        if keyword == "oneOf" and len(symbols) > 1 and not _exclusive_types(options):
            self.note(where, "`oneOf` is treated as `anyOf` (a value may match several options)")
        unique = list(dict.fromkeys(symbols))
        return unique[0] if len(unique) == 1 else self.define_rule(self.fresh(name), " | ".join(unique))

    # -- enum and const

    def visit_enum(self, schema: dict[str, Any], name: str, where: str) -> str:
        values = _enum_values(schema, where)
        types = self.types(schema, where) if "type" in schema else None
        if types is not None:
            values = [v for v in values if any(has_type(v, t) for t in types)]
        if not values:
            raise NoValue(where)
        texts = sorted({json_text(v, where) for v in values}, key=lambda t: (-len(t), t))
        if all(not isinstance(v, dict | list) for v in values):
            body = " | ".join(lark_literal(text) for text in texts)
        else:
            nodes = [layout_regex(json.loads(text)) for text in texts]
            body = f"/{to_regex(RegexAlt(tuple(nodes)))}/"
        return self.terminal(name, body)

    # -- strings

    def visit_string(self, schema: dict[str, Any], name: str, where: str) -> str:
        low = count(schema, "minLength", 0, where)
        high = count(schema, "maxLength", None, where)
        if high is not None and high < low:
            raise NoValue(where)
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
        return self.terminal(name, f'"\\"" {repeat("JSON_CHAR", low, high)} "\\""')

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
        if fmt in FORMATS:
            return f'"{FORMATS[fmt]}"'
        self.note(where, f"`format` {fmt!r} is not enforced")
        return None

    def pattern_node(self, pattern: str) -> Node:
        limit = self.limits.max_string_length
        any_chars = Repeat(JSON_RAW, 0, None)
        return json_safe(bound_repeats(full_match(parse_regex(pattern), any_chars), limit))

    # -- numbers

    def visit_integer(self, schema: dict[str, Any], name: str, where: str) -> str:
        low = bound(schema, "minimum", "exclusiveMinimum", where)
        high = bound(schema, "maximum", "exclusiveMaximum", where)
        if low is None and high is None:
            return "JSON_INTEGER"
        lowest = -INT_LIMIT if low is None else (math.floor(low[0]) + 1 if low[1] else math.ceil(low[0]))
        highest = INT_LIMIT if high is None else (math.ceil(high[0]) - 1 if high[1] else math.floor(high[0]))
        lowest, highest = max(lowest, -INT_LIMIT), min(highest, INT_LIMIT)
        if lowest > highest:
            raise NoValue(where)
        return self.terminal(name, f"/{integer_range_regex(lowest, highest)}/")

    def visit_number(self, schema: dict[str, Any], name: str, where: str) -> str:
        low = bound(schema, "minimum", "exclusiveMinimum", where)
        high = bound(schema, "maximum", "exclusiveMaximum", where)
        if low is None and high is None:
            return "JSON_NUMBER"
        if not (high is None and low == (0, False)):  # the grammar enforces only `minimum: 0` exactly
            self.note(where, "number bounds are checked after parsing, not by the grammar")
        if low is not None and low[0] >= 0:
            return self.terminal(name, f"/{NUMBER_REGEX.removeprefix('-?')}/")
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
        low = count(schema, "minItems", 0, where)
        high = count(schema, "maxItems", None, where)
        rule = self.define_rule(self.fresh(name), "")  # the array comes before its helper rules
        head = [
            self.visit(s, f"{rule}_{i}", f"{where}/prefixItems/{i}") for i, s in enumerate(prefix_items or [])
        ]
        try:
            item = self.visit(True if items is None else items, f"{rule}_item", f"{where}/items")
        except NoValue:
            item = None
        extra_low = max(0, low - len(head))
        cap = max(extra_low, self.limits.max_array_items - len(head)) if high is None else high - len(head)
        if item is None:
            cap = 0
        if cap < extra_low:
            raise NoValue(where)
        next_item = self.define_rule(f"{rule}_next", f"JSON_COMMA {item}") if cap else ""
        if head:
            body = sequence(" JSON_COMMA ".join(head), repeat(next_item, extra_low, cap))
        else:
            body = list_of(str(item), next_item, extra_low, cap)
        return self.define_rule(rule, sequence('"["', body, '"]"'))

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
                value = self.visit(sub, f"{rule}_{key}", f"{where}/properties/{pointer(key)}")
            except NoValue:
                if key in required:
                    raise NoValue(where) from None
                continue
            entries.append((f"{lark_literal(json_text(key, where))} JSON_COLON {value}", key in required))
        extra = self.extra_pair(schema, rule, list(fields), where)
        body, helpers = object_body(rule, entries, extra, self.limits.max_extra_properties if extra else 0)
        self.rules.update(helpers)
        return self.define_rule(rule, body)

    def extra_pair(self, schema: dict[str, Any], rule: str, known: list[str], where: str) -> str | None:
        """The rule for one `additionalProperties` pair, or None when no extra pair is allowed."""
        additional = schema.get(
            "additionalProperties", "properties" not in schema and "required" not in schema
        )
        if additional is False or self.limits.max_extra_properties == 0:
            return None
        try:
            value = self.visit(additional, f"{rule}_extra_value", f"{where}/additionalProperties")
        except NoValue:
            return None
        if known:
            key = self.terminal(f"{rule}_key", key_excluding(known, self.limits.max_string_length))
        else:
            key = "JSON_STRING"
        return self.define_rule(f"{rule}_extra", f"{key} JSON_COLON {value}")


def _exclusive_types(options: list[Any]) -> bool:
    """Whether the `oneOf` options each declare one type, no two of them overlapping."""
    kinds = [o.get("type") if isinstance(o, dict) else None for o in options]
    if not all(isinstance(k, str) for k in kinds) or len(set(kinds)) != len(kinds):
        return False
    return not {"integer", "number"} <= set(kinds)


def _enum_values(schema: dict[str, Any], where: str) -> list[Any]:
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or not values:
            raise SchemaGrammarError(f"{where}: `enum` must be a non-empty list")
        if "const" in schema:
            values = [v for v in values if v == schema["const"]]
        return values
    return [schema["const"]]
