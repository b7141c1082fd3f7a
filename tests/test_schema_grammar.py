"""JSON schema -> Lark rules, checked against llama.cpp's own test cases in lark and llguidance."""

from __future__ import annotations

import json
import re

import pytest
from conftest_grammar import (
    LLAMACPP_CASES,
    compact_layout,
    integral_as_int,
    lark_accepts,
    llguidance_accepts,
    load_json,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from localagent.grammar_checks.engines import check_lark, check_llguidance
from localagent.schema_grammar.compiler import (
    GrammarLimits,
    SchemaGrammarError,
    integer_range_regex,
    render_rules,
    schema_grammar,
    schema_rules,
    shared_rules,
)

ACCEPT_REJECT = load_json(LLAMACPP_CASES / "schema_accept_reject_cases.json")["cases"]
TO_GRAMMAR = load_json(LLAMACPP_CASES / "schema_to_grammar_cases.json")["cases"]

# Oracle strings whose expected outcome differs on purpose; (case name, string) -> reason.
DELIBERATE_DIFFERENCES = {
    (
        "empty schema (object)",
        text,
    ): "`{}` accepts any JSON value (JSON Schema); llama.cpp narrows it to objects"
    for text in ("[]", "null", '""', "true")
} | {
    (
        "min+max items",
        "1",
    ): "without `type`, `items` applies to arrays only (JSON Schema); llama.cpp infers arrays"
}


def _oracle_cases() -> list[tuple[str, str, str, bool]]:
    cases = []
    for index, case in enumerate(ACCEPT_REJECT):
        for key, expected in (("passing", True), ("failing", False)):
            for text in case[key]:
                if (case["name"], text) not in DELIBERATE_DIFFERENCES:
                    cases.append((f"{index}-{case['name']}", json.dumps(case["schema"]), text, expected))
    return cases


ORACLE = _oracle_cases()


def test_oracle_skip_list_is_exactly_the_deliberate_differences() -> None:
    total = sum(len(case["passing"]) + len(case["failing"]) for case in ACCEPT_REJECT)
    assert total == 246
    assert len(ORACLE) == total - len(DELIBERATE_DIFFERENCES) == 241
    names = {case["name"] for case in ACCEPT_REJECT}
    for name, text in DELIBERATE_DIFFERENCES:
        assert name in names
        case = next(c for c in ACCEPT_REJECT if c["name"] == name)
        assert text in case["failing"]


@pytest.mark.parametrize(
    ("case", "schema", "text", "expected"), ORACLE, ids=[f"{c[0]}:{c[2]!r}" for c in ORACLE]
)
def test_llamacpp_accept_reject_oracle(case: str, schema: str, text: str, expected: bool) -> None:
    grammar = schema_grammar(json.loads(schema))
    laid_out = compact_layout(text)
    assert lark_accepts(grammar, laid_out) is expected
    assert llguidance_accepts(grammar, laid_out) is expected


def test_layout_is_one_line_with_one_optional_space_after_separators() -> None:
    grammar = schema_grammar(
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    )
    for text in ('{"a":[1,2]}', '{"a": [1, 2]}', '{"a": [1,2]}'):
        assert lark_accepts(grammar, text) and llguidance_accepts(grammar, text)
    for text in ('{ "a": [1]}', '{"a" : [1]}', '{"a":  [1]}', '{"a": [1 ]}', '{"a":\n[1]}', '{"a": [1],}'):
        assert not lark_accepts(grammar, text) and not llguidance_accepts(grammar, text)


@pytest.mark.parametrize("case", TO_GRAMMAR, ids=[c["name"] for c in TO_GRAMMAR])
def test_llamacpp_schema_to_grammar_cases_compile_or_fail(case: dict) -> None:
    if case["expected_status"] == "FAILURE":
        with pytest.raises(SchemaGrammarError, match="type"):
            schema_grammar(case["schema"])
        return
    grammar = schema_grammar(case["schema"])
    assert check_lark(grammar) == []
    assert check_llguidance(grammar) == []


def test_schema_to_grammar_case_counts() -> None:
    statuses = [case["expected_status"] for case in TO_GRAMMAR]
    assert (statuses.count("SUCCESS"), statuses.count("FAILURE")) == (73, 2)


# ---------------------------------------------------------------- naming and composition


def test_rules_are_prefixed_and_compose_with_other_tools_without_collisions() -> None:
    weather = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
        "required": ["city"],
    }
    search = {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1}, "top": {"type": "integer"}},
    }
    first, second = schema_rules(weather, "t0"), schema_rules(search, "t1")
    for converted, prefix in ((first, "t0"), (second, "t1")):
        assert converted.root == prefix
        assert all(re.fullmatch(rf"({prefix}|{prefix.upper()})(_\w+)?", name) for name in converted.rules)
    grammar = (
        'start: "weather " t0 | "search " t1\n'
        + render_rules(first.rules)
        + render_rules(second.rules)
        + render_rules(shared_rules())
    )
    assert check_lark(grammar) == [] and check_llguidance(grammar) == []
    assert lark_accepts(grammar, 'weather {"city": "Oslo", "unit": "c"}')
    assert llguidance_accepts(grammar, 'search {"query": "x", "top": 3}')
    assert not lark_accepts(grammar, 'search {"city": "Oslo"}')


