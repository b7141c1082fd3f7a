"""User grammar files (.lark or .gbnf): compile them in every engine, and run sample texts through them.

A .lark file is checked by lark and llguidance as written, and by llama.cpp after localagent's GBNF
export. A .gbnf file is checked by llama.cpp as written, and by llguidance and lark after llguidance's
GBNF-to-Lark conversion. Acceptance in llama.cpp runs its real grammar sampler token by token.
"""

from __future__ import annotations

import ctypes
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import llama_cpp
import llguidance
from lark import Lark
from lark.exceptions import LarkError
from llguidance.gbnf_to_lark import gbnf_to_lark

from localagent.backends.llama_logs import captured_llama_output
from localagent.core.user_files import read_user_text
from localagent.errors import LocalagentError
from localagent.grammar_checks.engines import (
    Engine,
    GrammarProblem,
    check_gbnf,
    check_lark,
    check_llguidance,
    llama_vocab,
    llguidance_tokenizer,
)
from localagent.schema_grammar.gbnf import GrammarExportError, lark_to_gbnf

Syntax = Literal["lark", "gbnf"]
ENGINES: tuple[Engine, ...] = ("lark", "llguidance", "gbnf")


class GrammarFileError(LocalagentError):
    pass


@dataclass(frozen=True)
class GrammarFile:
    path: Path
    syntax: Syntax
    text: str

    @classmethod
    def read(cls, path: Path) -> GrammarFile:
        syntax = {".lark": "lark", ".gbnf": "gbnf"}.get(path.suffix.lower())
        if syntax is None:
            raise GrammarFileError(f"{path}: a grammar file must end in .lark or .gbnf")
        return cls(path, syntax, read_user_text(path, "", GrammarFileError))  # type: ignore[arg-type]

    def as_lark(self) -> str:
        return self.text if self.syntax == "lark" else _lark_dialect(gbnf_to_lark(self.text))

    def as_gbnf(self) -> str:
        return self.text if self.syntax == "gbnf" else lark_to_gbnf(self.text)


_COUNTED = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def _lark_dialect(llguidance_lark: str) -> str:
    """llguidance's Lark as the lark parser reads it: no %llguidance line, `x~m..n` for `x{m,n}`."""
    lines = [line for line in llguidance_lark.splitlines() if not line.startswith("%llguidance")]

    def counted(match: re.Match[str]) -> str:
        low, high = match[1], match[2]
        if high is None:
            return f"~{low}"
        return f"~{low}..{high}" if high else f"~{low}..{int(low) + 1_000}"

    return _COUNTED.sub(counted, "\n".join(lines)) + "\n"


def check_file(grammar: GrammarFile) -> dict[Engine, list[GrammarProblem]]:
    """Each engine's problems with the file; an empty list means the engine compiled it."""
    problems: dict[Engine, list[GrammarProblem]] = {}
    try:
        lark_text = grammar.as_lark()
    except Exception as error:  # noqa: BLE001 - llguidance's converter raises plain exceptions
        note = GrammarProblem("lark", f"cannot convert the GBNF to Lark: {error}")
        problems["lark"] = [note]
        problems["llguidance"] = [GrammarProblem("llguidance", note.message)]
    else:
        problems["lark"] = _converted(check_lark(lark_text), grammar.syntax != "lark")
        problems["llguidance"] = _converted(check_llguidance(lark_text), grammar.syntax != "lark")
    try:
        gbnf_text = grammar.as_gbnf()
    except (GrammarExportError, LarkError) as error:
        problems["gbnf"] = [GrammarProblem("gbnf", f"cannot export the Lark grammar to GBNF: {error}")]
    else:
        problems["gbnf"] = _converted(check_gbnf(gbnf_text), grammar.syntax != "gbnf")
    return problems


def _converted(problems: list[GrammarProblem], converted: bool) -> list[GrammarProblem]:
    """Positions in a converted grammar do not point into the user's file; say so instead."""
    if not converted:
        return problems
    return [GrammarProblem(p.engine, f"{p.message} (in the converted grammar)") for p in problems]


def accepts(grammar: GrammarFile, engine: Engine, text: str) -> bool:
    if engine == "lark":
        return lark_accepts(grammar.as_lark(), text)
    if engine == "llguidance":
        return llguidance_accepts(grammar.as_lark(), text)
    return llamacpp_accepts(grammar.as_gbnf(), text)


@cache
def _lark_parser(text: str) -> Lark:
    return Lark(text, parser="earley", lexer="dynamic")


def lark_accepts(lark_text: str, text: str) -> bool:
    try:
        _lark_parser(lark_text).parse(text)
    except LarkError:
        return False
    return True


def llguidance_accepts(lark_text: str, text: str) -> bool:
    matcher = llguidance.LLMatcher(
        llguidance_tokenizer(), llguidance.LLMatcher.grammar_from_lark(lark_text), log_level=0
    )
    if matcher.is_error():
        return False
    # Greedy tokenization: a model's tokenizer may read text like "<b>" as a special token.
    tokens = llguidance_tokenizer().greedy_tokenize(text)
    return matcher.consume_tokens(tokens) and matcher.is_accepting()


def llamacpp_accepts(gbnf_text: str, text: str) -> bool:
    """Feed text token by token through llama.cpp's grammar sampler; accepted if it may then stop."""
    vocab = llama_vocab()
    with captured_llama_output():
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf_text.encode(), b"root")
    if not sampler:
        return False
    try:
        for token in _llama_tokens(vocab, text):
            if not _allowed(sampler, token):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return _allowed(sampler, llama_cpp.llama_vocab_eos(vocab))
    finally:
        llama_cpp.llama_sampler_free(sampler)


def _allowed(sampler: llama_cpp.llama_sampler_p, token: int) -> bool:
    """The sampler masks a token it would reject to -inf; ask it about this one token alone."""
    data = (llama_cpp.llama_token_data * 1)()
    data[0].id = token
    data[0].logit = 0.0
    data[0].p = 0.0
    candidates = llama_cpp.llama_token_data_array(data=data, size=1, selected=-1, sorted=False)
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
    return not math.isinf(data[0].logit)


def _llama_tokens(vocab: llama_cpp.llama_vocab_p, text: str) -> list[int]:
    encoded = text.encode("utf-8")
    room = len(encoded) + 8
    buffer = (llama_cpp.llama_token * room)()
    count = llama_cpp.llama_tokenize(vocab, encoded, len(encoded), buffer, room, False, False)
    return list(buffer[:count])
