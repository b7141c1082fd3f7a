"""BFCL v3 as a corpus: every function spec must give a grammar that compiles in lark, llguidance and
llama.cpp, and every accepted answer must be accepted by its function's grammar."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import cache

import jsonschema
import pytest
from conftest_grammar import BFCL, lark_accepts, lark_parser, llamacpp_rule_estimate, llguidance_accepts
from lark.exceptions import LarkError

from localagent.evaluation.bfcl_functions import (
    BfclFunction,
    bfcl_to_json_schema,
    load_answers,
    load_questions,
    representative_arguments,
)
from localagent.grammar_checks.engines import check_gbnf, check_llguidance, llguidance_tokenizer
from localagent.schema_grammar.compiler import render_rules, schema_grammar, schema_rules, shared_rules
from localagent.schema_grammar.gbnf import lark_to_gbnf

CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
ANSWERED = CATEGORIES[:4]

# Answer key entries that contradict their own function spec, so no schema-faithful grammar accepts them.
INCONSISTENT_ANSWERS = {
    (
        "parallel_multiple_21",
        "linear_regression_fit",
    ): "x and y are arrays of floats; the answer gives strings",
    ("parallel_multiple_94", "sort_list"): "elements are integers; the answer sorts fruit names",
}
# The answer key names a function by the last part of its dotted name.
NAME_ALIASES = {("simple_363", "find_closest"): "restaurant_search.find_closest"}


@cache
def questions(category: str) -> list:
    return load_questions(BFCL / f"BFCL_v3_{category}.json")


@cache
def answers(category: str) -> dict:
    return load_answers(BFCL / "possible_answer" / f"BFCL_v3_{category}.json")


def test_files_hold_the_documented_record_counts() -> None:
    assert [len(questions(c)) for c in CATEGORIES] == [400, 200, 200, 200, 240]
    assert [len(answers(c)) for c in ANSWERED] == [400, 200, 200, 200]
    first = questions("simple")[0]
    assert first.id == "simple_0" and first.functions[0].name == "calculate_triangle_area"
    assert answers("simple")["simple_0"] == [
        ("calculate_triangle_area", {"base": [10], "height": [5], "unit": ["units", ""]})
    ]


def test_bfcl_types_map_to_json_schema() -> None:
    parameters = {
        "type": "dict",
        "properties": {
            "type": {"type": "string", "enum": ["a"], "optional": True},
            "coord": {"type": "tuple", "items": {"type": "float"}},
            "data": {"type": "any", "description": "anything"},
            "nested": {"type": "dict", "properties": {"n": {"type": ["integer", "float"]}}},
        },
        "required": ["coord"],
        "optional": [],
    }
    assert bfcl_to_json_schema(parameters) == {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["a"]},
            "coord": {"type": "array", "items": {"type": "number"}},
            "data": {"description": "anything"},
            "nested": {"type": "object", "properties": {"n": {"type": ["integer", "number"]}}},
        },
        "required": ["coord"],
    }


def test_representative_arguments_follow_the_answer_key() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "mod": {"type": "number"},
            "unit": {"type": "string"},
            "conditions": {
                "type": "array",
                "items": {"type": "object", "properties": {"f": {"type": "string"}}},
            },
        },
    }
    accepted = {"unit": ["", "cm"], "mod": ["", None], "conditions": [[{"f": ["x", "y"]}]], "a": [1, "one"]}
    assert representative_arguments(schema, accepted) == {
        "a": "one",
        "unit": "cm",
        "conditions": [{"f": "x"}],
    }
    assert list(representative_arguments(schema, accepted)) == ["a", "unit", "conditions"]


@dataclass
class Coverage:
    specs: int = 0
    compiled: dict[str, int] = field(default_factory=lambda: {"lark": 0, "llguidance": 0, "gbnf": 0})
    failures: list[str] = field(default_factory=list)
    loose_notes: int = 0
    calls: int = 0
    accepted: dict[str, int] = field(default_factory=lambda: {"lark": 0, "llguidance": 0})
    rejected: list[str] = field(default_factory=list)
    skipped: dict[tuple[str, str], str] = field(default_factory=dict)


def _lark_problems(grammar: str) -> list[str]:
    """check_lark's compile, through the parser cache the answers are parsed with."""
    try:
        lark_parser(grammar)
    except LarkError as error:
        return [str(error)]
    return []


def _spec_key(function: BfclFunction) -> str:
    return json.dumps([function.name, function.parameters], sort_keys=True)


