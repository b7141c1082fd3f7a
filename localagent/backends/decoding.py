"""Decoding on a loaded llama.cpp model: prompt prefill with KV-cache prefix reuse, and three ways to
generate: an own loop with llguidance masks (forced tokens fast-forwarded), the same loop without a
grammar, and llama-cpp-python's own `create_completion` with its GBNF grammar sampler.
"""

from __future__ import annotations

import codecs
import ctypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import llama_cpp
import numpy as np
from llguidance import LLMatcher
from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

from localagent.backends.llama_context import evaluate, logits_row
from localagent.backends.speculation import DraftedCache, draft_from_context
from localagent.core.cancel import CancelToken
from localagent.errors import BackendError

# loop: the reply kept repeating the same few tokens, and was stopped before it reached the limit.
PREFILL_CHUNK = 128  # prompt tokens evaluated in one llama.cpp call
StopReason = Literal["end", "length", "loop", "cancelled"]
TextSink = Callable[[str], None]
# Nucleus sampling looks at this many of the most likely tokens; the rest of a 262k vocabulary
# holds a negligible share of the probability and sorting it would cost more than the model step.
_NUCLEUS_CANDIDATES = 256


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError("temperature must be 0 or more")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")


@dataclass
class DecodeStats:
    prompt_tokens: int = 0
    evaluated_prompt_tokens: int = 0
    generated_tokens: int = 0
    fast_forwarded_tokens: int = 0
    mask_seconds: float = 0.0
    mask_times: list[float] = field(default_factory=list)
    prefill_seconds: float = 0.0
    generate_seconds: float = 0.0
    first_token_seconds: float | None = None
    drafted_tokens: int = 0
    kept_draft_tokens: int = 0
    token_seconds: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class KvSnapshot:
    """What the KV cache held for `tokens`, as llama.cpp saves one sequence's state."""

    tokens: tuple[int, ...]
    data: bytes


@dataclass
class Generation:
    text: str
    tokens: list[int]
    stop: StopReason
    stats: DecodeStats


