"""Fitting a history into the context window: the oldest tool results give way first, the same way
every time, so a prompt's start stays the same from step to step."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    ToolRequest,
    UserMessage,
)
from localagent.turn.context import ContextOverflow, elide_observations
from localagent.turn.prompts import ELIDED_OBSERVATION as ELIDED


def size(history: Sequence[Message]) -> int:
    return sum(len(message.content) for message in history)


def within(budget: int) -> Callable[[Sequence[Message]], bool]:
    return lambda history: size(history) <= budget


def step(n: int, result: str) -> list[Message]:
    request = ToolRequest(id=f"call_{n}", name="read_file", arguments={"path": f"{n}.txt"})
    return [
        AssistantMessage(reasoning=f"Read file {n}.", tool_requests=[request]),
        ToolMessage(request_id=f"call_{n}", name="read_file", content=result),
    ]


def history_of(results: Sequence[str]) -> list[Message]:
    history: list[Message] = [SystemMessage(content="Be brief."), UserMessage(content="Summarize the files.")]
    for n, result in enumerate(results, start=1):
        history += step(n, result)
    return history


def elided(history: Sequence[Message]) -> list[int]:
    return [index for index, message in enumerate(history) if message.content == ELIDED]


def test_a_history_that_fits_is_left_as_it_is() -> None:
    history = history_of(["a" * 100, "b" * 100])
    fitted = elide_observations(history, within(size(history)))
    assert fitted == history
    assert fitted is not history


def test_the_oldest_tool_results_give_way_first_and_only_as_many_as_needed() -> None:
    history = history_of(["a" * 200, "b" * 200, "c" * 200, "d" * 200])
    # Each elision saves 200 characters less the marker's length: two are needed.
    fitted = elide_observations(history, within(size(history) - 200))
    assert elided(fitted) == [3, 5]
    assert [m.content for m in fitted if isinstance(m, ToolMessage)] == [ELIDED, ELIDED, "c" * 200, "d" * 200]
    # Only the content changes: the result still answers its call.
    assert [(m.request_id, m.name) for m in fitted if isinstance(m, ToolMessage)] == [
        (f"call_{n}", "read_file") for n in range(1, 5)
    ]
    # Nothing else is touched, and the history passed in is not changed.
    assert [m for m in fitted if not isinstance(m, ToolMessage)] == [
        m for m in history if not isinstance(m, ToolMessage)
    ]
    assert elided(history) == []


def test_a_result_elided_before_is_not_counted_again() -> None:
    history = history_of([ELIDED, "b" * 200, "c" * 200])
    fitted = elide_observations(history, within(size(history) - 100))
    assert elided(fitted) == [3, 5]


def test_the_same_history_and_limit_give_the_same_result() -> None:
    history = history_of(["x" * n for n in (80, 5, 300, 40, 120)])
    results = {tuple(elided(elide_observations(history, within(400)))) for _ in range(5)}
    assert len(results) == 1


@settings(max_examples=100, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=12),
    budget=st.integers(min_value=0, max_value=2500),
)
def test_a_longer_history_elides_what_a_shorter_one_did_and_more(lengths: list[int], budget: int) -> None:
    """Each step's prompt then starts as the last one did, so its KV cache is reused."""
    full = history_of(["r" * length for length in lengths])
    before: list[int] | None = None
    for end in range(2, len(full) + 1):
        try:
            now = elided(elide_observations(full[:end], within(budget)))
        except ContextOverflow:
            break
        if before is not None:
            assert now[: len(before)] == before  # the same results, oldest first, then maybe more
        before = now


@pytest.mark.parametrize(
    "history",
    [
        history_of(["a" * 100, "b" * 100]),
        [SystemMessage(content="Be brief."), UserMessage(content="q" * 500)],
    ],
    ids=["tool results elided", "no tool results"],
)
def test_a_history_that_does_not_fit_even_without_tool_results_is_an_overflow(history: list[Message]) -> None:
    with pytest.raises(ContextOverflow, match="does not fit the context window even without tool results"):
        elide_observations(history, within(50))
