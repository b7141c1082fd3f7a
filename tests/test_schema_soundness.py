"""Soundness of the schema grammars: every value a schema accepts, its grammar accepts too, except where
a documented generation choice narrows it (listed at the top of localagent/schema_grammar/compiler.py).

Values come from hypothesis-jsonschema. Each is written compactly and fed byte by byte to llguidance;
object keys go in whichever order the grammar takes them (a search over the orders), since a fixed
key order is one of the documented choices. The other choices are mirrored here, and only here:
- `generated_form` closes objects and tuples the way the compiler does;
- `within_limits` skips values beyond the `GrammarLimits` caps and the 16-digit integers;
- `integral_as_int` writes an integral number as an integer (`5` for 5.0), as the grammar does;
- `uuid` strings are drawn as UUIDs (hypothesis-jsonschema does not know the format; the grammar
  enforces it).
"""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import jsonschema
import llguidance
import pytest
from conftest_grammar import BFCL, LLAMACPP_CASES, byte_matcher, consume_text, integral_as_int, load_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisWarning, InvalidArgument, Unsatisfiable
from hypothesis_jsonschema import from_schema

from localagent.evaluation.bfcl_functions import bfcl_to_json_schema, load_questions
from localagent.schema_grammar.compiler import (
    GrammarLimits,
    SchemaGrammarError,
    render_rules,
    schema_grammar,
    schema_rules,
    shared_rules,
)
from localagent.tools.base import InvalidArguments, jsonschema_validator
from localagent.tools.spec import ToolSpec, schema_problem

LIMITS = GrammarLimits(max_any_depth=5)
FORMATS = {"uuid": st.uuids().map(str)}
ENFORCED_FORMATS = jsonschema.FormatChecker(formats=["date", "uuid"])
ENFORCED_FORMATS.checks("time")(lambda text: not isinstance(text, str) or _parses(dt.time, text))
ENFORCED_FORMATS.checks("date-time")(lambda text: not isinstance(text, str) or _parses(dt.datetime, text))


def _parses(kind: type[dt.time] | type[dt.datetime], text: str) -> bool:
    """Whether `text` is an RFC 3339 time or date-time as Python reads ISO 8601 (with the offset)."""
    try:
        parsed = kind.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


EXAMPLES = 8  # values per corpus schema; the corpora hold about 250 schemas


# ---------------------------------------------------------------- the documented choices


