"""Compile a grammar in each engine that will run it and report what each one rejects.

Lark text is checked with the python `lark` parser and with llguidance; GBNF text with llama.cpp's own
parser. The llama.cpp vocabulary (and the llguidance tokenizer built from it, about 2 s) is loaded once
per process from the embedded model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import llama_cpp
import llguidance
import regex
from lark import Lark
from lark.exceptions import LarkError

from localagent.backends.cpu_backend import ensure_cpu_backend
from localagent.backends.llama_logs import captured_llama_output
from localagent.backends.vocabulary import build_tokenizer
from localagent.models.registry import EMBEDDED_MODEL, resolve_model

Engine = Literal["lark", "llguidance", "gbnf"]
# lark compiles terminals with the `regex` package when it is installed, as it is with localagent.
REGEX_ERRORS = (re.error, regex.error)


@dataclass(frozen=True)
class GrammarProblem:
    engine: Engine
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        return f"{self.engine}: {self.message}{where}"


def check_lark(text: str) -> list[GrammarProblem]:
    """Build the parser localagent parses replies with; lark reports one problem at a time."""
    try:
        Lark(text, parser="earley", lexer="dynamic")
    except (LarkError, *REGEX_ERRORS) as error:
        line = getattr(error, "line", None)
        column = getattr(error, "column", None)
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return [GrammarProblem("lark", message, line, column)]
    return []


_LLGUIDANCE_AT = re.compile(r"\bat (\d+)\((\d+)\)")


def check_llguidance(lark_text: str) -> list[GrammarProblem]:
    """llguidance's error, or its warnings (messages starting with "warning: ")."""
    grammar = llguidance.LLMatcher.grammar_from_lark(lark_text)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, llguidance_tokenizer())
    problems = []
    for message in messages:
        found = _LLGUIDANCE_AT.search(message)
        line, column = (int(found[1]), int(found[2])) if found else (None, None)
        text = message.strip().splitlines()[0]
        problems.append(GrammarProblem("llguidance", text if is_error else f"warning: {text}", line, column))
    return problems


def check_gbnf(text: str, root: str = "root") -> list[GrammarProblem]:
    """Build a llama.cpp grammar sampler from `text`, as llama.cpp does for a request's `grammar`."""
    vocab = llama_vocab()
    with captured_llama_output() as output:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), root.encode())
    if sampler:
        llama_cpp.llama_sampler_free(sampler)
        return []
    return [_gbnf_problem(text, output.text())]


def _gbnf_problem(grammar: str, output: str) -> GrammarProblem:
    # llama.cpp prints "parse: error parsing grammar: <what> at <rest of the text>\n\n<grammar>\n"
    _, found, body = output.partition("error parsing grammar: ")
    if not found:
        lines = [line.strip() for line in output.splitlines() if line.strip() and "failed to" not in line]
        return GrammarProblem("gbnf", lines[0] if lines else "llama.cpp rejected the grammar")
    end = body.rfind("\n\n" + grammar)
    message = body[:end] if end >= 0 else body.split("\n", 1)[0]
    what, at, rest = message.partition(" at ")
    if not at or not grammar.endswith(rest):
        return GrammarProblem("gbnf", message.strip())
    offset = len(grammar) - len(rest)
    line = grammar.count("\n", 0, offset) + 1
    column = offset - (grammar.rfind("\n", 0, offset) + 1) + 1
    return GrammarProblem("gbnf", what if rest else f"{what} at end of grammar", line, column)


def llama_vocab() -> Any:
    """The embedded model's vocabulary (a `llama_vocab_p`), loaded once, without weights."""
    return llama_cpp.llama_model_get_vocab(_vocab_model())


@cache
def _vocab_model() -> Any:
    path = resolve_model(EMBEDDED_MODEL).path
    llama_cpp.llama_backend_init()
    ensure_cpu_backend()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    with captured_llama_output():
        model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        raise RuntimeError(f"llama.cpp could not load the vocabulary of {path}")
    return model


@cache
def llguidance_tokenizer() -> llguidance.LLTokenizer:
    with captured_llama_output():
        return build_tokenizer(llama_vocab())
