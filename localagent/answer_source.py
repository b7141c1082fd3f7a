"""The source check: whether the values an answer gives come from lines about what was asked.

Asked for something no file holds, a small model answers with the nearest value it read: "The
ceramic teapot costs $27.00" from the cutting board's row, Marta's email from Rafael's. Asked a
two-step question, it takes the phone number of the wrong person. Such a value sits only in lines
that share no word with the question, nor with a line that does (the meeting note "Olu will print
the flyers" links the question's flyers to Olu's row in the contacts). The check is plain text
matching: no model turn. A value a calculator gave, or one the question holds, is left alone, and
so is a superlative question's ("Which product sold the most?" picks its row by the numbers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Lines as the file tools show them (tools/files.py, tools/found_lines.py): under a read's header
# "PATH, lines A-B of N:" as "N: text", and in search results as "PATH:N: text".
_READ_HEADER = re.compile(r"^(\S+), lines \d+-\d+ of \d+:$")
_READ_LINE = re.compile(r"^(\d+): (.*)$")
_FOUND_LINE = re.compile(r"^(\S+?):(\d+): (.*)$")
# An email, or a number not inside a name such as P-105 or B2.14.
_VALUE = re.compile(r"[\w.+-]+@[\w-]+(?:\.\w+)+|(?<![\w-])\d+(?:[.:/-]\d+)*")
# A question that picks its row by comparing values names no word of that row.
_SUPERLATIVE = re.compile(
    r"\b(most|least|fewest|highest|lowest|largest|smallest|biggest|greatest|cheapest|best|worst|top|"
    r"maximum|minimum|first|last|latest|earliest|oldest|newest|longest|shortest)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_DECIMAL = re.compile(r"\d+(?:\.\d+)?")
# Words too common to tie a line to a question.
_COMMON_WORDS = (
    "the and for are was were been from with not any all this that these those there here what which "
    "who whom whose when where why how much many does did our your you its into about can could would "
    "should will shall has have had say says tell give name show find value number file files list"
)
_COMMON = frozenset(_COMMON_WORDS.split())


@dataclass(frozen=True)
class FileLine:
    path: str
    number: int
    text: str

    def words(self) -> set[str]:
        return _words(self.text)


@dataclass(frozen=True)
class UnrelatedValue:
    value: str
    line: FileLine


def unrelated_values(question: str, findings: Sequence[tuple[str, str]], answer: str) -> list[UnrelatedValue]:
    """The values of `answer` that the files hold only in lines unrelated to `question`.

    `findings` are the run's tool results as (tool name, output); a calculator's output holds no
    file lines but vouches for the numbers it gave. A superlative question has none."""
    if _SUPERLATIVE.search(question):
        return []
    lines = [line for _, output in findings for line in file_lines(output)]
    vouched = {
        _normal(value) for name, output in findings if name == "calculator" for value in _values(output)
    }
    vouched |= {_normal(value) for value in _values(question)}
    asked = _words(question)
    related = [line for line in lines if line.words() & asked]
    near = asked.union(*(line.words() for line in related))
    unrelated: list[UnrelatedValue] = []
    for value in _values(answer):
        normal = _normal(value)
        holders = [line for line in lines if normal in {_normal(held) for held in _values(line.text)}]
        if normal in vouched or not holders or any(line.words() & near for line in holders):
            continue
        unrelated.append(UnrelatedValue(value, holders[0]))
    return unrelated


def better_sourced(question: str, findings: Sequence[tuple[str, str]], answer: str, draft: str) -> bool:
    """Whether `answer` gives no unrelated value where `draft` does."""
    return bool(unrelated_values(question, findings, draft)) and not unrelated_values(
        question, findings, answer
    )


def file_lines(output: str) -> list[FileLine]:
    """The file lines a read or a search shows in its output."""
    lines: list[FileLine] = []
    path: str | None = None
    for row in output.splitlines():
        if header := _READ_HEADER.match(row):
            path = header.group(1)
        elif path is not None and (read := _READ_LINE.match(row)):
            lines.append(FileLine(path, int(read.group(1)), read.group(2)))
        elif found := _FOUND_LINE.match(row):
            lines.append(FileLine(found.group(1), int(found.group(2)), found.group(3)))
        else:
            path = None
    return lines


def _values(text: str) -> Iterable[str]:
    """The values in `text`, leaving out single digits: too common to say where they came from."""
    return (value for value in _VALUE.findall(text) if len(value) > 1)


def _normal(value: str) -> str:
    """One spelling per value: 27.00 and 27 alike, emails in lower case."""
    if _DECIMAL.fullmatch(value):
        return repr(float(value))
    return value.lower()


def _words(text: str) -> set[str]:
    words = (word for word in _WORD.findall(text.lower()) if len(word) > 2 and word not in _COMMON)
    return {_stem(word) for word in words} - _COMMON


def _stem(word: str) -> str:
    word = word.removesuffix("'s")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
