"""The regex subset: parsing, the transforms, and the emitted regex/GBNF run in the real engines."""

from __future__ import annotations

import json
import re

import pytest
from conftest_grammar import gbnf_accepts, lark_accepts, llguidance_accepts

from localagent.grammar_checks.engines import check_gbnf
from localagent.schema_grammar.regex_syntax import (
    MAX_CHAR,
    CharSet,
    Concat,
    Repeat,
    UnsupportedPattern,
    bound_repeats,
    full_match,
    json_safe,
    literal,
    parse_regex,
    to_gbnf,
    to_regex,
)

ANY = Repeat(CharSet.of([(0, MAX_CHAR)]), 0, None)

# (ECMA pattern, strings); what `re.search` says on these strings is the expected answer.
SEARCH_CASES = [
    ("^abc?d*efg+(hij)?kl$", ["abdefgkl", "abcddefgggkl", "abcefghijkl", "abefgkl", "xabdefgkl"]),
    ("^A|B|C|D$", ["A", "Ax", "xBx", "C", "xD", "Dx", "x"]),
    (
        r"^(\([0-9]{1,3}\))?[0-9]{3}-[0-9]{4} a{3,5}nd...$",
        ["(1)123-4567 aaand xyz", "123-4567 aaaaand abc", "123-456 aaand xyz"],
    ),
    (r"^a\^\$\.\[\]\(\)\|\{\}\*\+\?b$", ["a^$.[]()|{}*+?b", "ab"]),
    ("^(?:(?:ab)+c)?d$", ["d", "abcd", "ababcd", "abd", "cd"]),
    (r"^[a-zA-Z0-9_-]*$", ["", "He_llo-12", "!", "Hello World"]),
    (r"\d{2}", ["a12b", "a1b"]),
    (r"^\w+@\w+\.[a-z]{2,3}$", ["me@host.com", "me@host.c", "me@@host.com"]),
    (r"^[^aeiou\s]+$", ["rhythm", "vowel", "no space"]),
    (r"^\S\s\D\W$", ["a 1!", "a 11", "aa1!"]),
    (r"^x{2,}y{,3}$", ["xxy{,3}", "xxxy{,3}", "xy{,3}"]),
    (r"^[\]\-a]+$", ["]-a", "b"]),
    (r"^(?<year>[0-9]{4})-(?P<month>[0-9]{2})$", ["2024-02", "24-02"]),
    (r"^\u00e9\x41\t\u{1F600}$", ["éA\t😀", "eA\t😀"]),
    (r"^a*?b+?$", ["aab", "ab", "a"]),
    ("^(|a)b$", ["b", "ab", "aab"]),
    ("^[]a$", ["a", "]a", ""]),
]


def _search_cases() -> list[tuple[str, str, bool]]:
    cases = []
    for pattern, strings in SEARCH_CASES:
        python_pattern = pattern.replace("(?<year>", "(?P<year>").replace(r"\u{1F600}", "\U0001f600")
        python_pattern = python_pattern.replace("^[]a$", "^(?!)a$")  # ECMA `[]` matches nothing
        python_pattern = python_pattern.replace("y{,3}", r"y\{,3\}")  # ECMA `{,3}` is literal text
        for text in strings:
            cases.append((pattern, text, re.search(python_pattern, text) is not None))
    return cases


SEARCH = _search_cases()


@pytest.mark.parametrize(("pattern", "text", "expected"), SEARCH)
def test_full_match_form_agrees_with_search_in_python_and_llguidance(
    pattern: str, text: str, expected: bool
) -> None:
    regex = to_regex(full_match(parse_regex(pattern), ANY))
    assert (re.fullmatch(regex, text) is not None) is expected
    grammar = f"start: /<(?:{regex})>/"  # delimited: lark refuses terminals that match the empty string
    assert lark_accepts(grammar, f"<{text}>") is expected
    assert llguidance_accepts(grammar, f"<{text}>") is expected


@pytest.mark.parametrize(("pattern", "text", "expected"), [c for c in SEARCH if c[1]])
def test_gbnf_form_agrees_and_parses_in_llamacpp(pattern: str, text: str, expected: bool) -> None:
    hoisted: list[str] = []

    def hoist(body: str) -> str:
        hoisted.append(f"r{len(hoisted)} ::= {body}")
        return f"r{len(hoisted) - 1}"

    expression = to_gbnf(bound_repeats(full_match(parse_regex(pattern), ANY), 50), hoist)
    gbnf = "\n".join([f"root ::= {expression}", *hoisted]) + "\n"
    assert check_gbnf(gbnf) == []
    assert gbnf_accepts(gbnf, text) is expected