@pytest.fixture(scope="module")
def coverage() -> Coverage:
    result = Coverage()
    grammars: dict[str, str] = {}
    for category in CATEGORIES:
        for question in questions(category):
            for function in question.functions:
                key = _spec_key(function)
                if key in grammars:
                    continue
                converted = schema_rules(bfcl_to_json_schema(function.parameters), "args")
                result.loose_notes += len(converted.loose)
                grammars[key] = grammar = schema_grammar(bfcl_to_json_schema(function.parameters))
                problems = {
                    "lark": _lark_problems(grammar),
                    "llguidance": check_llguidance(grammar),
                    "gbnf": check_gbnf(lark_to_gbnf(grammar)),
                }
                for engine, found in problems.items():
                    result.compiled[engine] += not found
                    result.failures += [f"{question.id} {function.name}: {problem}" for problem in found]
    result.specs = len(grammars)
    for category in ANSWERED:
        for question in questions(category):
            functions = {f.name: f for f in question.functions}
            for name, accepted in answers(category)[question.id]:
                result.calls += 1
                function = functions[NAME_ALIASES.get((question.id, name), name)]
                schema = bfcl_to_json_schema(function.parameters)
                arguments = representative_arguments(schema, accepted)
                if not jsonschema.Draft202012Validator(schema).is_valid(arguments):
                    result.skipped[(question.id, name)] = "answer does not match the function's schema"
                    continue
                text = json.dumps(arguments, ensure_ascii=False)
                grammar = grammars[_spec_key(function)]
                for engine, accepts in (("lark", lark_accepts), ("llguidance", llguidance_accepts)):
                    if accepts(grammar, text):
                        result.accepted[engine] += 1
                    else:
                        result.rejected.append(f"{engine} {question.id} {name}: {text}")
    return result


@pytest.mark.slow  # about 30 s: 1359 grammars compiled in three engines
def test_every_function_spec_compiles_in_every_engine(coverage: Coverage) -> None:
    assert coverage.failures == []
    assert coverage.specs == 1359  # distinct (name, parameters) pairs across the five files
    assert coverage.compiled == {"lark": coverage.specs, "llguidance": coverage.specs, "gbnf": coverage.specs}


@pytest.mark.slow  # about 30 s: 1359 grammars compiled in three engines
def test_every_consistent_answer_is_accepted(coverage: Coverage) -> None:
    assert set(coverage.skipped) == set(INCONSISTENT_ANSWERS)
    assert coverage.rejected == [], "\n".join(coverage.rejected)
    expected = coverage.calls - len(INCONSISTENT_ANSWERS)
    assert coverage.accepted == {"lark": expected, "llguidance": expected}


@pytest.mark.slow  # about 30 s: 1359 grammars compiled in three engines
def test_print_coverage(coverage: Coverage) -> None:
    checked = coverage.calls - len(coverage.skipped)
    print(
        f"\nBFCL v3: {coverage.specs} distinct function specs; compiled: lark {coverage.compiled['lark']}, "
        f"llguidance {coverage.compiled['llguidance']}, llama.cpp GBNF {coverage.compiled['gbnf']}; "
        f"{coverage.loose_notes} loose-keyword notes.\n"
        f"Answers: {coverage.calls} expected calls; accepted: lark {coverage.accepted['lark']}/{checked}, "
        f"llguidance {coverage.accepted['llguidance']}/{checked}; skipped {len(coverage.skipped)}:"
    )
    for (question_id, name), reason in sorted(coverage.skipped.items()):
        print(f"  {question_id} {name}: {reason} ({INCONSISTENT_ANSWERS[(question_id, name)]})")
    assert checked > 0


def test_report_ten_tool_grammar_build_and_llguidance_compile_time() -> None:
    import llguidance

    tokenizer = llguidance_tokenizer()
    functions = [f for q in questions("multiple") for f in q.functions][:10]
    start = time.perf_counter()
    parts = []
    for index, function in enumerate(functions):
        converted = schema_rules(bfcl_to_json_schema(function.parameters), f"t{index}")
        parts.append(render_rules(converted.rules))
    choices = " | ".join(f'"{f.name} " t{i}' for i, f in enumerate(functions))
    grammar = f"start: {choices}\n" + "".join(parts) + render_rules(shared_rules())
    built = time.perf_counter()
    matcher = llguidance.LLMatcher(tokenizer, llguidance.LLMatcher.grammar_from_lark(grammar), log_level=0)
    compiled = time.perf_counter()
    assert not matcher.is_error(), matcher.get_error()
    mask_start = time.perf_counter()
    matcher.compute_bitmask()
    mask_seconds = time.perf_counter() - mask_start
    gbnf = lark_to_gbnf(grammar)
    gbnf_start = time.perf_counter()
    assert check_gbnf(gbnf) == []
    gbnf_seconds = time.perf_counter() - gbnf_start
    print(
        f"\n10 BFCL tools: rules built in {(built - start) * 1000:.1f} ms, llguidance compile "
        f"{(compiled - built) * 1000:.1f} ms, first token mask {mask_seconds * 1000:.2f} ms; "
        f"{len(grammar.splitlines())} Lark lines; GBNF {len(gbnf.splitlines())} rules (about "
        f"{llamacpp_rule_estimate(gbnf)} inside llama.cpp), llama.cpp parse {gbnf_seconds * 1000:.1f} ms"
    )
    assert compiled - start < 2.0