def test_prefix_must_be_a_lowercase_name() -> None:
    with pytest.raises(ValueError, match="prefix"):
        schema_rules({}, "Tool")


def test_no_terminal_matches_the_empty_string() -> None:
    # lark's dynamic Earley lexer refuses zero-width terminals, so a compile check proves it.
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "maxLength": 0},
            "p": {"type": "string", "pattern": "^a*$"},
            "e": {"enum": [""]},
        },
    }
    assert check_lark(schema_grammar(schema)) == []


# ---------------------------------------------------------------- keywords


def accepts(schema: object, text: str, limits: GrammarLimits | None = None) -> bool:
    grammar = schema_grammar(schema, limits or GrammarLimits())
    in_lark, in_llguidance = lark_accepts(grammar, text), llguidance_accepts(grammar, text)
    assert in_lark == in_llguidance, f"lark says {in_lark}, llguidance says {in_llguidance} for {text!r}"
    return in_lark


def test_strings_escapes_and_control_characters() -> None:
    schema = {"type": "string"}
    for good in ('"a\\"b"', '"\\\\"', '"\\u00e9\\n\\t\\/"', '"é😀"', '""'):
        assert accepts(schema, good), good
    for bad in ('"a"b"', '"\\x41"', '"tab\there"', '"\\u12"', "'a'"):
        assert not accepts(schema, bad), bad


def test_default_caps_bound_strings_arrays_extra_properties_and_depth() -> None:
    limits = GrammarLimits(max_string_length=5, max_array_items=3, max_extra_properties=2, max_any_depth=2)
    assert accepts({"type": "string"}, '"abcde"', limits) and not accepts(
        {"type": "string"}, '"abcdef"', limits
    )
    assert accepts({"type": "array"}, "[1, 2, 3]", limits) and not accepts(
        {"type": "array"}, "[1, 2, 3, 4]", limits
    )
    extra = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True}
    assert accepts(extra, '{"a": 1, "b": 2, "c": 3}', limits)
    assert not accepts(extra, '{"a": 1, "b": 2, "c": 3, "d": 4}', limits)
    assert accepts({}, '{"a": [1]}', limits) and not accepts({}, '{"a": [[1]]}', limits)


def test_explicit_bounds_beat_the_default_caps() -> None:
    limits = GrammarLimits(max_string_length=3, max_array_items=2)
    assert accepts({"type": "string", "minLength": 5}, '"abcde"', limits)
    assert accepts({"type": "array", "maxItems": 4}, "[1, 2, 3, 4]", limits)
    assert accepts({"type": "string", "maxLength": 6}, '"abcdef"', limits)


def test_integer_bounds_are_exact_and_numbers_are_loose() -> None:
    schema = {"type": "integer", "minimum": -3, "exclusiveMaximum": 12}
    assert [n for n in range(-30, 40) if accepts(schema, str(n))] == list(range(-3, 12))
    number = schema_rules({"type": "number", "minimum": 1.5}, "t")
    assert number.loose == ["#: number bounds are checked after parsing, not by the grammar"]
    assert accepts({"type": "number", "minimum": 0}, "0.5") and not accepts(
        {"type": "number", "minimum": 0}, "-1"
    )
    assert schema_rules({"type": "number", "minimum": 0}, "t").loose == []