def test_dot_follows_the_flavor() -> None:
    ecma, python = parse_regex("."), parse_regex(".", flavor="python")
    assert isinstance(ecma, CharSet) and isinstance(python, CharSet)
    for c in "\n\r\u2028\u2029":
        assert not ecma.intersect(CharSet.char(c)).ranges
    assert python.intersect(CharSet.char("\r")).ranges and not python.intersect(CharSet.char("\n")).ranges


def test_python_flavor_reads_a_leading_bracket_as_a_literal() -> None:
    assert re.fullmatch(to_regex(parse_regex("[]a]+", flavor="python")), "]a]")


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (r"(a)\1", "backreference at offset 3"),
        ("(?=a)b", "lookaround at offset 0"),
        ("(?<!a)b", "lookaround"),
        ("(?i)abc", "inline flags"),
        (r"\bword\b", r"escape \b"),
        (r"\p{L}", r"escape \p"),
        ("a*+", "possessive quantifier"),
        ("a**", "nothing to repeat"),
        ("*a", "nothing to repeat"),
        ("a{3,2}", "bad repetition"),
        ("[z-a]", "reversed range"),
        ("(ab", "missing ')'"),
        ("ab)", "unbalanced ')'"),
        ("[ab", "missing ']'"),
        ("a\\", "trailing backslash"),
        (r"\x4", "bad hex escape"),
    ],
)
def test_unsupported_or_invalid_patterns_raise(pattern: str, problem: str) -> None:
    with pytest.raises(UnsupportedPattern, match=re.escape(problem)):
        parse_regex(pattern)


@pytest.mark.parametrize("pattern", ["a^b", "a$b", "x(^a)", "(a$)b", "^*"])
def test_anchors_only_at_the_ends(pattern: str) -> None:
    with pytest.raises(UnsupportedPattern):
        full_match(parse_regex(pattern), ANY)


def test_json_safe_writes_each_character_as_json_does() -> None:
    assert re.fullmatch(to_regex(json_safe(parse_regex('a"b'))), 'a\\"b')
    assert re.fullmatch(to_regex(json_safe(parse_regex("\\n"))), "\\n")
    assert re.fullmatch(to_regex(json_safe(parse_regex("\\x01"))), "\\u0001")
    wide = to_regex(json_safe(parse_regex("[^a]")))
    for char in ("b", "é", '"', "\\", "\n", "\x01", "\x1f", "\x7f"):
        assert re.fullmatch(wide, json.dumps(char, ensure_ascii=False)[1:-1]), repr(char)
    assert not re.fullmatch(wide, "a") and not re.fullmatch(wide, "\n") and not re.fullmatch(wide, '"')
    assert json_safe(parse_regex("[a-z]")) == CharSet.of([(0x61, 0x7A)])
    assert re.fullmatch(to_regex(json_safe(parse_regex("[\r\n]"))), "\\r")


def test_bound_repeats_caps_only_unbounded_repetitions() -> None:
    bounded = bound_repeats(parse_regex("a*b+c{2,}d{1,3}e{9,}"), 5)
    assert to_regex(bounded) == "a{0,5}b{1,5}c{2,5}d{1,3}e{9}"


def test_charset_operations() -> None:
    digits = CharSet.of([(0x30, 0x39), (0x35, 0x3A)])
    assert digits.ranges == ((0x30, 0x3A),)
    assert digits.complement().complement() == digits
    assert digits.minus(CharSet.char("5")).ranges == ((0x30, 0x34), (0x36, 0x3A))
    assert CharSet.of([(0x61, 0x61), (0x62, 0x62)]).ranges == ((0x61, 0x62),)


def test_emitted_regex_escapes_survive_lark_and_llguidance() -> None:
    tricky = Concat(
        (literal('"a\\'), literal('"/[]{}'), CharSet.of([(0x2D, 0x2D), (0x5D, 0x5E), (0x7E, 0x7E)]))
    )
    regex = to_regex(tricky)
    text = '"a\\"/[]{}-'
    assert re.fullmatch(regex, text)
    assert lark_accepts(f"start: /{regex}/", text)
    assert llguidance_accepts(f"start: /{regex}/", text)
