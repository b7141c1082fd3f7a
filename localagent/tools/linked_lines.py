"""Lines elsewhere in the workspace that name what a search's matches name.

A small model stops at the first hop of a question: the handbook says sleeper berths need approval
"from Treasury", and it answers "Treasury" where the person was asked for; a meeting note says "Tove
will book the hall", and it answers "Tove" where the phone number was asked for. The person, team or
code a matching line names is what the next search would look for, so search_text shows the few
other lines that name it (staff.md's row for Treasury, phonebook.csv's row for Tove) with its matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from localagent.tools.found_lines import FoundLine

# A capitalised word (Treasury, Tove) or a code with a digit in it (KT-302, D1.05).
_NAME = re.compile(r"(?<![\w-])(?:[A-Z][a-zA-Z]+|[A-Za-z]+-?\d+(?:[.-]\d+)*)(?![\w-])")
# Capitalised only because a sentence starts with them; they name nothing.
_NOT_NAMES = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be but by can do does each every for from has have here how i if in into is "
        "it its my no not of on or our so some that the their then there these this those to up was we "
        "what when where which who why will with you your",
    )
)
HEADING = "Other lines that name "
NAMES_FOLLOWED = 4  # names of the matching lines that are looked up
LINES_PER_NAME = 5  # a name more lines hold than this is too common to lead anywhere
LINKED_LINES_SHOWN = 6


def names_in(shown: Sequence[FoundLine], pattern: str) -> list[str]:
    """The names in a search's matching lines, but those the pattern itself holds."""
    searched = {word.casefold() for word in re.findall(r"\w+", pattern)}
    names: dict[str, None] = {}
    for line in shown:
        for name in _NAME.findall(line.text):
            if name.casefold() not in searched and name.casefold() not in _NOT_NAMES:
                names.setdefault(name)
    return list(names)[:NAMES_FOLLOWED]


def name_matcher(names: Sequence[str]) -> Callable[[str], bool]:
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")
    return lambda text: pattern.search(text) is not None


def linked(
    names: Sequence[str], found: Sequence[FoundLine], shown: Sequence[FoundLine]
) -> tuple[list[str], list[FoundLine]]:
    """The names followed and the lines to show for them: the lines of `found` (the workspace's lines
    naming any of `names`) that the search did not show already, for the names few enough lines hold."""
    already = set().union(*(line.places() for line in shown))
    new = [line for line in found if (line.path, line.number) not in already]
    kept: list[FoundLine] = []
    followed: list[str] = []
    for name in names:
        names_it = name_matcher([name])
        holding = [line for line in new if names_it(line.text)]
        if holding and len(holding) <= LINES_PER_NAME:
            followed.append(name)
            kept.extend(line for line in holding if line not in kept)
    return followed, kept[:LINKED_LINES_SHOWN]


def linked_report(followed: Sequence[str], lines: Sequence[FoundLine]) -> str:
    return "\n".join([f"{HEADING}{', '.join(followed)}:", *(line.shown() for line in lines)])