@settings(max_examples=40, deadline=None)
@given(st.integers(-(10**6), 10**6), st.integers(0, 10**6), st.integers(-(10**6), 2 * 10**6))
def test_integer_range_regex_matches_exactly_the_range(low: int, width: int, value: int) -> None:
    high = low + width
    regex = integer_range_regex(low, high)
    # Python's leftmost-first `match` (what lark uses) must take the whole number, not a prefix of it.
    found = re.match(regex, str(value))
    assert (found is not None and found.end() == len(str(value))) is (low <= value <= high)


def test_integer_digits_are_capped_like_llamacpp() -> None:
    assert accepts({"type": "integer"}, "1234567890123456")
    assert not accepts({"type": "integer"}, "12345678901234567")


def test_enum_and_const_of_any_json_type() -> None:
    schema = {"enum": [1, 12, "a", None, [1, {"k": True}], {"x": [2]}]}
    for good in ("1", "12", '"a"', "null", '[1, {"k": true}]', '[1,{"k":true}]', '{"x": [2]}'):
        assert accepts(schema, good), good
    for bad in ("2", "123", '"b"', "[1]", '{"x": [2], "y": 1}'):
        assert not accepts(schema, bad), bad
    assert accepts({"const": 'say "hi"\n'}, '"say \\"hi\\"\\n"')
    assert accepts({"type": "string", "enum": ["a", 1]}, '"a"') and not accepts(
        {"type": "string", "enum": ["a", 1]}, "1"
    )


def test_patterns_are_anchored_json_safe_and_bounded() -> None:
    assert accepts({"pattern": "^[a-z]+-[0-9]{2}$"}, '"ab-12"')
    assert not accepts({"pattern": "^[a-z]+-[0-9]{2}$"}, '"ab-123"')
    assert accepts({"pattern": "b"}, '"abc"') and not accepts({"pattern": "b"}, '"ac"')
    assert accepts({"pattern": '^a"b$'}, '"a\\"b"')
    assert accepts({"pattern": '^a\\\\"$'}, '"a\\\\\\""')  # a, backslash, quote
    assert accepts({"enum": ['\\"', "\\"]}, '"\\\\\\""') and accepts({"enum": ['\\"', "\\"]}, '"\\\\"')
    assert accepts({"type": "string", "pattern": "^.+$"}, '"x y"') and not accepts(
        {"type": "string", "pattern": "^.+$"}, '""'
    )
    # Characters JSON must escape match the pattern as the characters they stand for.
    assert accepts({"type": "string", "pattern": "^.+$"}, '"a\\"b\\u0001"')
    assert accepts({"type": "string", "pattern": "^[^a]$"}, '"\\t"')
    assert not accepts({"type": "string", "pattern": "^.$"}, '"\\n"')


def test_unsupported_pattern_falls_back_to_any_string_with_a_note() -> None:
    converted = schema_rules({"type": "string", "pattern": "^(a)\\1$"}, "t")
    assert converted.loose == [
        "#: `pattern` '^(a)\\\\1$' is not enforced (backreference at offset 4 in '^(a)\\\\1$')"
    ]
    assert accepts({"type": "string", "pattern": "^(a)\\1$"}, '"zz"')


def test_formats() -> None:
    assert accepts({"format": "date-time"}, '"2024-02-29T13:05:00.25+01:00"')
    assert not accepts({"format": "date"}, '"2024-13-01"')
    assert accepts({"format": "uuid"}, '"12345678-1234-1234-1234-1234567890ab"')
    email = schema_rules({"type": "string", "format": "email"}, "t")
    assert email.loose == ["#: `format` 'email' is not enforced"]


