"""Prompt-lookup drafts: the guess from the context, and greedy decoding with drafts on the real
embedded model (Gemma 3 270M base) and llama.cpp engine."""

from __future__ import annotations

import llama_cpp
import numpy as np
import pytest
from llguidance import LLMatcher

from localagent.backends.decoding import LlamaSession, Sampling
from localagent.backends.guidance import Guidance
from localagent.backends.llama_context import logits_row
from localagent.backends.speculation import draft_from_context
from localagent.formats.react.grammar import build_grammar
from localagent.formats.react.parser import parse_reply
from localagent.tools import Tool


def test_a_draft_is_what_followed_the_latest_earlier_occurrence_of_the_last_tokens() -> None:
    context = [1, 2, 3, 10, 11, 5, 2, 3, 20, 21, 22, 23, 9, 2, 3]
    assert draft_from_context(context, longest_ngram=2, shortest_ngram=2, draft_tokens=3) == [20, 21, 22]


def test_the_longest_matching_tail_wins_over_a_later_shorter_one() -> None:
    context = [7, 8, 9, 40, 41, 1, 9, 50, 51, 2, 7, 8, 9]
    assert draft_from_context(context, longest_ngram=3, shortest_ngram=1, draft_tokens=2) == [40, 41]


def test_no_earlier_occurrence_gives_no_draft() -> None:
    assert draft_from_context([1, 2, 3, 4, 5, 6], longest_ngram=3, shortest_ngram=2) == []
    assert draft_from_context([5, 5], longest_ngram=3, shortest_ngram=3) == []


def test_a_draft_stops_where_the_context_does() -> None:
    assert draft_from_context([4, 5, 6, 4, 5], longest_ngram=2, shortest_ngram=2, draft_tokens=5) == [6, 4, 5]


PASSAGE = (
    "Inventory of the lock keeper's shed, checked on the first of May:\n"
    "- two windlasses, one with a cracked handle\n"
    "- a coil of hemp rope, forty metres\n"
    "- the paddle gear oil, half a tin\n"
)


def copying_prompt(session: LlamaSession) -> list[int]:
    text = f"{PASSAGE}\nThe same inventory, copied word for word:\n"
    return session.tokenize(text, bos=True)


def held_positions(session: LlamaSession) -> int:
    memory = llama_cpp.llama_get_memory(session.llama.ctx)
    return llama_cpp.llama_memory_seq_pos_max(memory, 0) + 1


# A batch row's logits differ from a lone token's in the last digits, which can tip a near tie; a
# token more than this far below the best one was not the model's greedy choice.
ROUNDING = 0.15


def assert_greedy_up_to_rounding(
    session: LlamaSession, prompt: list[int], reply: list[int], matcher: LLMatcher | None = None
) -> None:
    """Each token of `reply` is forced by the grammar or within ROUNDING of the best logit the grammar
    allows, its logits evaluated one token at a time as decoding without drafts does."""
    position = 0
    while position < len(reply):
        forced = matcher.compute_ff_tokens() if matcher is not None else []
        if forced and reply[position : position + len(forced)] == forced:
            assert matcher is not None and matcher.consume_tokens(forced)
            position += len(forced)
            continue
        session.prefill([*prompt, *reply[:position]])
        logits = logits_row(session.llama, session.n_vocab)
        if matcher is not None:
            logits[session.allowed_tokens(matcher) == 0] = -np.inf
        token = reply[position]
        assert logits[token] >= logits.max() - ROUNDING, (position, session.token_text(token))
        if matcher is not None:
            assert matcher.consume_tokens([token])
        position += 1


@pytest.mark.slow
def test_drafts_copy_a_passage_in_fewer_model_steps(llama_session: LlamaSession) -> None:
    prompt = copying_prompt(llama_session)
    plain = llama_session.generate(prompt, max_tokens=40, speculate=False)
    drafted = llama_session.generate(prompt, max_tokens=40)
    assert plain.stats.drafted_tokens == 0
    assert drafted.stats.kept_draft_tokens >= 10, drafted.stats
    # The cache holds the prompt and the reply, no rejected draft token after them.
    assert llama_session.llama.n_tokens == len(prompt) + len(drafted.tokens)
    assert held_positions(llama_session) == llama_session.llama.n_tokens
    assert_greedy_up_to_rounding(llama_session, prompt, drafted.tokens)


@pytest.mark.slow
def test_drafts_under_a_grammar_keep_the_reply_valid_and_greedy(
    llama_session: LlamaSession, default_tools: list[Tool]
) -> None:
    specs = [tool.spec for tool in default_tools]
    compiled = Guidance(llama_session).compile(build_grammar(specs, "auto").lark)
    text = f"{PASSAGE}\nQuestion: what is in the shed? Answer by quoting the inventory.\n"
    prompt = llama_session.tokenize(text, bos=True)
    drafted = llama_session.generate(prompt, max_tokens=80, matcher=compiled.fresh())
    assert drafted.stats.drafted_tokens > 0
    parse_reply(drafted.text, specs)
    assert held_positions(llama_session) == llama_session.llama.n_tokens == len(prompt) + len(drafted.tokens)
    assert_greedy_up_to_rounding(llama_session, prompt, drafted.tokens, compiled.fresh())


@pytest.mark.slow
def test_sampling_makes_no_drafts(llama_session: LlamaSession) -> None:
    prompt = copying_prompt(llama_session)
    sampled = llama_session.generate(prompt, max_tokens=30, sampling=Sampling(temperature=0.8, seed=3))
    assert sampled.stats.drafted_tokens == 0
    assert sampled.stats.generated_tokens > 0
