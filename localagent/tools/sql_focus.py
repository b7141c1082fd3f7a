"""What a question fixes about the query that answers it, read from its words and the tables' values.

Two things a question says outright, and a small model leaves out of its query all the same:
- the rows it is about: a value it names that a table holds (a client, a person, an ID, a month of a
  date column) is a condition the query over that table must have;
- the computation: "average" is AVG, "percentage" a share times 100.0, "most" or "largest" the top
  row or MAX, "least" or "cheapest" the bottom row or MIN.
The model still writes the query; these only narrow what it may write. Whether to keep or exclude
the rows named (`=` or `!=`) is the model's choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from localagent.tools.calendar_words import MONTHS
from localagent.tools.table_catalog import DataTable

Computation = Literal["AVG", "PERCENT", "MAX", "MIN"]
CUES: tuple[tuple[Computation, re.Pattern[str]], ...] = (
    ("PERCENT", re.compile(r"\b(percent(age)?|per ?cent|share|proportion|what fraction)\b|%", re.IGNORECASE)),
    ("AVG", re.compile(r"\b(average|mean)\b", re.IGNORECASE)),
    (
        "MAX",
        re.compile(
            r"\b(most|largest|biggest|highest|maximum|longest|top|most expensive|best[- ]selling)\b",
            re.IGNORECASE,
        ),
    ),
    ("MIN", re.compile(r"\b(least|smallest|lowest|minimum|shortest|cheapest|fewest)\b", re.IGNORECASE)),
)
# Months are capitalised: "if I may ask" names no month.
_MONTH_NAMES = "|".join(month.capitalize() for month in MONTHS)
_MONTH = re.compile(rf"\b({_MONTH_NAMES})\b")
_DAY_MONTH = re.compile(
    rf"\b\d{{1,2}}(st|nd|rd|th)?\s+(of\s+)?({_MONTH_NAMES})\b"
    rf"|\b({_MONTH_NAMES})\s+\d{{1,2}}(st|nd|rd|th)?\b(?!\d)",
)
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
# Words too common to name a thing by: a question's "what" is not the value "What it costs".
_COMMON_WORDS = frozenset(
    """
    what when where which with from that this these those have been were they them their there about
    after before into over under more most less than then also only just some many much each every
    other same such very your yours mine ours does done make made take give total number
    """.split()  # noqa: SIM905 - a word list reads best as words
)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w.]*\w)")
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30, "hundred": 100, "dozen": 12,
}  # fmt: skip
WORD_MATCHES_KEPT = 3  # more values of one column sharing a word with the question say nothing


_COMPUTES = re.compile(
    r"\b(total|sum|count|number of|in all|altogether|average|mean|percent(age)?|share|proportion|"
    r"most|least|largest|biggest|highest|smallest|lowest|cheapest|fewest|maximum|minimum)\b",
    re.IGNORECASE,
)
# "how many" and the words after it, up to the verb: what is counted ("how many open tasks are ...").
_HOW_MANY = re.compile(
    r"\bhow (?:many|much)\b(?P<what>(?:\s+(?!(?:are|is|was|were|do|does|did|have|has|had|can|will|"
    r"would|should|in|of|on|at|for|from|by|to|there)\b)[\w'-]+){0,3})",
    re.IGNORECASE,
)


def asks_for_computation(question: str, tables: list[DataTable]) -> bool:
    """Whether a question asks what a query computes: a total, an average, a share, an extreme; or
    how many or how much of something a table holds (a value it names, a month of its dates, or rows
    of the table, named right after "how many"). Other questions a small model answers better from
    the files than with SQL: "how many days do customers get to pay" names a table's rows, but counts
    days, a setting to read."""
    if _COMPUTES.search(question):
        return True
    counted = _HOW_MANY.search(question)
    if not counted:
        return False
    focus = question_focus(question, tables)
    if focus.conditions or focus.months:
        return True
    words = {_singular(word.lower()) for word in _WORD.findall(counted.group("what"))}
    row_names = {_singular(part) for table in tables for part in _row_names(table) if len(part) > 3}
    return bool(words & row_names)


def _row_names(table: DataTable) -> list[str]:
    """What a table's rows are called: the words of its name, and "item", "task" for a task list's."""
    names = table.name.split("_")
    if table.column("done") is not None:
        names += ["item", "task", "box", "todo"]
    return names


@dataclass(frozen=True)
class Literals:
    """The values a condition may compare with, when they must come from the question: a query then
    tests only what the question speaks of, and cannot invent a filter ("service = 'Oil change'")."""

    numbers: tuple[str, ...]  # the question's numbers, and 0 and 1
    words: tuple[str, ...]  # the question's telling words, for LIKE '%word%'
    # per (table, column): the column's values the question mentions, in any case
    values: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    # per (table, date column): the starts of the dates the question names ('2024-03', '2024')
    dates: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Focus:
    # per table: (column, values) pairs a query over it must test, each column with the values named
    conditions: dict[str, list[tuple[str, tuple[str, ...]]]] = field(default_factory=dict)
    # per table: (date column, year-month starts) for the months the question names
    months: dict[str, list[tuple[str, tuple[str, ...]]]] = field(default_factory=dict)
    computation: Computation | None = None
    literals: Literals | None = None  # None: a condition may compare with any value


def question_focus(question: str, tables: list[DataTable]) -> Focus:
    """What `question` fixes about a query over `tables`; with no question, nothing."""
    if not question.strip():
        return Focus()
    computation = next((name for name, cue in CUES if cue.search(question)), None)
    words = {_singular(word.lower()) for word in _WORD.findall(question)}
    folded = f" {' '.join(_WORD.findall(question.lower()))} "
    months = _period_month(question)
    years = set(_YEAR.findall(question))
    conditions: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    dated: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    mentioned: dict[tuple[str, str], tuple[str, ...]] = {}
    date_starts: dict[tuple[str, str], tuple[str, ...]] = {}
    named_months = _named_months(question)
    days = _days(question)
    for table in tables:
        for at, column in enumerate(table.columns):
            cells = {row[at] for row in table.rows if isinstance(row[at], str)}
            if column.dates:
                starts = tuple(sorted({cell[:7] for cell in cells if int(cell[5:7]) in months}))
                if starts and len(starts) < len({cell[:7] for cell in cells}):  # else every row is in it
                    dated.setdefault(table.name, []).append((column.name, starts))
                spoken = {cell[:7] for cell in cells if int(cell[5:7]) in named_months}
                spoken |= {cell[:4] for cell in cells if cell[:4] in years}
                spoken |= {cell[:10] for cell in cells if cell[:10] in question or cell[5:10] in days}
                date_starts[(table.name, column.name)] = tuple(sorted(spoken))
                continue
            if not column.values and column.kind == "TEXT":
                named = _named_ids(cells, folded)
                mentioned[(table.name, column.name)] = named
            else:
                named = _named_values(set(column.values), folded, words) if column.values else ()
                mentioned[(table.name, column.name)] = _mentioned(set(column.values), folded, words)
            if named:
                conditions.setdefault(table.name, []).append((column.name, named))
    literals = Literals(_numbers(question), _like_words(question), mentioned, date_starts)
    return Focus(conditions, dated, computation, literals)


def _mentioned(cells: set[str], folded: str, words: set[str]) -> tuple[str, ...]:
    """The cells the question speaks of, in any case: `cancelled` in "not counting cancelled jobs",
    `book` in "how many books"."""
    spoken = {cell for cell in cells if f" {' '.join(_WORD.findall(cell.lower()))} " in folded}
    spoken |= {cell for cell in cells if _WORD.fullmatch(cell) and _singular(cell.lower()) in words}
    return tuple(sorted(spoken | set(_named_values(cells, folded, words))))


def _numbers(question: str) -> tuple[str, ...]:
    found = {match.replace(",", "") for match in _NUMBER.findall(question)}
    found |= {
        str(_NUMBER_WORDS[word.lower()]) for word in _WORD.findall(question) if word.lower() in _NUMBER_WORDS
    }
    found |= {
        str(_NUMBER_WORDS[part.lower()])
        for part in re.findall(r"\b(\w+)-day\b", question)
        if part.lower() in _NUMBER_WORDS
    }
    return tuple(sorted(found | {"0", "1"}, key=lambda number: (len(number), number)))


def _like_words(question: str) -> tuple[str, ...]:
    """The question's words a LIKE pattern may hold, singular and as written."""
    words = [
        word.lower()
        for word in _WORD.findall(question)
        if len(word) > 2 and word.lower() not in _COMMON_WORDS
    ]
    return tuple(sorted(set(words) | {_singular(word) for word in words}))


