"""llguidance on a llama.cpp vocabulary: the tokenizer (built once per model) and compiled grammars
(built once per grammar text), so a turn only copies a ready matcher."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import llguidance
import llguidance.llamacpp
from llguidance import LLMatcher, LLTokenizer

from localagent.backends.decoding import LlamaSession


@dataclass(frozen=True)
class CompiledGrammar:
    matcher: LLMatcher  # a fresh matcher, never advanced: copy it for each use
    compile_seconds: float

    def fresh(self) -> LLMatcher:
        return self.matcher.deep_copy()


class GrammarCompileError(ValueError):
    pass


class Guidance:
    def __init__(self, session: LlamaSession) -> None:
        started = time.perf_counter()
        with warnings.catch_warnings():
            # llguidance calls a llama-cpp-python function that warns once per vocabulary entry.
            warnings.simplefilter("ignore", DeprecationWarning)
            # Every end-of-generation token counts as EOS: a chat model ends its turn with its own.
            self.tokenizer: LLTokenizer = llguidance.llamacpp.lltokenizer_from_vocab(
                session.vocab, eos_token=session.end_of_generation_tokens()
            )
        self.tokenizer_seconds = time.perf_counter() - started
        self._compiled: dict[str, CompiledGrammar] = {}

    def compile(self, lark: str) -> CompiledGrammar:
        """The matcher for a Lark grammar; raises GrammarCompileError with llguidance's message."""
        cached = self._compiled.get(lark)
        if cached is not None:
            return cached
        started = time.perf_counter()
        grammar = LLMatcher.grammar_from_lark(lark)
        matcher = LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise GrammarCompileError(matcher.get_error())
        compiled = CompiledGrammar(matcher, time.perf_counter() - started)
        self._compiled[lark] = compiled
        return compiled
