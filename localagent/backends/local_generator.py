"""Generating a reply on a local GGUF model: the prompt's tokens with KV-cache reuse, then decoding
under the reply's grammar.

The normal path is the own decode loop with llguidance masks. Where llguidance cannot compile a
grammar it falls back to llama.cpp's GBNF sampler, and says so once.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from localagent.backends.decoding import Generation, KvSnapshot, LlamaSession, Sampling
from localagent.backends.guidance import GrammarCompileError, Guidance
from localagent.backends.prompt_cache import PromptCache
from localagent.backends.reply import Reply
from localagent.backends.token_reuse import TokenReuse
from localagent.core.cancel import CancelToken
from localagent.core.messages import Usage
from localagent.core.paths import cache_dir
from localagent.formats.base import Prompt, ReplyGrammar, TextSink

Decoder = Literal["llguidance", "gbnf", "none"]
Notice = Callable[[str], None]


@dataclass(frozen=True)
class LocalSettings:
    max_tokens: int = 384
    sampling: Sampling = field(default_factory=Sampling)
    decoder: Decoder = "llguidance"
    fast_forward: bool = True
    # Keep the instructions' KV snapshot and the vocabulary's bytes on disk, for a fast next start.
    disk_cache: bool = True


@dataclass
class StepRecord:
    """What one turn cost; the benchmark and the KV-reuse tests read these."""

    prompt_tokens: int
    evaluated_prompt_tokens: int
    new_prompt_tokens: int
    generation: Generation
    decoder: Decoder

    @property
    def usage(self) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.generation.stats.generated_tokens,
            cached_prompt_tokens=self.prompt_tokens - self.evaluated_prompt_tokens,
        )


class LocalGenerator:
    def __init__(
        self,
        session: LlamaSession,
        model_path: Path,
        settings: LocalSettings | None = None,
        notice: Notice | None = None,
    ) -> None:
        self.session = session
        self.settings = settings or LocalSettings()
        self.notice = notice or (lambda text: None)
        self.constrained = self.settings.decoder != "none"
        self.max_tokens = self.settings.max_tokens
        disk = self.settings.disk_cache
        self.prompt_cache = PromptCache(cache_dir("prompt-cache"), model_path) if disk else None
        self._reuse = TokenReuse(session)
        self._guidance: Guidance | None = None
        self._guidance_pool: ThreadPoolExecutor | None = None
        self._guidance_future: Future[Guidance] | None = None
        if self.settings.decoder == "llguidance":
            # Building the tokenizer takes about a second; it overlaps with the first prompt's evaluation.
            self._guidance_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llguidance-tokenizer")
            vocab_cache = cache_dir("vocab") if disk else None
            self._guidance_future = self._guidance_pool.submit(Guidance, session, model_path, vocab_cache)
        self._fell_back: set[str] = set()
        self.steps: list[StepRecord] = []

    def with_settings(self, settings: LocalSettings) -> LocalGenerator:
        """The same model, KV cache, grammar engine and step records, generating with other settings
        (a server's per-request options). Use one of them at a time: they share the model."""
        view = copy.copy(self)
        if settings.decoder != self.settings.decoder:
            raise ValueError("a view of a generator keeps its decoder")
        view.settings, view.max_tokens = settings, settings.max_tokens
        return view

    @property
    def context_budget(self) -> int:
        """Prompt tokens that leave room for a whole reply."""
        return self.session.n_ctx - self.settings.max_tokens

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self._reuse.tokens_for(prompt).tokens)

    @property
    def guidance(self) -> Guidance:
        if self._guidance is None:
            future = self._guidance_future
            self._guidance = future.result() if future else Guidance(self.session)
            if self._guidance_pool is not None:
                self._guidance_pool.shutdown(wait=False)
        return self._guidance

    def wait_until_ready(self) -> None:
        """Wait for the grammar engine's tokenizer, which is otherwise built beside the first prompt:
        an interactive session waits for it up front, so Ctrl-C on its first question is not held up."""
        if self.settings.decoder == "llguidance":
            _ = self.guidance

    def _guidance_for(self, cancel: CancelToken) -> Guidance:
        """The tokenizer, waiting for its build (seconds on a large vocabulary) only until cancelled."""
        future = self._guidance_future
        while self._guidance is None and future is not None and not future.done():
            cancel.raise_if_cancelled()
            with contextlib.suppress(TimeoutError):
                future.result(timeout=0.1)
        return self.guidance

    def generate(
        self,
        prompt: Prompt,
        grammar: ReplyGrammar | None,
        cancel: CancelToken,
        on_text: TextSink,
        stops: Sequence[str] = (),
    ) -> Reply:
        prompt_tokens = self._reuse.tokens_for(prompt)
        warmed = self._start_conversation(prompt_tokens.tokens, prompt_tokens.shared_ends, cancel)
        generation, decoder = self._generate(prompt_tokens.tokens, grammar, cancel, on_text, stops)
        # The KV cache holds the prompt and, from the own loop (not GBNF's), exactly the reply's tokens.
        self._reuse.hold(prompt.text, prompt_tokens.tokens, generation.tokens)
        evaluated = warmed + generation.stats.evaluated_prompt_tokens
        step = StepRecord(len(prompt_tokens.tokens), evaluated, prompt_tokens.new, generation, decoder)
        self.steps.append(step)
        return Reply(generation.text, generation.stop, step.usage)

    def _generate(
        self,
        prompt: list[int],
        grammar: ReplyGrammar | None,
        cancel: CancelToken,
        on_text: TextSink,
        stops: Sequence[str],
    ) -> tuple[Generation, Decoder]:
        settings = self.settings
        common = {"max_tokens": settings.max_tokens, "sampling": settings.sampling, "cancel": cancel}
        if grammar is None:
            return self.session.generate(prompt, on_text=on_text, stop=stops, **common), "none"
        if settings.decoder == "llguidance" and grammar.lark not in self._fell_back:
            try:
                generation = self.session.generate(
                    prompt,
                    matcher=lambda: self._guidance_for(cancel).compile(grammar.lark).fresh(),
                    on_text=on_text,
                    fast_forward=settings.fast_forward,
                    **common,
                )
            except GrammarCompileError as error:
                self._fell_back.add(grammar.lark)
                self.notice(
                    f"llguidance cannot compile this grammar ({error}); using llama.cpp's GBNF sampler"
                )
            else:
                return generation, "llguidance"
        return self.session.generate_stock(prompt, gbnf=grammar.gbnf, on_text=on_text, **common), "gbnf"

    def _start_conversation(self, tokens: list[int], ends: list[int], cancel: CancelToken) -> int:
        """Start from the prompt's shared starts alone, loaded from their snapshots, whatever the KV
        cache held before: a conversation's replies then do not depend on the ones before it, in this
        process or in the one that saved the snapshots. The longest start with a snapshot in memory
        or on disk is loaded; each longer one is evaluated on it, and its snapshot saved.

        Returns how many tokens this evaluated.
        """
        if not ends:  # a later step, whose start the KV cache holds, or a prompt that shares none
            return 0
        starts = [tuple(tokens[:end]) for end in ends]
        session, cache = self.session, self.prompt_cache
        kept = {snapshot.tokens: snapshot for snapshot in session.start_snapshots}
        loaded: KvSnapshot | None = None
        held = len(starts)  # the starts up to the longest one with a snapshot that loads
        while held and loaded is None:
            start = starts[held - 1]
            snapshot = kept.get(start)
            if cache is not None:
                snapshot = cache.mark_used(session, snapshot) if snapshot else cache.read(session, start)
            if snapshot is not None and session.load(snapshot):
                loaded = snapshot
            else:
                held -= 1
        chain = [*(kept[start] for start in starts[: held - 1] if start in kept), loaded] if loaded else []
        evaluated = 0
        for start in starts[held:]:
            evaluate = session.evaluate_on_held if loaded else session.evaluate_alone
            snapshot = evaluate(start, cancel)
            evaluated += len(start) - (len(loaded.tokens) if loaded else 0)
            if cache is not None:
                cache.write(session, snapshot)
            chain.append(snapshot)
            loaded = snapshot
        session.start_snapshots = chain
        return evaluated
