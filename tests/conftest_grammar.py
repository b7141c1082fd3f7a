"""Helpers for the grammar tests: run strings through the real engines (lark, llguidance, llama.cpp GBNF).

Import explicitly (`from conftest_grammar import ...`); this is not a pytest conftest.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import llguidance
from lark import Lark
from lark.exceptions import LarkError
from llguidance.gbnf_to_lark import gbnf_to_lark

from localagent.grammar_checks.engines import llguidance_tokenizer
from localagent.schema_grammar.json_lexemes import INT_LIMIT

EXTERNAL = Path(__file__).parent / "external"
LLAMACPP_CASES = EXTERNAL / "llamacpp_json_schema"
BFCL = EXTERNAL / "bfcl"


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def lark_parser(grammar: str) -> Lark:
    return Lark(grammar, parser="earley", lexer="dynamic")


def lark_accepts(grammar: str, text: str) -> bool:
    try:
        lark_parser(grammar).parse(text)
    except LarkError:
        return False
    return True


@cache
def _matcher(grammar: str) -> llguidance.LLMatcher:
    matcher = llguidance.LLMatcher(
        llguidance_tokenizer(), llguidance.LLMatcher.grammar_from_lark(grammar), log_level=0
    )
    assert not matcher.is_error(), matcher.get_error()
    return matcher


def llguidance_accepts(grammar: str, text: str) -> bool:
    """Feed the tokens of `text` through an llguidance matcher; True when all are taken and it may stop."""
    matcher = _matcher(grammar).deep_copy()  # a matcher that saw a bad token stays in error, even after reset
    # Greedy tokenization; the verdict depends on the bytes only (user-defined tokens like Gemma's
    # "<b>", which llama.cpp's tokenizer makes of that text, are text to llguidance too).
    tokens = llguidance_tokenizer().greedy_tokenize(text)
    return matcher.consume_tokens(tokens) and matcher.is_accepting()


def gbnf_accepts(gbnf: str, text: str) -> bool:
    """Run `text` through the GBNF grammar, read back by llguidance's own GBNF converter."""
    return llguidance_accepts(gbnf_to_lark(gbnf), text)


def llamacpp_rule_estimate(gbnf: str) -> int:
    """Rules llama.cpp builds: one per definition and group, n-m per x{m,n}, one per ? * +."""
    count = len(gbnf.splitlines())
    outside = re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', "", gbnf)
    count += outside.count("(") + len(re.findall(r"[?*+]", outside))
    count += sum(
        int(m[2] or m[1]) - int(m[1]) for m in re.finditer(r"\{(\d+)(?:,(\d*))?\}", outside) if m[2] != ""
    )
    return count


def integral_as_int(value: Any) -> Any:
    """`value` with each integral float as the integer the grammar writes for it (5 for 5.0)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= INT_LIMIT:
        return int(value)
    if isinstance(value, list):
        return [integral_as_int(item) for item in value]
    if isinstance(value, dict):
        return {key: integral_as_int(item) for key, item in value.items()}
    return value


def compact_layout(text: str) -> str:
    """Re-lay out llama.cpp's oracle strings in our layout, tokens untouched.

    llama.cpp allows whitespace inside brackets and around separators; our grammars allow only one
    optional space after `:` and `,`. Whitespace elsewhere (for example after the value) is kept.
    """
    out: list[str] = []
    gap = ""
    in_string = escaped = False
    for c in text:
        if in_string:
            out.append(c)
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            continue
        if c in " \t\r\n":
            gap += c
            continue
        previous = out[-1] if out else None
        if gap and previous not in ("{", "[") and c not in "}],:":
            out.append(" " if previous in (",", ":") else gap)
        gap = ""
        out.append(c)
        in_string = c == '"'
    return "".join(out) + gap


class _ByteVocabulary:
    """One token per byte, and an end token: llguidance then checks text byte by byte, with no model."""

    def __init__(self) -> None:
        self.eos_token_id = 256
        self.bos_token_id = None
        self.tokens = [bytes([value]) for value in range(256)] + [b"<eos>"]
        self.special_token_ids = [256]

    def __call__(self, text: str | bytes) -> list[int]:
        return list(text if isinstance(text, bytes) else text.encode())


@cache
def byte_tokenizer() -> llguidance.LLTokenizer:
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteVocabulary()), slices=[])


def byte_matcher(grammar: str) -> llguidance.LLMatcher:
    """A fresh llguidance matcher for `grammar` that reads bytes; feed it with `consume_text`."""
    matcher = llguidance.LLMatcher(
        byte_tokenizer(), llguidance.LLMatcher.grammar_from_lark(grammar), log_level=0
    )
    assert not matcher.is_error(), matcher.get_error()
    return matcher


def consume_text(matcher: llguidance.LLMatcher, text: str) -> bool:
    """Feed `text` to a byte matcher; False (and the matcher left behind) when a byte is refused."""
    data = list(text.encode())
    return matcher.try_consume_tokens(data) == len(data)
