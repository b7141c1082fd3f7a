"""llguidance on a llama.cpp vocabulary: the tokenizer (built once per model) and compiled grammars
(built once per grammar text), so a turn only copies a ready matcher."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from llguidance import LLMatcher, LLTokenizer

from localagent.backends.decoding import LlamaSession
from localagent.backends.vocabulary import build_tokenizer


@dataclass(frozen=True)
class CompiledGrammar:
    matcher: LLMatcher  # a fresh matcher, never advanced: copy it for each use
    compile_seconds: float

    def fresh(self) -> LLMatcher:
        return self.matcher.deep_copy()


class GrammarCompileError(ValueError):
    pass


class Guidance:
    def __init__(
        self, session: LlamaSession, model_path: Path | None = None, cache: Path | None = None
    ) -> None:
        """`model_path` and `cache` let the vocabulary's token bytes be kept on disk between runs."""
        started = time.perf_counter()
        self.tokenizer: LLTokenizer = build_tokenizer(session.vocab, model_path, cache)
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