def generated_form(schema: Any) -> Any:
    """`schema` as the grammar narrows it, in the dialect hypothesis-jsonschema reads (draft 7 tuples).

    Objects that list `properties` or `required` get no other keys unless `additionalProperties` or
    `patternProperties` allows them; tuples get no items after their prefix unless `items` allows them
    or `minItems` needs them.
    """
    if isinstance(schema, list):
        return [generated_form(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas"):
            out[key] = {k: generated_form(v) for k, v in value.items()} if isinstance(value, dict) else value
        elif key in ("enum", "const", "default", "examples", "required"):
            out[key] = value
        else:
            out[key] = generated_form(value)
    open_keys = {"additionalProperties", "patternProperties", "unevaluatedProperties"}
    if ("properties" in schema or "required" in schema) and not open_keys & schema.keys():
        out["additionalProperties"] = False
        properties = out.setdefault("properties", {})
        for name in schema.get("required", []):
            properties.setdefault(name, True)  # a required key is a known key, whatever its value
    prefix, rest = out.pop("prefixItems", None), out.pop("items", None)
    if isinstance(rest, list):  # draft 4 tuples
        prefix, rest = rest, out.pop("additionalItems", None)
    if isinstance(prefix, list):
        if rest is None:
            rest = len(prefix) < out.get("minItems", 0)
        out.update(_tuple_shapes(prefix, rest, out.get("minItems", 0)))
    elif rest is not None:
        out["items"] = rest
    return out


def _tuple_shapes(prefix: list[Any], rest: Any, low: int) -> dict[str, Any]:
    """A tuple in draft 7 terms, as one shape per length short of the prefix (hypothesis-jsonschema
    only draws whole tuples) and the whole prefix followed by `rest`."""
    if not prefix:
        return {"items": rest}
    shapes = [
        {"items": prefix[:length], "additionalItems": False} if length else {"maxItems": 0}
        for length in range(min(low, len(prefix)), len(prefix))
    ]
    whole = {"items": prefix, "additionalItems": rest}
    return {"anyOf": [*shapes, whole]} if shapes else whole


def within_limits(value: Any, limits: GrammarLimits = LIMITS, depth: int = 0) -> bool:
    """Whether the grammar's caps leave room for `value` (conservatively: caps apply everywhere)."""
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return True
    if isinstance(value, int):
        return abs(value) < 10**16
    if isinstance(value, str):
        return len(value) <= limits.max_string_length
    if depth >= limits.max_any_depth:
        return False
    if isinstance(value, list):
        return len(value) <= limits.max_array_items and all(
            within_limits(v, limits, depth + 1) for v in value
        )
    return len(value) <= limits.max_extra_properties and all(
        within_limits(v, limits, depth + 1) for v in value.values()
    )


# ---------------------------------------------------------------- the check


def known_keys(schema: Any) -> set[str]:
    """Every key a schema names in `properties` or `required`: the keys whose order the grammar fixes."""
    found: set[str] = set()
    if isinstance(schema, list):
        for item in schema:
            found |= known_keys(item)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                found |= set(value) | known_keys(list(value.values()))
            elif key == "required" and isinstance(value, list):
                found |= {name for name in value if isinstance(name, str)}
            elif key not in ("enum", "const", "default", "examples"):
                found |= known_keys(value)
    return found


def accepted(matcher: llguidance.LLMatcher, value: Any, known: set[str]) -> bool:
    """Whether the matcher takes `value` whole, with its keys in some order, and may then stop."""
    return _feed(matcher.deep_copy(), value, known, lambda rest: rest.is_accepting())


Continue = Callable[[llguidance.LLMatcher], bool]


def _feed(matcher: llguidance.LLMatcher, value: Any, known: set[str], then: Continue) -> bool:
    if isinstance(value, dict):
        return consume_text(matcher, "{") and _members(matcher, value, known, True, then)
    if isinstance(value, list):
        return consume_text(matcher, "[") and _items(matcher, value, known, 0, then)
    return consume_text(matcher, json.dumps(integral_as_int(value), ensure_ascii=False)) and then(matcher)


def _items(
    matcher: llguidance.LLMatcher, items: list[Any], known: set[str], index: int, then: Continue
) -> bool:
    if index == len(items):
        return consume_text(matcher, "]") and then(matcher)
    return consume_text(matcher, "," if index else "") and _feed(
        matcher, items[index], known, lambda rest: _items(rest, items, known, index + 1, then)
    )


def _members(
    matcher: llguidance.LLMatcher, members: dict[str, Any], known: set[str], first: bool, then: Continue
) -> bool:
    if not members:
        return consume_text(matcher, "}") and then(matcher)
    # Known keys may come in any order the grammar allows; other keys are extras, taken as they come.
    candidates = [key for key in members if key in known]
    candidates += [key for key in members if key not in known][:1]
    for key in candidates:
        branch = matcher.deep_copy()
        others = {k: v for k, v in members.items() if k != key}
        name = json.dumps(key, ensure_ascii=False)
        if consume_text(branch, f"{'' if first else ','}{name}:") and _feed(
            branch,
            members[key],
            known,
            lambda rest, others=others: _members(rest, others, known, False, then),
        ):
            return True
    return False


@cache
def _matcher(schema_text: str) -> llguidance.LLMatcher:
    return byte_matcher(schema_grammar(json.loads(schema_text), LIMITS))


def check_values(schema: Any, values: Iterator[Any]) -> list[Any]:
    """The values within the limits that the schema's grammar refuses."""
    matcher = _matcher(json.dumps(schema))
    known = known_keys(schema)
    return [v for v in values if within_limits(v) and not accepted(matcher, v, known)]


def test_the_check_refuses_what_the_grammar_refuses() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"const": "x"}},
        "required": ["a"],
    }
    assert check_values(schema, iter([{"b": "x", "a": 1.0}, {"a": -2}])) == []
    assert check_values(schema, iter([{"b": "x"}, {"a": 1.5}, {"a": 1, "c": 2}])) == [
        {"b": "x"},
        {"a": 1.5},
        {"a": 1, "c": 2},
    ]


def test_generated_form_mirrors_the_closing_choices() -> None:
    assert generated_form({"properties": {"a": {}}, "required": ["a", "b"]}) == {
        "properties": {"a": {}, "b": True},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert generated_form({"prefixItems": [{"type": "integer"}]}) == {
        "anyOf": [{"maxItems": 0}, {"items": [{"type": "integer"}], "additionalItems": False}]
    }
    assert generated_form({"prefixItems": [{}], "minItems": 2}) == {
        "minItems": 2,
        "items": [{}],
        "additionalItems": True,
    }
    assert generated_form({"type": "object", "additionalProperties": {"type": "string"}}) == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }


# ---------------------------------------------------------------- the corpora


