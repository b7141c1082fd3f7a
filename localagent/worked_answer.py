"""The worked answer: after a run that looked things up, the model works its answer out once more.

A small model in the middle of a tool loop answers with the first fact it finds: "35 euros" when
asked for four days at 35 euros a day, "12" for three workers with 12 connections each. Shown only
what its tools returned and the question, and asked to think step by step, the same model does the
arithmetic. The runner asks in a conversation of its own and keeps the reply's answer (after its
last 'Answer:' line) when it worked something out: it holds a number that neither the first answer
nor the findings hold, and that one arithmetic step from a number of the first answer (when it has
one) or the question gives. Otherwise the first answer stands: taken whatever it said, the second
answer gained as many tasks of the task suite as it lost, because asked again the model also finds
a price for a product that is not there, where its first answer said so, or a phone number for a
person whose number no file holds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from localagent import prompts
from localagent.messages import Message, SystemMessage, ToolMessage, UserMessage

_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w.]*\d)")
# At the start of a line, as asked, or right after a sentence's end ("... is 36. Answer: 36").
_ANSWER_LINE = re.compile(r"(?:^|(?<=[.!?])[ \t]+)[*_#\s]*Answer[*_]*:[*_]*[ \t]*(.*)$", re.MULTILINE)


def findings(messages: Sequence[Message]) -> list[str]:
    """What the tools returned, in order; an error ("no such file") is a finding too."""
    return [message.content for message in messages if isinstance(message, ToolMessage)]


def request(question: str, found: Sequence[str]) -> list[Message]:
    return [
        SystemMessage(content=prompts.WORKED_ANSWER_SYSTEM),
        UserMessage(content=prompts.worked_answer_request(question, found)),
    ]


def direct_request(question: str, found: Sequence[str]) -> list[Message]:
    return [
        SystemMessage(content=prompts.WORKED_ANSWER_SYSTEM),
        UserMessage(content=prompts.direct_answer_request(question, found)),
    ]


def answer_of(reply: str) -> str | None:
    """The reply's answer: after its last 'Answer:' line, or the whole reply when it is one line (as
    in the text-tag format, whose final answer is just that). Steps without an answer give None:
    their numbering ("1.", "2.") is no worked-out number."""
    answer = answer_in(reply)
    if answer is None and "\n" not in reply.strip():
        answer = reply.strip() or None
    return answer


def answer_in(reply: str) -> str | None:
    """The text after the reply's last 'Answer:' line (with what follows it), or None."""
    matches = list(_ANSWER_LINE.finditer(reply))
    if not matches:
        return None
    last = matches[-1]
    answer = (last.group(1) + reply[last.end() :]).strip().strip("*_").strip()
    return answer or None


def works_out(answer: str, draft: str, found: Sequence[str], question: str = "") -> bool:
    """Whether `answer` holds a number worked out: one that neither `draft` nor `found` holds, but that
    one sum, difference, product, quotient or percentage of a number of `draft` or the question with
    one of them all gives. A new number that no such step gives (a phone number, a quantity the model
    assumed) is made up. When the first answer holds a number, the step must start from it or the
    question, because the findings of a run hold so many numbers (table rows, codes like P-104) that
    two of them give almost anything: 44 days of lead time (4 of 9, as a percentage) where the first
    answer said 21. A first answer without a number lets the step start from any of them."""
    known = _numbers(draft).union(*(_numbers(text) for text in found))
    new = _numbers(answer) - known
    if not new:
        return False
    asked = _numbers(question) | _number_words(question)
    # A first answer with no number took no step yet ("app.toml holds the database settings").
    drafted = _numbers(draft)
    anchors = np.fromiter(drafted | asked if drafted else known | asked, dtype=float)
    operands = np.fromiter(known | asked, dtype=float)
    return all(_one_step_gives(value, anchors[:_MOST_OPERANDS], operands[:_MOST_OPERANDS]) for value in new)


_MOST_OPERANDS = 1000  # a big table's numbers: a million pairs, a fraction of a second


def _one_step_gives(value: float, anchors: np.ndarray, operands: np.ndarray) -> bool:
    first, second = anchors[:, None], operands[None, :]
    with np.errstate(all="ignore"):
        results = (
            *(first + second, first - second, second - first, first * second),
            *(first / second, second / first, 100 * first / second, 100 * second / first),
        )
    # Within 1%, or rounded: 44% for 4 of 9, 4.62 for 55.4 / 12.
    tolerance = max(0.01 * abs(value), 0.5 if value.is_integer() else 0.005)
    # A number with itself (27 + 27) is rarely what a question asks.
    itself = first == second
    return any(bool((np.abs(result - value) <= tolerance)[~itself].any()) for result in results)


def _numbers(text: str) -> set[float]:
    return {float(match.replace(",", "")) for match in _NUMBER.findall(text)}


_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)


def _number_words(text: str) -> set[float]:
    return {float(_WORDS.index(word.lower())) for word in _NUMBER_WORD.findall(text)}


# Words that carry no fact of an answer; what the question says carries none either.
_FILLER_WORDS = (
    "the a an and or of in on at to is are was were be it its this that for with by from as not no any "
    "there their which what who how many much does do did i my me you your will would can could should "
    "has have had into than then so but if one all"
)
_FILLER = frozenset(_FILLER_WORDS.split())
_WORD = re.compile(r"[^\W_](?:[\w.@/-]*\w)?")
_ABSENT = re.compile(r"\b(not|no|none|nothing|cannot|can't|couldn't|doesn't|isn't|never)\b", re.IGNORECASE)


def facts(answer: str, question: str) -> tuple[set[float], set[str]]:
    """What an answer says beyond the question: its numbers, and its words that are not filler."""
    asked = {word.lower() for word in _WORD.findall(question)}
    words = {word.lower() for word in _WORD.findall(answer)} - asked - _FILLER
    return _numbers(answer) - _numbers(question), {word for word in words if not _NUMBER.fullmatch(word)}


def agree(first: str, second: str, question: str) -> bool:
    """Whether two answers say the same: the same numbers, and words of which one holds the other's
    or that mostly overlap ("Olu" and "Olu is printing them"; not "64.00" and "256.00")."""
    (numbers, words), (other_numbers, other_words) = facts(first, question), facts(second, question)
    if numbers != other_numbers:
        return False
    if not words or not other_words or words <= other_words or other_words <= words:
        return True
    return len(words & other_words) >= 0.5 * len(words | other_words)


def says_absent(answer: str, question: str) -> bool:
    """Whether an answer says something is not there, in words the question does not use itself."""
    asked = {word.lower() for word in _ABSENT.findall(question)}
    return any(word.lower() not in asked for word in _ABSENT.findall(answer))


def outvoted(draft: str, worked: str, direct: str, question: str) -> bool:
    """Whether the worked answer replaces the first one by two votes to one: a direct answer from the
    same findings says what the worked answer says and not what the first one says. A first answer
    that something is not there stands: asked again, the model finds a near fact instead."""
    return (
        agree(direct, worked, question)
        and not agree(direct, draft, question)
        and not says_absent(draft, question)
    )
