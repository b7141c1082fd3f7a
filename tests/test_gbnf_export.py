"""Lark -> llama.cpp GBNF: llama.cpp's own parser compiles the export, and it means the same thing.

The meaning is checked independently: llguidance's GBNF reader turns the export back into a grammar
and runs the same accept/reject strings as the Lark source.
"""

from __future__ import annotations

import re
import time

import pytest
from conftest_grammar import (
    LLAMACPP_CASES,
    compact_layout,
    gbnf_accepts,
    lark_accepts,
    llamacpp_rule_estimate,
    load_json,
)

from localagent.grammar_checks.engines import GrammarProblem, check_gbnf
from localagent.schema_grammar.compiler import GrammarLimits, schema_grammar
from localagent.schema_grammar.gbnf import GrammarExportError, lark_to_gbnf

ACCEPT_REJECT = load_json(LLAMACPP_CASES / "schema_accept_reject_cases.json")["cases"]
TO_GRAMMAR = [
    c
    for c in load_json(LLAMACPP_CASES / "schema_to_grammar_cases.json")["cases"]
    if c["expected_status"] == "SUCCESS"
]


@pytest.mark.parametrize("case", ACCEPT_REJECT, ids=[f"{i}-{c['name']}" for i, c in enumerate(ACCEPT_REJECT)])
def test_export_accepts_and_rejects_what_the_lark_grammar_does(case: dict) -> None:
    grammar = schema_grammar(case["schema"])
    gbnf = lark_to_gbnf(grammar)
    assert check_gbnf(gbnf) == []
    for text in [*case["passing"], *case["failing"]]:
        laid_out = compact_layout(text)
        assert gbnf_accepts(gbnf, laid_out) is lark_accepts(grammar, laid_out), text


@pytest.mark.parametrize("case", TO_GRAMMAR, ids=[c["name"] for c in TO_GRAMMAR])
def test_llamacpp_schema_to_grammar_cases_compile_in_llamacpp(case: dict) -> None:
    assert check_gbnf(lark_to_gbnf(schema_grammar(case["schema"]))) == []


def test_start_becomes_root_and_names_are_gbnf_names() -> None:
    gbnf = lark_to_gbnf('start: root_rule _x X\nroot_rule: "r"\n_x: "x"\nX: "X"\n')
    assert gbnf.splitlines() == [
        "root ::= root-rule x x-token",
        'root-rule ::= "r"',
        'x ::= "x"',
        'x-token ::= "X"',
    ]
    assert check_gbnf(gbnf) == []
    assert lark_to_gbnf('main: "m"\nroot: main\n', start="root").splitlines() == [
        'main ::= "m"',
        "root ::= main",
    ]
    assert lark_to_gbnf('start: root\nroot: "r"\n').splitlines() == ["root ::= root-2", 'root-2 ::= "r"']


def test_operators_literals_and_ranges() -> None:
    grammar = 'start: "a"? B* c+ ["d"] ("e" | "f")~2 "g"~1..3 H\nB: "b"\nc: "c"\nH: "0".."9" | /[x-z]\\n/\n'
    gbnf = lark_to_gbnf(grammar)
    assert check_gbnf(gbnf) == []
    for text, expected in [
        ("ccefg1", True),
        ("abbcdffggg9", True),
        ("cefgz\n", True),
        ("cefg", False),
        ("ceg1", False),
    ]:
        assert lark_accepts(grammar, text) is expected
        assert gbnf_accepts(gbnf, text) is expected


def test_terminals_inside_terminals_stay_references() -> None:
    gbnf = lark_to_gbnf(schema_grammar({"type": "string"}))
    assert 'json-string ::= "\\"" json-char{0,2000} "\\""' in gbnf.splitlines()


def test_repeated_groups_holding_counted_repetitions_are_hoisted_into_rules() -> None:
    # llama.cpp refuses `x?` or `x{m,n}` when x generates about 2000 rules itself ...
    assert check_gbnf('root ::= ("a" "b"{0,2000})?\n') == [
        GrammarProblem(
            "gbnf",
            "number of rules that are going to be repeated multiplied by the new repetition exceeds sane "
            "defaults, please reduce the number of repetitions or rule complexity",
        )
    ]
    # ... so the export gives such an x a rule of its own.
    grammar = 'start: ("a" B~0..2000)? C\nB: "b"\nC: /(?:x[0-9]{1,500}){1,40}/\n'
    gbnf = lark_to_gbnf(grammar)
    assert check_gbnf(gbnf) == []
    assert gbnf_accepts(gbnf, "abbx1x22") and not gbnf_accepts(gbnf, "abbx")


def test_string_length_bound_survives_export() -> None:
    gbnf = lark_to_gbnf(schema_grammar({"type": "string", "maxLength": 300}))
    assert gbnf_accepts(gbnf, '"' + "é" * 300 + '"')
    assert not gbnf_accepts(gbnf, '"' + "e" * 301 + '"')


@pytest.mark.parametrize(
    ("grammar", "problem"),
    [
        ('start: "a"\n%ignore " "\n', "%ignore"),
        ('start: _t{"a"}\n_t{x}: x x\n', "template"),
        ("start: /abc/i\n", "flags i"),
        ("start: /a(?=b)/\n", "lookaround"),
        ("start: a\n", "not a valid Lark grammar"),
        ('begin: "a"\n', "no rule 'start'"),
    ],
)
def test_constructs_without_a_gbnf_equivalent_raise(grammar: str, problem: str) -> None:
    with pytest.raises(GrammarExportError, match=re.escape(problem)):
        lark_to_gbnf(grammar)


def test_gbnf_problems_carry_llamacpp_message_and_position() -> None:
    assert check_gbnf('root ::= "a" [b-c]{0,3}\n') == []
    assert check_gbnf('root ::= "a"\nx ::= "\\q"\n') == [GrammarProblem("gbnf", "unknown escape", 2, 8)]
    assert check_gbnf('root ::= ("a" "b"\n') == [
        GrammarProblem("gbnf", "expecting ')' at end of grammar", 2, 1)
    ]
    assert check_gbnf("root ::= missing\n") == [GrammarProblem("gbnf", "Undefined rule identifier 'missing'")]


@pytest.mark.parametrize("max_length", [200, 2000])
def test_report_gbnf_size_for_long_strings(max_length: int) -> None:
    schema = {
        "type": "object",
        "properties": {f"text{i}": {"type": "string"} for i in range(5)},
        "required": ["text0"],
        "additionalProperties": {"type": "string"},
    }
    gbnf = lark_to_gbnf(schema_grammar(schema, GrammarLimits(max_string_length=max_length)))
    start = time.perf_counter()
    assert check_gbnf(gbnf) == []
    parse_seconds = time.perf_counter() - start
    print(
        f"\nGBNF, 5 string properties + extra string pairs, max_string_length={max_length}: "
        f"{len(gbnf.splitlines())} GBNF rules, {len(gbnf)} bytes, about {llamacpp_rule_estimate(gbnf)} rules "
        f"inside llama.cpp, parsed in {parse_seconds * 1000:.1f} ms"
    )
    assert parse_seconds < 1.0