class LlamaSession:
    """One loaded model and the token sequence its KV cache holds."""

    def __init__(self, llama: llama_cpp.Llama) -> None:
        self.llama = llama
        self.vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self.n_vocab = llama.n_vocab()
        self.n_ctx = llama.n_ctx()
        self._pieces: dict[int, bytes] = {}
        self._piece_buffer = ctypes.create_string_buffer(512)
        self._bitmask = allocate_token_bitmask(1, self.n_vocab)
        # The snapshots a new conversation starts from (its shared starts), kept for the next one.
        self.start_snapshots: list[KvSnapshot] = []

    def tokenize(self, text: str, *, bos: bool, special: bool = False) -> list[int]:
        """Tokens for text; `special` reads markers like <start_of_turn> as control tokens."""
        return self.llama.tokenize(text.encode("utf-8"), add_bos=bos, special=special)

    def token_text(self, token: int) -> str:
        return llama_cpp.llama_vocab_get_text(self.vocab, token).decode("utf-8", errors="replace")

    def piece(self, token: int) -> bytes:
        cached = self._pieces.get(token)
        if cached is None:
            size = llama_cpp.llama_token_to_piece(self.vocab, token, self._piece_buffer, 512, 0, False)
            cached = bytes(self._piece_buffer[: max(size, 0)])
            self._pieces[token] = cached
        return cached

    def is_end_of_generation(self, token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    def cached_prefix(self, tokens: Sequence[int]) -> int:
        held = self.llama.input_ids[: self.llama.n_tokens]
        limit = min(len(held), len(tokens))
        if limit == 0:
            return 0
        same = np.asarray(tokens[:limit], dtype=held.dtype) == held[:limit]
        return limit if same.all() else int(np.argmin(same))

    def snapshot(self) -> KvSnapshot:
        size = llama_cpp.llama_state_seq_get_size(self.llama.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(self.llama.ctx, buffer, size, 0)
        if written == 0:
            raise BackendError("llama.cpp could not save the KV cache's state")
        return KvSnapshot(
            tuple(int(t) for t in self.llama.input_ids[: self.llama.n_tokens]), bytes(buffer)[:written]
        )

    def load(self, snapshot: KvSnapshot) -> bool:
        """Make an empty KV cache hold the snapshot; False (and an empty cache) when llama.cpp refuses it."""
        llama, data = self.llama, snapshot.data
        llama.n_tokens = 0
        llama._ctx.kv_cache_clear()
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(llama.ctx, buffer, len(data), 0) != len(data):
            llama._ctx.kv_cache_clear()
            return False
        llama.input_ids[: len(snapshot.tokens)] = snapshot.tokens
        llama.n_tokens = len(snapshot.tokens)
        return True

    def evaluate_alone(self, tokens: Sequence[int], cancel: CancelToken | None = None) -> KvSnapshot:
        """The snapshot of `tokens` evaluated from an empty KV cache, which then holds it as loaded.

        A cache that held other tokens before would split the batches otherwise, and llama.cpp's
        numbers depend on the split. Loading the snapshot back matters for a model with sliding-window
        layers: it keeps a loaded prefix in other cells than an evaluated one, which changes what follows.
        """
        self.llama.n_tokens = 0
        self.llama._ctx.kv_cache_clear()
        return self.evaluate_on_held(tokens, cancel)

    def evaluate_on_held(self, tokens: Sequence[int], cancel: CancelToken | None = None) -> KvSnapshot:
        """The snapshot of `tokens` evaluated on what the KV cache holds, a loaded snapshot of their
        start, which then holds it as loaded; the same start always gives the same snapshot."""
        self.prefill(tokens, cancel)
        snapshot = self.snapshot()
        if not self.load(snapshot):
            raise BackendError("llama.cpp could not load the KV cache's state it had just saved")
        return snapshot

    def prefill(self, tokens: Sequence[int], cancel: CancelToken | None = None) -> int:
        """Make the KV cache hold `tokens`, the last one's logits ready; return how many were evaluated.
        Raises Cancelled when `cancel` is set before it is done."""
        evaluated = self._prefill_all_but_last(tokens, cancel)
        if cancel is not None:
            cancel.raise_if_cancelled()
        evaluate(self.llama, tokens[-1:])
        return evaluated

    def _prefill_all_but_last(self, tokens: Sequence[int], cancel: CancelToken | None = None) -> int:
        """Make the KV cache hold all of `tokens` but the last; return how many `prefill` evaluates.

        The last token is always evaluated in a batch of its own (with the tokens a grammar forces
        right after it), so its logits come from a live decode and do not depend on how the rest was
        batched: the same prompt and seed give the same output.
        """
        if len(tokens) >= self.n_ctx:
            raise BackendError(f"the prompt has {len(tokens)} tokens; the context window holds {self.n_ctx}")
        reuse = min(self.cached_prefix(tokens), len(tokens) - 1)
        self.llama.n_tokens = reuse
        # In chunks, so Ctrl-C (which sets `cancel` between them) stops a long prompt within a second.
        for start in range(reuse, len(tokens) - 1, PREFILL_CHUNK):
            if cancel is not None and cancel.cancelled:
                break
            evaluate(self.llama, tokens[start : min(start + PREFILL_CHUNK, len(tokens) - 1)])
        return len(tokens) - reuse

    def generate(
        self,
        prompt: Sequence[int],
        *,
        max_tokens: int,
        matcher: LLMatcher | Callable[[], LLMatcher] | None = None,
        sampling: Sampling = Sampling(),
        cancel: CancelToken | None = None,
        on_text: TextSink | None = None,
        fast_forward: bool = True,
        stop: Sequence[str] = (),
        speculate: bool = True,
    ) -> Generation:
        """The own decode loop: llguidance masks when `matcher` is given, else unconstrained.

        Greedy decoding with `speculate` checks drafts from the context in batches (speculation.py):
        the same reply in fewer model steps, but for a near tie that llama.cpp's rounding of a batch
        row tips the other way.

        Generation also ends where the text first shows one of the `stop` strings; the text is cut
        before it (its tokens stay in the KV cache, which compares token by token anyway).

        A callable `matcher` is called once the prompt (all but its last token) is evaluated, so
        whatever it waits for (the tokenizer, built in the background on first use) overlaps with it.
        """
        stats = DecodeStats(prompt_tokens=len(prompt))
        started = time.perf_counter()
        stats.evaluated_prompt_tokens = self._prefill_all_but_last(prompt, cancel)
        if cancel is not None and cancel.cancelled:
            return Generation("", [], "cancelled", stats)
        if callable(matcher):
            matcher = matcher()
        rng = np.random.default_rng(sampling.seed)
        output = _TextAccumulator(self, on_text)
        reason: StopReason = "length"
        room = min(max_tokens, self.n_ctx - len(prompt) - 1)
        loop_checked_from, escapes_left = 0, _LOOP_ESCAPES
        # Tokens the KV cache does not hold yet. The tokens the grammar forces are evaluated in one
        # batch with the token before them (the prompt's last, or a sampled one): one model step
        # instead of two. The reply's first choice can be made once the prompt's batch is evaluated.
        pending = list(prompt[-1:])
        if matcher is not None and fast_forward:
            _fast_forward(matcher, pending, output, stats, room)
        evaluate(self.llama, pending)
        pending.clear()
        drafts = DraftedCache(self.llama, self.n_vocab) if speculate and sampling.temperature <= 0 else None

        prompt_array = np.asarray(prompt, dtype=np.int64)

        def draft() -> list[int]:
            context = np.concatenate((prompt_array, np.asarray(output.tokens, dtype=np.int64)))
            guess = draft_from_context(context)[: room - len(output.tokens)]
            return guess[: matcher.validate_tokens(guess)] if matcher is not None and guess else guess

        stats.prefill_seconds = time.perf_counter() - started
        while len(output.tokens) < room:
            step_started = time.perf_counter()
            if cancel is not None and cancel.cancelled:
                reason = "cancelled"
                break
            if matcher is not None and matcher.is_stopped():
                reason = "end"
                break
            if matcher is not None and fast_forward and _fast_forward(matcher, pending, output, stats, room):
                continue
            logits = self._next_logits(pending, drafts, draft)
            if matcher is not None:
                mask_started = time.perf_counter()
                logits[self.allowed_tokens(matcher) == 0] = -np.inf
                stats.mask_times.append(time.perf_counter() - mask_started)
                stats.mask_seconds += stats.mask_times[-1]
            token = sample_token(logits, sampling, rng)
            if stats.first_token_seconds is None:
                stats.first_token_seconds = time.perf_counter() - started
            if self.is_end_of_generation(token):  # the reply is over; the end token is never evaluated
                reason = "end"
                break
            if matcher is not None:
                _consume(matcher, [token])
            pending.append(token)
            output.add([token])
            stats.token_seconds.append(time.perf_counter() - step_started)
            if stop and output.cut_at(stop):
                reason = "end"
                break
            if is_looping(output.tokens, since=loop_checked_from):
                if escapes_left and matcher is not None and self._end_line(matcher, output, pending):
                    escapes_left -= 1
                    loop_checked_from = len(output.tokens)
                    continue
                reason = "loop"
                break
        if drafts is not None:
            drafts.settle(pending)
            drafts.drop()
            stats.drafted_tokens, stats.kept_draft_tokens = drafts.drafted, drafts.kept
        if pending:  # the KV cache holds the whole reply, for the next step's prefix reuse
            evaluate(self.llama, pending)
        stats.generated_tokens = len(output.tokens)
        stats.generate_seconds = time.perf_counter() - started - stats.prefill_seconds
        return Generation(output.finish(), output.tokens, reason, stats)

    def allowed_tokens(self, matcher: LLMatcher) -> np.ndarray:
        """1 for each token of the vocabulary the grammar allows next, 0 for the others."""
        fill_next_token_bitmask(matcher, self._bitmask, 0)
        return np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")[: self.n_vocab]

    def _next_logits(
        self, pending: list[int], drafts: DraftedCache | None, draft: Callable[[], list[int]]
    ) -> np.ndarray:
        """The logits for the reply's next token, once the cache holds `pending` (then emptied)."""
        if drafts is not None:
            drafts.settle(pending)
            ready = drafts.ready_logits()
            if ready is not None:
                return ready
            guess = draft() if pending else []
            if guess and len(pending) + len(guess) <= self.llama.n_batch:
                return drafts.evaluate(pending, guess)
        if pending:
            evaluate(self.llama, pending)
            pending.clear()
        return logits_row(self.llama, self.n_vocab)

    def _end_line(self, matcher: LLMatcher, output: _TextAccumulator, pending: list[int]) -> bool:
        """End a looping line where the grammar lets it end: a runaway thought ("1.6000000…") then
        moves on to its action instead of being cut off. False when the grammar wants more first."""
        newline = self.tokenize("\n", bos=False)
        if len(newline) != 1 or matcher.validate_tokens(newline) != 1:
            return False
        _consume(matcher, newline)
        pending.extend(newline)
        output.add(newline)
        return True

    def generate_stock(
        self,
        prompt: Sequence[int],
        *,
        max_tokens: int,
        gbnf: str | None = None,
        sampling: Sampling = Sampling(),
        cancel: CancelToken | None = None,
        on_text: TextSink | None = None,
    ) -> Generation:
        """llama-cpp-python's own path: `create_completion`, with its GBNF sampler when `gbnf` is given."""
        stats = DecodeStats(prompt_tokens=len(prompt))
        reuse = min(self.cached_prefix(prompt), len(prompt) - 1)
        stats.evaluated_prompt_tokens = len(prompt) - reuse
        grammar = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False) if gbnf else None
        started = time.perf_counter()
        pieces: list[str] = []
        stop: StopReason = "end"
        last = started
        try:
            stream = self.llama.create_completion(
                list(prompt),
                max_tokens=max_tokens,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=0,
                min_p=0.0,
                repeat_penalty=1.0,
                seed=sampling.seed,
                grammar=grammar,
                stream=True,
            )
            for chunk in stream:
                now = time.perf_counter()
                if stats.first_token_seconds is None:
                    stats.first_token_seconds = now - started
                stats.token_seconds.append(now - last)
                last = now
                choice = chunk["choices"][0]
                pieces.append(choice["text"])
                stats.generated_tokens += 1
                if on_text and choice["text"]:
                    on_text(choice["text"])
                if choice.get("finish_reason") == "length":
                    stop = "length"
                if cancel is not None and cancel.cancelled:
                    stop = "cancelled"
                    stream.close()
                    break
        except RuntimeError as error:
            raise BackendError(f"llama.cpp failed while generating: {error}") from None
        stats.generate_seconds = time.perf_counter() - started
        if stats.token_seconds:
            # The first interval holds the prompt's evaluation; keep it out of the per-token figures.
            stats.prefill_seconds = stats.token_seconds.pop(0)
        return Generation("".join(pieces), [], stop, stats)


class _TextAccumulator:
    """Generated tokens and their text, decoded incrementally so multi-byte characters stay whole."""

    def __init__(self, session: LlamaSession, on_text: TextSink | None) -> None:
        self._session = session
        self._on_text = on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self.tokens: list[int] = []

    def add(self, tokens: Sequence[int]) -> None:
        self.tokens.extend(tokens)
        text = self._decoder.decode(b"".join(self._session.piece(t) for t in tokens))
        if text:
            self._parts.append(text)
            if self._on_text:
                self._on_text(text)

    def cut_at(self, stops: Sequence[str]) -> bool:
        """Cut the text before the first stop string it shows; True when one was found."""
        text = "".join(self._parts)
        found = [index for index in (text.find(stop) for stop in stops) if index >= 0]
        if not found:
            return False
        self._parts = [text[: min(found)]]
        return True

    def finish(self) -> str:
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._parts.append(tail)
        return "".join(self._parts)


# How many times one generation may break a loop by ending its line before it is stopped.
_LOOP_ESCAPES = 2


def is_looping(tokens: Sequence[int], span: int = 48, longest_period: int = 16, since: int = 0) -> bool:
    """Whether the last `span` tokens, all at or after index `since`, are one pattern of at most
    `longest_period` tokens, repeated.

    Small models fall into such loops under greedy decoding ("/ 1000 / 1000 / 1000 …"); left alone
    they run to the token limit, which on a laptop costs many seconds for nothing.
    """
    if len(tokens) - since < span:
        return False
    tail = tokens[-span:]
    return any(
        all(tail[index] == tail[index - period] for index in range(period, span))
        for period in range(1, longest_period + 1)
    )


def _fast_forward(
    matcher: LLMatcher, pending: list[int], output: _TextAccumulator, stats: DecodeStats, room: int
) -> bool:
    """Add the tokens the grammar forces now to the reply and to `pending`; True when the reply needs
    no model step after them (the grammar is done, or the reply is at its limit)."""
    forced = matcher.compute_ff_tokens()[: room - len(output.tokens)]
    if not forced:
        return False
    _consume(matcher, forced)
    pending.extend(forced)
    output.add(forced)
    stats.fast_forwarded_tokens += len(forced)
    return len(output.tokens) >= room or matcher.is_stopped()


def _consume(matcher: LLMatcher, tokens: Sequence[int]) -> None:
    if not matcher.consume_tokens(list(tokens)):
        raise BackendError(f"the grammar matcher rejected a token: {matcher.get_error()}")


def sample_token(logits: np.ndarray, sampling: Sampling, rng: np.random.Generator) -> int:
    if sampling.temperature <= 0:
        return int(np.argmax(logits))
    finite = np.flatnonzero(np.isfinite(logits))
    if finite.size == 0:
        raise BackendError("no token is allowed at this point")
    if finite.size > _NUCLEUS_CANDIDATES:
        top = np.argpartition(logits[finite], -_NUCLEUS_CANDIDATES)[-_NUCLEUS_CANDIDATES:]
        finite = finite[top]
    kept = logits[finite].astype(np.float64)
    # The largest logit is subtracted before dividing: a tiny temperature then sends the others to
    # -inf (probability 0) instead of every logit to inf (NaN).
    with np.errstate(over="ignore"):
        scaled = (kept - kept.max()) / sampling.temperature
    probabilities = np.exp(scaled)
    order = np.argsort(-probabilities)
    probabilities = probabilities[order] / probabilities.sum()
    candidates = finite[order]
    if sampling.top_p < 1.0:
        keep = int(np.searchsorted(np.cumsum(probabilities), sampling.top_p)) + 1
        candidates, probabilities = candidates[:keep], probabilities[:keep] / probabilities[:keep].sum()
    return int(rng.choice(candidates, p=probabilities))