def _days(question: str) -> set[str]:
    """The days a question names in words ("9 June", "June 9th"), as files write them: '06-09'."""
    days = set()
    for match in _DAY_MONTH.finditer(question):
        day = re.search(r"\d{1,2}", match.group(0))
        month = _MONTH.search(match.group(0))
        if day and month:
            days.add(f"{MONTHS.index(month.group(0).lower()) + 1:02d}-{int(day.group(0)):02d}")
    return days


def _named_months(question: str) -> set[int]:
    return {MONTHS.index(name.lower()) + 1 for name in _MONTH.findall(question)}


def _period_month(question: str) -> list[int]:
    """The month a question asks about as a period ("in March", "March 2024"), as [its number]; none
    for a day's date ("on 11 March"), which names an event, or for several months (a range)."""
    without_days = _DAY_MONTH.sub(" ", question)
    named = {MONTHS.index(name.lower()) + 1 for name in _MONTH.findall(without_days)}
    return list(named) if len(named) == 1 else []


def _named_ids(cells: set[str], folded: str) -> tuple[str, ...]:
    """Of a column with many values (an ID, a name), the ones the question writes whole."""
    named = [
        cell for cell in cells if _is_name(cell) and f" {' '.join(_WORD.findall(cell.lower()))} " in folded
    ]
    return tuple(sorted(named)) if 0 < len(named) <= WORD_MATCHES_KEPT else ()


def _named_values(cells: set[str], folded: str, words: set[str]) -> tuple[str, ...]:
    """The cells the question names: written whole, or (for a name) by one of its longer words."""
    whole = [
        cell for cell in cells if _is_name(cell) and f" {' '.join(_WORD.findall(cell.lower()))} " in folded
    ]
    if whole:
        return tuple(sorted(whole))
    by_word = [
        cell
        for cell in cells
        if cell[:1].isupper()
        and any(_telling(word) and _singular(word.lower()) in words for word in _WORD.findall(cell))
    ]
    return tuple(sorted(by_word)) if 0 < len(by_word) <= WORD_MATCHES_KEPT else ()


def _is_name(cell: str) -> bool:
    """A value that names one thing (`Ada`, `B-2210`), not a plain word (`paid`) a question may
    use in passing: such words are left for the model to test or not."""
    return len(cell) > 1 and (cell[:1].isupper() or any(char.isdigit() for char in cell))


def _telling(word: str) -> bool:
    return len(word) > 3 and word.lower() not in _COMMON_WORDS


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