def test_objects_keep_schema_order_and_may_omit_optional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
        "required": ["b"],
    }
    for good in ('{"b": 1}', '{"a": 1, "b": 2}', '{"b": 2, "c": 3}', '{"a": 1, "b": 2, "c": 3}'):
        assert accepts(schema, good), good
    for bad in ("{}", '{"a": 1}', '{"b": 1, "a": 2}', '{"b": 1, "d": 2}', '{"b": 1,}'):
        assert not accepts(schema, bad), bad


def test_many_optional_properties_compile_fast_in_lark() -> None:
    properties = {f"p{i}": {"type": "integer"} for i in range(30)}
    grammar = schema_grammar({"type": "object", "properties": properties})
    assert check_lark(grammar) == []
    assert lark_accepts(grammar, '{"p3": 1, "p17": 2, "p29": 3}')


def test_additional_properties_schema_and_implicit_object() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}},
        "additionalProperties": {"type": "string"},
    }
    assert accepts(schema, '{"a": 1, "b": "x", "ab": "y"}')
    assert accepts(schema, '{"b": "x"}')
    assert not accepts(schema, '{"a": 1, "b": 2}')
    assert not accepts(schema, '{"a": "x"}')  # an extra pair cannot redefine a known property
    assert accepts({"type": "object"}, '{"any": [1, {"x": null}]}')
    assert accepts({"type": "object", "required": ["id"]}, '{"id": [1]}')
    assert not accepts({"type": "object", "required": ["id"]}, "{}")


def test_arrays_items_prefix_items_and_counts() -> None:
    tuple_schema = {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": {"type": "boolean"}}
    assert accepts(tuple_schema, '["a", 1]') and accepts(tuple_schema, '["a", 1, true, false]')
    assert accepts(tuple_schema, "[]") and accepts(tuple_schema, '["a"]')
    assert not accepts(tuple_schema, '["a", 1, 2]') and not accepts(tuple_schema, "[1]")
    assert not accepts(tuple_schema, '["a", true]')
    counted = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3}
    assert [accepts(counted, f"[{', '.join('1' * n)}]") for n in range(5)] == [
        False,
        False,
        True,
        True,
        False,
    ]
    assert accepts({"type": "array", "items": False}, "[]") and not accepts(
        {"type": "array", "items": False}, "[1]"
    )


def test_refs_including_recursive_ones() -> None:
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["value"],
            }
        },
        "$ref": "#/$defs/node",
    }
    assert accepts(tree, '{"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}')
    assert not accepts(tree, '{"value": 1, "children": [{"children": []}]}')
    cycle = schema_rules(
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "t"
    )
    assert cycle.loose == ["#/$defs/b: `$ref` cycle with no schema in between; any JSON value accepted"]
    assert accepts({"$ref": "#"}, "[1]")
    with pytest.raises(SchemaGrammarError, match="only references inside the same schema"):
        schema_rules({"$ref": "https://example.com/schema.json"}, "t")


def test_any_of_one_of_all_of_and_nullable() -> None:
    assert accepts({"anyOf": [{"type": "integer"}, {"type": "string"}]}, '"x"')
    assert schema_rules({"oneOf": [{"type": "integer"}, {"type": "string"}]}, "t").loose == []
    overlapping = schema_rules({"oneOf": [{"type": "number"}, {"type": "integer"}]}, "t")
    assert overlapping.loose == ["#: `oneOf` is treated as `anyOf` (a value may match several options)"]
    merged = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }
    assert accepts(merged, '{"a": 1, "b": "x"}') and not accepts(merged, '{"a": 1}')
    assert accepts({"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]}, '"b"')
    assert not accepts({"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]}, '"a"')
    distributed = {
        "allOf": [
            {"properties": {"a": {"type": "integer"}}},
            {"anyOf": [{"required": ["a"]}, {"type": "object"}]},
        ]
    }
    assert accepts(distributed, '{"a": 1}')
    assert accepts({"type": "string", "nullable": True}, "null")


def test_unsupported_keywords_become_notes_not_errors() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "n": {"type": "integer", "multipleOf": 5},
            "x": {"not": {"type": "string"}},
        },
        "patternProperties": {"^x": {}},
    }
    converted = schema_rules(schema, "t")
    assert converted.loose == [
        "#: `patternProperties` is not enforced",
        "#/properties/tags: `uniqueItems` is not enforced",
        "#/properties/n: `multipleOf` is not enforced",
        "#/properties/x: `not` is not enforced",
    ]
    assert check_lark(schema_grammar(schema)) == []


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "kaboom"}, "unknown type 'kaboom'"),
        ({"type": 123}, "must be a string or a list of strings"),
        ({"type": "object", "properties": []}, "`properties` must be an object"),
        ({"type": "object", "required": "a"}, "`required` must be a list of strings"),
        ({"enum": {}}, "`enum` must be a list"),
        ({"type": "string", "maxLength": -1}, "`maxLength` must be a non-negative integer"),
        ({"const": float("nan")}, "not a JSON value"),
        ("string", "must be an object or a boolean"),
    ],
)
def test_invalid_schemas_raise_schema_grammar_error(schema: object, message: str) -> None:
    with pytest.raises(SchemaGrammarError, match=re.escape(message)):
        schema_rules(schema, "t")


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**15), 10**15)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(_JSON)
def test_const_accepts_its_own_json_in_both_layouts(value: object) -> None:
    schema = {"const": value}
    written = integral_as_int(value)
    assert accepts(schema, json.dumps(written, ensure_ascii=False))
    assert accepts(schema, json.dumps(written, ensure_ascii=False, separators=(",", ":")))


