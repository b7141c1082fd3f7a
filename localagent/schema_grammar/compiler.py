"""JSON schema -> Lark rules that accept exactly the JSON texts a small model may write for the schema.

The rules use the subset of Lark that the python `lark` parser, llguidance and (through `gbnf.py`)
llama.cpp all read. The layout is compact and on one line: the only whitespace allowed is one optional
space after `:` and after `,`. Scalars are terminals (single lexemes, fast in llguidance); objects and
arrays are rules. Everything is bounded (string length, items, extra properties, depth of untyped values).

What a grammar cannot express exactly is approximated by a looser rule and listed in `SchemaRules.loose`;
callers validate the parsed value against the schema afterwards.

Choices that narrow what the schema allows, so that a small model writes one plain form:
- objects with `properties` or `required` are closed unless `additionalProperties` (or
  `patternProperties`) says otherwise, and their known properties come in schema order;
- the layout above; integers without an exponent; at most 16 digits before the point;
- an integer (and an integral `enum` or `const` number) without a fraction: `5`, never `5.0`, which
  JSON Schema counts as an integer but which reaches a tool, a checker or Python as a float;
- the bounds in `GrammarLimits` where the schema sets none (string length, items, extra properties,
  depth of untyped values);
- `format` date, time, date-time and uuid are written in their RFC 3339 / RFC 4122 form.

The JSON lexemes are in `json_lexemes.py`, bounded numbers and `enum` values in `scalar_rules.py`
(integer ranges in `integer_ranges.py`), object bodies in `object_rules.py`, array bodies in
`array_rules.py`, `allOf` merging in `all_of.py`, the keyword vocabulary in `keywords.py` and the
Gorilla/BFCL dialect in `dialect.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from localagent.schema_grammar.all_of import merge_all_of, resolve, unresolvable
from localagent.schema_grammar.array_rules import array_body
from localagent.schema_grammar.integer_ranges import integer_range_regex
from localagent.schema_grammar.json_lexemes import (
    DEFAULT_LIMITS,
    GrammarLimits,
    lark_literal,
    repeat,
    shared_rules,
)
from localagent.schema_grammar.keywords import (
    ANNOTATIONS,
    APPLICATORS,
    FORMATS,
    TYPED_KEYS,
    TYPES,
    UNSUPPORTED,
    NoValue,
    SchemaGrammarError,
    count,
    declared_types,
    json_text,
    pointer,
)
from localagent.schema_grammar.object_rules import key_excluding, object_body
from localagent.schema_grammar.regex_syntax import (
    MAX_CHAR,
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
from localagent.schema_grammar.regex_syntax import Concat as RegexConcat
from localagent.schema_grammar.scalar_rules import enum_rule, integer_rule, number_rule

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


def schema_rules(
    schema: Any, prefix: str, limits: GrammarLimits = DEFAULT_LIMITS, *, root_type: str | None = None
) -> SchemaRules:
    """Lark rules for `schema`, all named `{prefix}_...` (rules) or `{PREFIX}_...` (terminals).

    `root_type` narrows the top-level value to one type (tool arguments are always an object).
    Raises SchemaGrammarError, whose message starts with the JSON pointer of the problem.
    """
    if not re.fullmatch(r"[a-z][a-z0-9_]*", prefix):
        raise ValueError(f"grammar prefix must match [a-z][a-z0-9_]*, not {prefix!r}")
    if root_type is not None and root_type not in TYPES:
        raise ValueError(f"root_type must be one of {', '.join(TYPES)}, not {root_type!r}")
    converter = _Converter(schema, prefix, limits)
    top = schema
    if root_type is None:
        converter.refs["#"] = prefix
    elif isinstance(schema, dict) and schema.get("type") != root_type:
        top = {"allOf": [{"type": root_type}, schema]}
    elif schema is True:
        top = {"type": root_type}
    try:
        converter.visit_named(top, prefix, "#")  # defines `prefix` first
    except NoValue as nothing:
        raise SchemaGrammarError(f"{nothing.where}: {nothing.reason}, so no value fits the schema") from None
    rules = reachable_rules(converter.rules, prefix)  # without the rules of options that fit nothing
    return SchemaRules(root=prefix, rules=rules, loose=converter.loose)


# Real tool schemas nest a few levels; deeper means a $ref cycle that no grammar rule can close.
MAX_NESTING = 64


@dataclass
class _Converter:
    root: Any
    prefix: str
    limits: GrammarLimits
    rules: dict[str, str] = field(default_factory=dict)
    loose: list[str] = field(default_factory=list)
    refs: dict[str, str | None] = field(default_factory=dict)  # None: the target fits no value
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
            raise NoValue(where, "the schema is `false`")
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
            if not schema.keys() & TYPED_KEYS:
                return "json_value"
            types = [t for t in TYPES if t != "integer"]  # each type's keywords apply to its values only
        if len(types) == 1:
            return self.visit_typed(schema, types[0], name, where)
        options = []
        for kind in types:
            try:
                options.append(self.visit_typed(schema, kind, f"{name}_{kind}", where))
            except NoValue:
                continue
        if not options:
            raise NoValue(where, f"no value of type {' or '.join(types)} fits its keywords")
        unique = list(dict.fromkeys(options))
        return unique[0] if len(unique) == 1 else self.define_rule(self.fresh(name), " | ".join(unique))

    @staticmethod
    def types(schema: dict[str, Any], where: str) -> list[str] | None:
        """The declared types (None when there is no `type`), without `integer` when `number` is there."""
        if "type" not in schema:
            return None
        unique = declared_types(schema["type"], where)
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
        if not isinstance(ref, str):
            raise SchemaGrammarError(f"{where}: `$ref` must be a string, not {ref!r}")
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in ANNOTATIONS}
        if siblings:
            return self.visit({"allOf": [{"$ref": ref}, siblings]}, name, where)
        if ref in self.refs:
            known = self.refs[ref]
            if known is None:
                raise NoValue(where, f"`$ref` {ref!r} points at a schema no value fits")
            return known
        try:
            target = resolve(self.root, ref)
        except LookupError as problem:
            raise unresolvable(where, ref, problem) from None
        rule = self.fresh(f"{self.prefix}_{ref.rsplit('/', 1)[-1]}")
        self.refs[ref] = rule
        try:
            return self.visit_named(target, rule, ref)
        except NoValue:
            self.refs[ref] = None
            self.rules.pop(rule, None)
            raise

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
            raise NoValue(where, f"no `{keyword}` option fits any value")
        if keyword == "oneOf" and len(symbols) > 1 and not _exclusive_types(options):
            self.note(where, "`oneOf` is treated as `anyOf` (a value may match several options)")
        unique = list(dict.fromkeys(symbols))
        return unique[0] if len(unique) == 1 else self.define_rule(self.fresh(name), " | ".join(unique))

    # -- enum and const

    def visit_enum(self, schema: dict[str, Any], name: str, where: str) -> str:
        return self.terminal(name, enum_rule(schema, self.types(schema, where), where))

    # -- strings

    def visit_string(self, schema: dict[str, Any], name: str, where: str) -> str:
        if "x-lark" in schema:
            return self.custom_string(schema["x-lark"], name, where)
        low = count(schema, "minLength", 0, where)
        high = count(schema, "maxLength", None, where)
        if high is not None and high < low:
            raise NoValue(where, f"`minLength` {low} is above `maxLength` {high}")
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

    def custom_string(self, grammar: Any, name: str, where: str) -> str:
        """A string whose text is the `start` terminal of the Lark terminals given: each is renamed
        into this grammar's names, and the quoted string is one terminal made of them."""
        terminals = grammar.get("terminals") if isinstance(grammar, dict) else None
        start = grammar.get("start") if isinstance(grammar, dict) else None
        if not isinstance(terminals, dict) or start not in terminals:
            raise SchemaGrammarError(
                f"{where}: `x-lark` must be {{'start': NAME, 'terminals': {{NAME: body}}}}"
            )
        names = {terminal: self.fresh(f"{name}_{terminal}").upper() for terminal in terminals}
        for terminal, body in terminals.items():
            self.define_rule(names[terminal], _renamed(str(body), names))
        return self.terminal(name, f'"\\"" {names[start]} "\\""')

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
        if not isinstance(fmt, str):
            raise SchemaGrammarError(f"{where}: `format` must be a string, not {fmt!r}")
        if fmt in FORMATS:
            return f'"{FORMATS[fmt]}"'
        self.note(where, f"`format` {fmt!r} is not enforced")
        return None

    def pattern_node(self, pattern: str) -> Node:
        limit = self.limits.max_string_length
        any_chars = Repeat(CharSet.of([(0, MAX_CHAR)]), 0, None)  # json_safe adds the escapes
        return json_safe(bound_repeats(full_match(parse_regex(pattern), any_chars), limit))

    # -- numbers

    def visit_integer(self, schema: dict[str, Any], name: str, where: str) -> str:
        body = integer_rule(schema, where)
        return body if body == "JSON_INTEGER" else self.terminal(name, body)

    def visit_number(self, schema: dict[str, Any], name: str, where: str) -> str:
        body, exact = number_rule(schema, where)
        if not exact:
            self.note(where, "number bounds are checked after parsing, not by the grammar")
        return body if body == "JSON_NUMBER" else self.terminal(name, body)

    # -- arrays

    def visit_array(self, schema: dict[str, Any], name: str, where: str) -> str:
        items, prefix_items = schema.get("items"), schema.get("prefixItems")
        prefix_key = "prefixItems"
        if prefix_items is not None and not isinstance(prefix_items, list):
            self.note(where, "`prefixItems` is not a list; read as `items`")
            items, prefix_items = (prefix_items if items is None else items), None
        low = count(schema, "minItems", 0, where)
        if isinstance(items, list):  # draft 4 tuple form
            prefix_items, items, prefix_key = items, schema.get("additionalItems"), "items"
        if prefix_items is not None and items is None:
            items = low > len(prefix_items)  # closed, as objects are (a generation choice), unless too short
        high = count(schema, "maxItems", None, where)
        if high is not None and high < low:
            raise NoValue(where, f"`minItems` {low} is above `maxItems` {high}")
        rule = self.define_rule(self.fresh(name), "")  # the array comes before its helper rules
        try:
            head, item = self.array_items(prefix_items or [], items, rule, high, where, prefix_key)
            longest = len(head) if item is None else None
            if high is None:
                high = max(low, len(head), self.limits.max_array_items) if longest is None else longest
            high = high if longest is None else min(high, longest)
            if low > high:
                raise NoValue(where, f"`minItems` {low} asks for more items than the array can hold")
        except NoValue:
            del self.rules[rule]
            raise
        body, helpers = array_body(rule, head, item, low, high)
        self.rules.update(helpers)
        return self.define_rule(rule, body)

    def array_items(
        self, prefix: list[Any], items: Any, rule: str, high: int | None, where: str, prefix_key: str
    ) -> tuple[list[str], str | None]:
        """The prefix item symbols up to the first that fits nothing, and the symbol of later items."""
        head = []
        for index, sub in enumerate(prefix[:high]):
            try:
                head.append(self.visit(sub, f"{rule}_{index}", f"{where}/{prefix_key}/{index}"))
            except NoValue:
                return head, None  # no array can have an item here, nor any after it
        if high is not None and len(head) >= high:
            return head, None
        key = "additionalItems" if prefix_key == "items" else "items"
        try:
            return head, self.visit(True if items is None else items, f"{rule}_item", f"{where}/{key}")
        except NoValue:
            return head, None

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
            except NoValue as nothing:
                if key in required:
                    del self.rules[rule]
                    raise NoValue(nothing.where, f"{nothing.reason} (and {key!r} is required)") from None
                continue
            entries.append((f"{lark_literal(json_text(key, where))} JSON_COLON {value}", key in required))
        extra = self.extra_pair(schema, rule, list(fields), where)
        body, helpers = object_body(rule, entries, extra, self.limits.max_extra_properties if extra else 0)
        self.rules.update(helpers)
        return self.define_rule(rule, body)

    def extra_pair(self, schema: dict[str, Any], rule: str, known: list[str], where: str) -> str | None:
        """The rule for one `additionalProperties` pair, or None when no extra pair is allowed."""
        closed = "properties" in schema or "required" in schema  # a generation choice, see the top
        additional = schema.get("additionalProperties", not closed)
        if schema.get("patternProperties") or (
            "additionalProperties" not in schema and schema.get("unevaluatedProperties", False) is not False
        ):
            additional = True  # keys these allow may be anything; their values are checked after parsing
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


_LARK_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|/(?:[^/\\]|\\.)*/[imslux]*|\b[A-Za-z_][A-Za-z0-9_]*\b')


def _renamed(body: str, names: dict[str, str]) -> str:
    """A Lark body with the names in `names` replaced; its literals and regexes left as they are."""
    return _LARK_TOKEN.sub(lambda token: names.get(token.group(0), token.group(0)), body)
