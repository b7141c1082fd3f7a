"""The words of a question worth looking up, and the ones that name a particular thing.

A question's key terms are the words that name one thing: a code with digits (`K-7731`, `v2.4`), a
quoted phrase, a file name, and a capitalised or CamelCase word inside a sentence (a person, a
place, a product). Whether the files hold a key term at all is an objective fact; whether they
answer the question is not.
"""

from __future__ import annotations

import re

from localagent.tools.calendar_words import MONTHS, WEEKDAYS

# A quoted phrase: its quote marks stand apart from words, so "What's the maintainer's" quotes nothing.
_QUOTED = re.compile(r"(?<!\w)[\"“‘']([^\"“”‘’']{2,60})[\"”’'](?!\w)")
_FILE_NAME = re.compile(r"\b[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,5}\b")
# A code: letters and digits joined, with - . / or _ inside (`B-2210`, `3.9.0`, `2024-03-09`).
_CODE = re.compile(r"\b(?=[\w./-]*\d)[A-Za-z0-9]+(?:[-./_][A-Za-z0-9]+)*\b")
_WORD = re.compile(r"[^\W\d_][\w'’-]*[^\W_]|[^\W\d_]")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)\W*$")

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
    don't down during each else ever every few for from further get gets give given go goes going got
    had hadn't has hasn't have haven't having he her here hers herself him himself his how i i'd i'll
    i'm i've if in into is isn't it it's its itself just kind know let let's like make many may me might
    more most much must my myself need needs no nor not now of off on once one only or other ought our
    ours ourselves out over own please put same say says shall she should shouldn't show so some such
    tell than that that's the their theirs them themselves then there there's these they they'd they'll
    they're they've thing things this those through to too under until up upon us use used using very
    want was wasn't way we we'd we'll we're we've were weren't what what's when when's where where's
    whether which while who who's whom whose why why's will with within without won't would wouldn't yet
    you you'd you'll you're you've your yours yourself yourselves file files folder folders workspace
    name named names list lists find found tell told look see again still already ever right exactly
    actually currently
    """.split()  # noqa: SIM905 - a word list reads best as words
)


# Capitalised, so that "if I may ask" names no month.
_MONTH = (
    "("
    + "|".join(m.capitalize() for m in MONTHS)
    + "|"
    + "|".join(m[:3].capitalize() for m in MONTHS)
    + r")\.?"
)
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s+(\d{{4}})\b")


def search_terms(question: str) -> list[str]:
    """The words and codes of the question to look up, in order, without repeats or stop words; a
    date written in words is looked up as files write it too ("11 March" as "03-11")."""
    terms: list[str] = _numeric_dates(question)
    for match in _QUOTED.finditer(question):
        terms.append(match.group(1))
    for match in _CODE.finditer(question):
        terms.append(match.group(0))
    for match in _WORD.finditer(question):
        word = match.group(0).strip("'’-")
        if len(word) > 1 and word.lower() not in STOP_WORDS:
            terms.append(word)
    return _unique(terms)


def code_terms(question: str) -> list[str]:
    """The terms a count of lines is asked for by: quoted phrases and words in capitals (`ERROR`),
    not names or codes, which a count of lines seldom means."""
    terms = [match.group(1) for match in _QUOTED.finditer(question)]
    terms += [word for word in re.findall(r"\b[A-Z][A-Z_]{2,}\b", question)]
    return _unique(terms)


def key_terms(question: str) -> list[str]:
    """The terms that name one particular thing, as the question writes them."""
    terms: list[str] = [match.group(1) for match in _QUOTED.finditer(question)]
    terms += [match.group(0) for match in _FILE_NAME.finditer(question)]
    terms += [match.group(0) for match in _CODE.finditer(question) if re.search(r"[A-Za-z]", match.group(0))]
    for match in _WORD.finditer(question):
        word = match.group(0).strip("'’-").removesuffix("'s").removesuffix("’s")
        if word.lower() in STOP_WORDS or word.lower() in MONTHS or word.lower() in WEEKDAYS or len(word) < 2:
            continue
        camel = bool(re.search(r"[a-z][A-Z]|[A-Z]{2}", word))
        capital = word[0].isupper() and not _SENTENCE_START.search(question[: match.start()])
        if camel or capital:
            terms.append(word)
    return _unique(terms)


def _numeric_dates(question: str) -> list[str]:
    def month(name: str) -> int:
        return next(at for at, full in enumerate(MONTHS, start=1) if full.startswith(name.lower()[:3]))

    dates = [f"{month(m.group(2)):02d}-{int(m.group(1)):02d}" for m in _DAY_MONTH.finditer(question)]
    dates += [f"{month(m.group(1)):02d}-{int(m.group(2)):02d}" for m in _MONTH_DAY.finditer(question)]
    dates += [f"{m.group(2)}-{month(m.group(1)):02d}" for m in _MONTH_YEAR.finditer(question)]
    return dates


def _unique(terms: list[str]) -> list[str]:
    seen: set[str] = set()
    unique = []
    for term in terms:
        if term.lower() not in seen:
            seen.add(term.lower())
            unique.append(term)
    return unique