# Control characters aside: where a known key has a \\uXXXX escape, extra keys may not use one.
_KEY = st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from('"\\\n\t'), max_size=6)


@settings(max_examples=40, deadline=None)
@given(st.lists(_KEY, min_size=1, max_size=4, unique=True), _KEY)
def test_any_property_names_and_extra_keys(names: list[str], extra: str) -> None:
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in names},
        "additionalProperties": {"type": "string"},
    }
    assert accepts(schema, json.dumps(dict.fromkeys(names, 1), ensure_ascii=False))
    assert accepts(schema, json.dumps({extra: "x"}, ensure_ascii=False)) is (extra not in names)


@pytest.mark.parametrize(
    "schema",
    [{"$ref": "#", "oneOf": [{}]}, {"$ref": "#", "anyOf": [{"type": "string"}, {"type": "null"}]}],
)
def test_a_ref_cycle_no_rule_can_close_is_a_clear_error(schema: dict) -> None:
    with pytest.raises(SchemaGrammarError, match="nests more than 64 levels"):
        schema_rules(schema, "t0")


# ---------------------------------------------------------------- values the schema allows (issue 10)


def test_prefix_items_may_stop_early_unless_min_items_needs_them() -> None:
    pair = {"prefixItems": [{"type": "integer"}, {"type": "integer"}]}
    for good in ("[]", "[1]", "[1, 2]"):
        assert accepts(pair, good), good
    assert not accepts(pair, "[1, 2, 3]")  # closed, as objects are: a generation choice
    at_least_one = {**pair, "minItems": 1}
    assert not accepts(at_least_one, "[]") and accepts(at_least_one, "[1]")
    longer = {"prefixItems": [{"type": "integer"}], "minItems": 3}  # more items than the prefix: open
    assert accepts(longer, '[1, "x", null]') and not accepts(longer, "[1, 2]")
    draft4 = {"items": [{"type": "string"}, {"type": "integer"}], "additionalItems": {"type": "null"}}
    assert (
        accepts(draft4, '["a"]') and accepts(draft4, '["a", 1, null]') and not accepts(draft4, '["a", 1, 2]')
    )


def test_a_prefix_item_that_fits_nothing_ends_the_array_there() -> None:
    schema = {"prefixItems": [True, False]}
    assert accepts(schema, "[]") and accepts(schema, '[{"x": 1}]') and not accepts(schema, "[1, 2]")
    with pytest.raises(SchemaGrammarError, match=re.escape("#: `minItems` 2 asks for more items")):
        schema_rules({**schema, "type": "array", "minItems": 2}, "t")