def _llamacpp_schemas() -> list[tuple[str, Any]]:
    found = [
        (f"llama.cpp accept/reject: {case['name']}", case["schema"])
        for case in load_json(LLAMACPP_CASES / "schema_accept_reject_cases.json")["cases"]
    ]
    found += [
        (f"llama.cpp to-grammar: {case['name']}", case["schema"])
        for case in load_json(LLAMACPP_CASES / "schema_to_grammar_cases.json")["cases"]
        if case["expected_status"] == "SUCCESS"
    ]
    return found


def _bfcl_schemas(every: int) -> list[tuple[str, Any]]:
    distinct: dict[str, tuple[str, Any]] = {}
    for category in ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance"):
        for question in load_questions(BFCL / f"BFCL_v3_{category}.json"):
            for function in question.functions:
                schema = bfcl_to_json_schema(function.parameters)
                distinct.setdefault(json.dumps(schema, sort_keys=True), (f"BFCL {function.name}", schema))
    return list(distinct.values())[::every]


def _valid_schema(schema: Any) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        return False
    return True


# One llama.cpp case writes `prefixItems` as a schema, which no validator reads as llama.cpp does.
CORPUS = [case for case in _llamacpp_schemas() + _bfcl_schemas(every=9) if _valid_schema(case[1])]


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) == 249  # 101 llama.cpp schemas that a validator reads, 148 BFCL functions
    assert len({json.dumps(schema, sort_keys=True) for _, schema in CORPUS}) == 233


def _values(schema: Any, examples: int) -> Iterator[Any]:
    drawn: list[Any] = []

    @settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(generated_form(schema), custom_formats=FORMATS))
    def draw(value: Any) -> None:
        if not _has_ecma_line_terminator(value):
            drawn.append(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HypothesisWarning)
        draw()
    return iter(drawn)


