"""The decode loop stops a reply that keeps repeating itself, and the model is told so."""

from __future__ import annotations

import pytest

from localagent.backends.decoding import is_looping
from localagent.backends.reply import Reply
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import CancelToken
from localagent.core.messages import SystemMessage, UserMessage
from localagent.errors import RecoverableTurnError
from localagent.formats.react.format import ReactFormat
from localagent.turn import prompts


@pytest.mark.parametrize("period", [1, 2, 5, 16])
def test_a_tail_of_one_repeated_pattern_is_a_loop(period: int) -> None:
    pattern = list(range(100, 100 + period))
    tokens = [7, 8, 9] + pattern * (48 // period + 1)
    assert is_looping(tokens)


@pytest.mark.parametrize(
    "tokens",
    [
        list(range(200)),  # no repetition
        [1, 2] * 23,  # repeated, but shorter than the span
        list(range(17)) * 4,  # a period longer than 16
        [5] * 47 + [6],  # the repetition is broken at the end
    ],
)
def test_other_text_is_not_a_loop(tokens: list[int]) -> None:
    assert not is_looping(tokens)


def test_only_tokens_since_the_line_was_ended_count() -> None:
    # After the decoder ends a looping line, the loop must show again in full before it counts.
    looped = [5] * 60
    assert is_looping(looped)
    tokens = [*looped, 10, *[5] * 47]
    assert not is_looping(tokens, since=61)
    assert is_looping([*tokens, 5], since=61)


class LoopingGenerator:
    constrained = True
    max_tokens = 64

    def __init__(
        self, text: str = 'Thought: add\nAction: calculator\nAction Input: {"expression": "1 / 1 / 1 / 1'
    ):
        self.text = text

    def generate(self, prompt, grammar, cancel, on_text, stops=()) -> Reply:
        return Reply(self.text, "loop")


@pytest.mark.parametrize("text", [LoopingGenerator().text, "Thought: done\nFinal Answer: 1 / 1 / 1 / 1 / 1"])
def test_a_looping_reply_gets_its_own_feedback_even_in_an_answer(text: str) -> None:
    turn = TextTurn(LoopingGenerator(text), ReactFormat(), "loops")
    messages = [SystemMessage(content="Be brief."), UserMessage(content="What is 1 / 1?")]
    with pytest.raises(RecoverableTurnError) as caught:
        turn(messages, [], "auto", CancelToken())
    assert (caught.value.problem, caught.value.feedback) == ("cut_off", prompts.LOOPING)