def test_integers_and_integral_consts_are_written_without_a_fraction() -> None:
    # JSON Schema counts 1.0 as an integer, but a tool or BFCL's checker gets it as a float.
    assert accepts({"type": "integer"}, "1") and accepts({"type": "integer"}, "-20")
    assert not accepts({"type": "integer"}, "1.0") and not accepts({"type": "integer"}, "1.5")
    ranged = {"type": "integer", "minimum": 1, "maximum": 3}
    assert accepts(ranged, "3") and not accepts(ranged, "3.0") and not accepts(ranged, "4")
    assert accepts({"type": "number"}, "1.0") and accepts({"type": "number"}, "1")
    for schema in ({"const": -2.0}, {"const": -2}, {"enum": [-2.0, "x"]}):
        assert accepts(schema, "-2") and not accepts(schema, "-2.0"), schema
        assert not accepts(schema, "-2.5") and not accepts(schema, "2"), schema
    assert accepts({"const": [1.0, {"a": 2}]}, '[1, {"a": 2}]')
    assert accepts({"const": 0.5}, "0.5") and not accepts({"const": 0.5}, "0.50")
    assert not accepts({"const": 1}, "true") and not accepts({"enum": [True]}, "1")


def test_keywords_without_a_type_constrain_only_their_own_type() -> None:
    schema = {"minLength": 2}
    for good in ('"ab"', "5", "null", "true", "[1]", '{"a": 1}'):
        assert accepts(schema, good), good
    assert not accepts(schema, '"a"')
    both = {"maxLength": 1, "maxItems": 1}
    assert accepts(both, "3") and accepts(both, '"a"') and not accepts(both, '"ab"')
    assert accepts(both, "[1]") and not accepts(both, "[1, 2]")
    assert accepts({"properties": {"a": {"type": "integer"}}}, '"not an object"')
    assert accepts({"minimum": 5, "maximum": 1}, '"x"')  # no number fits, every other value does


def test_tool_arguments_narrow_the_root_to_an_object() -> None:
    converted = schema_rules({"properties": {"a": {"type": "integer"}}}, "t", root_type="object")
    grammar = render_rules({"start": "t", **converted.rules, **shared_rules()})
    assert lark_accepts(grammar, '{"a": 1}') and not lark_accepts(grammar, "5")
    with pytest.raises(SchemaGrammarError, match="no type in common"):
        schema_rules({"type": "string"}, "t", root_type="object")
    recursive = {"properties": {"child": {"$ref": "#"}}}  # the root narrowed; `#` still any value
    converted = schema_rules(recursive, "t", root_type="object")
    grammar = render_rules({"start": "t", **converted.rules, **shared_rules()})
    assert lark_accepts(grammar, '{"child": 5}') and not lark_accepts(grammar, "5")


def test_pattern_properties_let_other_keys_in() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "patternProperties": {"^x_": {"type": "string"}},
        "additionalProperties": False,
    }
    assert accepts(schema, '{"a": 1, "x_b": "y"}')
    assert schema_rules(schema, "t").loose == ["#: `patternProperties` is not enforced"]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (False, "#: the schema is `false`"),
        (
            {
                "type": "object",
                "properties": {"x": {"type": "integer", "minimum": 5, "maximum": 1}},
                "required": ["x"],
            },
            "#/properties/x: no integer lies between `minimum` and `maximum` (and 'x' is required)",
        ),
        (
            {"allOf": [{"type": "string"}, {"type": "integer"}]},
            "#: the `allOf` members have no type in common",
        ),
        ({"allOf": [{"const": 1}, {"const": 2}]}, "#: two `allOf` members have different `const` values"),
        ({"anyOf": [False, {"enum": []}]}, "#: no `anyOf` option fits any value"),
        (
            {"oneOf": [{"type": "string", "minLength": 3, "maxLength": 1}]},
            "#: no `oneOf` option fits any value",
        ),
        ({"$defs": {"n": False}, "$ref": "#/$defs/n"}, "#/$defs/n: the schema is `false`"),
        ({"enum": []}, "#: `enum` is empty"),
        ({"type": "string", "enum": [1, 2]}, "#: no `enum` or `const` value has the schema's type"),
        ({"type": "array", "minItems": 3, "maxItems": 1}, "#: `minItems` 3 is above `maxItems` 1"),
        ({"type": "number", "exclusiveMinimum": 1, "maximum": 1}, "#: no number lies between"),
        ({"type": "integer", "minimum": 10**20}, "#: every integer allowed has more than 16 digits"),
    ],
)
def test_a_schema_no_value_fits_is_one_line_with_its_pointer(schema: object, message: str) -> None:
    with pytest.raises(SchemaGrammarError, match=re.escape(message)) as caught:
        schema_rules(schema, "t")
    assert str(caught.value).endswith(", so no value fits the schema")
    assert "\n" not in str(caught.value)