def _has_ecma_line_terminator(value: Any) -> bool:
    """Patterns follow JSON Schema's ECMA-262 regexes, where `.` matches no \\r, U+2028 or U+2029;
    hypothesis draws strings with Python's `re`, whose `.` matches them, so such values are left out."""
    if isinstance(value, str):
        return any(c in value for c in "\r\u2028\u2029")
    if isinstance(value, dict):
        return any(_has_ecma_line_terminator(k) or _has_ecma_line_terminator(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_ecma_line_terminator(v) for v in value)
    return False


@pytest.mark.parametrize(("name", "schema"), CORPUS, ids=[name for name, _ in CORPUS])
def test_grammar_accepts_every_value_of_a_corpus_schema(name: str, schema: Any) -> None:
    assert check_values(schema, _values(schema, EXAMPLES)) == []


# ---------------------------------------------------------------- generated schemas

_NAMES = st.sampled_from(["a", "b", "c", "name", "", "a b", "é", 'q"'])
_SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([-2.0, 0.5, 1.0, "x", "", "a\nb"])
_PATTERNS = st.sampled_from(["^[a-z]+$", "b", "^a|b$", "^.{2,4}$", "[0-9]", '^x"y$', "^(ab)*$"])


def _leaf() -> st.SearchStrategy[Any]:
    bounds = st.one_of(st.none(), st.integers(-3, 4), st.sampled_from([0.5, -1.5]))
    counts = st.one_of(st.none(), st.integers(0, 3))

    def keep(**values: Any) -> dict[str, Any]:
        return {key: value for key, value in values.items() if value is not None}

    return st.one_of(
        st.just(True),
        st.just(False),
        st.just({"$ref": "#/$defs/shared"}),
        st.builds(keep, type=st.just("string"), minLength=counts, maxLength=counts),
        st.builds(keep, type=st.just("string"), pattern=_PATTERNS),
        st.builds(
            keep, type=st.just("string"), format=st.sampled_from(["date", "time", "date-time", "uuid"])
        ),
        st.builds(keep, type=st.sampled_from(["integer", "number"]), minimum=bounds, maximum=bounds),
        st.builds(
            keep, type=st.just("integer"), exclusiveMinimum=bounds, multipleOf=st.sampled_from([None, 2])
        ),
        st.builds(
            keep, type=st.sampled_from(["boolean", "null", ["string", "null"], ["integer", "boolean"]])
        ),
        st.builds(keep, enum=st.lists(_SCALARS, min_size=0, max_size=4)),
        st.builds(keep, const=_SCALARS | st.just([1, {"k": 2.0}])),
        st.builds(keep, minLength=counts, minimum=bounds, maxItems=counts),  # keywords without a type
    )


def _composite(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    def obj(properties: dict[str, Any], required: list[str], additional: Any) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        if additional != "absent":
            schema["additionalProperties"] = additional
        return schema

    def array(prefix: list[Any] | None, items: Any, low: int | None, high: int | None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array"}
        if prefix is not None:
            schema["prefixItems"] = prefix
        if items != "absent":
            schema["items"] = items
        for key, value in (("minItems", low), ("maxItems", high)):
            if value is not None:
                schema[key] = value
        return schema

    return st.one_of(
        st.builds(
            obj,
            st.dictionaries(_NAMES, inner, max_size=4),
            st.lists(_NAMES, max_size=3, unique=True),
            st.sampled_from(["absent", True, False]) | inner,
        ),
        st.builds(
            array,
            st.none() | st.lists(inner, max_size=3),
            st.sampled_from(["absent", False]) | inner,
            st.none() | st.integers(0, 3),
            st.none() | st.integers(0, 4),
        ),
        st.builds(lambda options: {"anyOf": options}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda options: {"oneOf": options}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda members: {"allOf": members}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda sub: {**sub, "nullable": True} if isinstance(sub, dict) else sub, inner),
    )


# hypothesis-jsonschema says a schema fits nothing with InvalidArgument or Unsatisfiable; on a few
# tuples its own rewriting trips the draft 4 metaschema (SchemaError).
GENERATOR_REFUSALS = (InvalidArgument, Unsatisfiable, jsonschema.SchemaError)

SCHEMAS = st.builds(
    lambda body, shared: {**body, "$defs": {"shared": shared}} if isinstance(body, dict) else body,
    st.recursive(_leaf(), _composite, max_leaves=6),
    _leaf().filter(lambda schema: schema != {"$ref": "#/$defs/shared"}),
)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(SCHEMAS, st.data())
def test_grammar_accepts_every_value_of_a_generated_schema(schema: Any, data: st.DataObject) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    try:
        matcher = _matcher(json.dumps(schema))
    except SchemaGrammarError as error:
        # Only a schema that fits no value may be refused, and then the generator finds none either.
        assert "so no value fits the schema" in str(error), error
        try:
            value = data.draw(from_schema(generated_form(schema), custom_formats=FORMATS))
        except GENERATOR_REFUSALS:
            return
        # The grammar asserts the formats it enforces; the generator may draw a value for one of two.
        asserting = jsonschema.Draft202012Validator(schema, format_checker=ENFORCED_FORMATS)
        assert not asserting.is_valid(value), f"{error}, yet {value!r} fits"
        return
    known = known_keys(schema)
    try:
        values = [data.draw(from_schema(generated_form(schema), custom_formats=FORMATS)) for _ in range(4)]
    except GENERATOR_REFUSALS:
        return  # a schema hypothesis-jsonschema cannot draw from; the corpora cover the common ones
    for value in values:
        if validator.is_valid(value) and within_limits(value):
            assert accepted(matcher, value, known), f"{value!r} fits {schema}"


# ---------------------------------------------------------------- what the grammar only approximates

LOOSE = [
    ({"type": "number", "minimum": 1.5}, "1.0"),
    ({"type": "integer", "multipleOf": 5}, "7"),
    ({"type": "array", "uniqueItems": True}, "[1, 1]"),
    ({"type": "array", "contains": {"const": 1}}, "[2]"),
    ({"type": "string", "pattern": "^(a)\\1$"}, '"zz"'),
    ({"type": "string", "pattern": "^a+$", "minLength": 3}, '"a"'),
    ({"type": "string", "format": "email"}, '"x"'),
    ({"not": {"type": "string"}}, '"x"'),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, "1"),
    ({"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b"}]}, '"a"'),
    ({"type": "object", "minProperties": 1}, "{}"),
    (
        {"type": "object", "patternProperties": {"^x_": {"type": "string"}}, "additionalProperties": False},
        '{"x_a": 1}',
    ),
    ({"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}}, '{"a": 1}'),
]


@pytest.mark.parametrize(("schema", "text"), LOOSE, ids=[json.dumps(schema) for schema, _ in LOOSE])
def test_what_the_grammar_only_approximates_the_tool_validator_refuses(schema: Any, text: str) -> None:
    """A hand-written schema's looser rules are backed by the validator every tool call goes through."""
    parameters = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    spec = ToolSpec(name="t", parameters=parameters)
    assert schema_problem(spec) is None
    converted = schema_rules(parameters, "t", root_type="object")
    grammar = render_rules({"start": "t", **converted.rules, **shared_rules()})
    arguments = f'{{"v": {text}}}'
    assert consume_text(matcher := byte_matcher(grammar), arguments) and matcher.is_accepting()
    if schema.get("format") != "email":  # a format JSON Schema only annotates: noted, not enforced
        with pytest.raises(InvalidArguments):
            jsonschema_validator(spec.parameters)(json.loads(arguments))
    assert converted.loose, "an approximation the grammar does not report"