def test_options_and_properties_that_fit_nothing_are_left_out() -> None:
    schema = {
        "$defs": {"never": False},
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/never"},
            "b": {"$ref": "#/$defs/never"},
            "c": {"type": "integer"},
        },
    }
    converted = schema_rules(schema, "t")
    assert all(body for body in converted.rules.values())
    assert accepts(schema, '{"c": 1}') and not accepts(schema, '{"a": 1}')
    assert accepts(
        {"anyOf": [False, {"type": "integer", "minimum": 3, "maximum": 1}, {"type": "null"}]}, "null"
    )


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ("#/$defs/missing", "there is no 'missing' in #/$defs"),
        ("#/$defs//$defs/y", "there is no 'y' in #/$defs//$defs"),
        ("#anchor", "only JSON pointers (#/...) are supported, not anchors"),
        ("other.json#/a", "only references inside the same schema (#/...) are supported"),
    ],
)
def test_a_ref_that_cannot_be_followed_is_one_line_with_its_pointer(ref: str, problem: str) -> None:
    defs = {"": {"$defs": {"x": {"type": "string"}}}}
    message = f"#/properties/p: `$ref` {ref!r} cannot be followed: {problem}"
    for where in ({"allOf": [{"$ref": ref}]}, {"$ref": ref}):
        with pytest.raises(SchemaGrammarError, match=re.escape(message)):
            schema_rules({"$defs": defs, "properties": {"p": where}}, "t")


def test_an_empty_pointer_segment_is_the_empty_key() -> None:
    schema = {
        "$defs": {"": {"$defs": {"x": {"type": "string"}}}},
        "properties": {"p": {"$ref": "#/$defs//$defs/x"}},
    }
    assert accepts(schema, '{"p": "s"}') and not accepts(schema, '{"p": 1}')


# ---------------------------------------------------------------- any JSON as a schema

_WORDS = st.sampled_from(
    [
        "string",
        "integer",
        "number",
        "object",
        "array",
        "boolean",
        "null",
        "dict",
        "#",
        "#/$defs/a",
        "",
        "a",
        "é",
    ]
)
_KEYWORDS = st.sampled_from(
    [
        "type", "properties", "required", "items", "prefixItems", "additionalItems", "enum", "const",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
        "format", "$ref", "$defs", "allOf", "anyOf", "oneOf", "not", "additionalProperties",
        "patternProperties", "nullable", "minItems", "maxItems", "a",
    ]
)  # fmt: skip
_ANY_SCHEMA = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.sampled_from([0.5, 1e300, -1e20]) | _WORDS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYWORDS | _WORDS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(_ANY_SCHEMA)
def test_any_json_is_a_grammar_or_one_schema_error(schema: object) -> None:
    try:
        grammar = schema_grammar(schema, GrammarLimits(max_string_length=50, max_array_items=4))
    except SchemaGrammarError as error:
        assert "\n" not in str(error) and str(error).startswith("#"), error
        return
    assert check_lark(grammar) == [], grammar
    assert check_llguidance(grammar) == [], grammar


def test_all_of_two_enforced_formats_fits_no_string() -> None:
    with pytest.raises(SchemaGrammarError, match="no string has both `format` 'time' and 'date'"):
        schema_rules({"allOf": [{"type": "string", "format": "time"}, {"format": "date"}]}, "t")
    same = {"allOf": [{"type": "string", "format": "date"}, {"format": "date"}]}
    assert accepts(same, '"2024-03-09"') and not accepts(same, '"12:00:00Z"')
    unenforced = {"allOf": [{"type": "string", "format": "date"}, {"format": "email"}]}
    assert accepts(unenforced, '"2024-03-09"') and not accepts(unenforced, '"a@b.org"')
