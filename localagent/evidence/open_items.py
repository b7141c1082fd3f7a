"""The open items of the workspace's task lists, for a question that asks what is still to do.

Which boxes are not ticked is a fact of the files, read by the Markdown task-list reader; a small
model that reads a list by eye drops items or lists a done one. The lists shown are those whose file
name or headings share a word with the question, or every list when none does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from localagent.evidence.question import STOP_WORDS
from localagent.tools.markdown_tables import TASK_COLUMNS
from localagent.tools.table_catalog import DataTable

OPEN_ITEMS_CHARS = 1500  # about 400 tokens of items
LISTS_SHOWN = 3

_ASKS_WHAT_IS_OPEN = re.compile(
    r"\b(?:still|are|is|remains?)\s+open\b|'s\s+(?:still\s+)?open\b|"
    r"\bopen\s+(?:items?|tasks?|to-?dos?|boxes|points|things|entries|steps|ones)\b|"
    r"\b(?:unchecked|unticked|outstanding|pending|remaining|undone|left to do|still to do|"
    r"not (?:yet )?(?:done|ticked|checked|finished|complete|completed))\b",
    re.IGNORECASE,
)
# Unless the question names a list's file or heading, it must say it asks about a list.
_NAMES_A_LIST = re.compile(
    r"\b(?:list|checklist|items?|tasks?|to-?dos?|boxes|unchecked|unticked|ticked)\b", re.IGNORECASE
)
# An instruction to change a list names the item it changes; the list itself is no answer to it.
_ASKS_FOR_A_CHANGE = re.compile(
    r"\b(?:add|tick|mark|cross|remove|delete|update|change|set|create|write|rename|append|insert)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]+")
_TO_DO = re.compile(r"\bto[- ]?do\b", re.IGNORECASE)


@dataclass(frozen=True)
class OpenList:
    path: str
    total: int  # items with a box, ticked or not
    items: tuple[tuple[int, str, str], ...]  # (line, text, section) of each open item


def asks_what_is_open(question: str) -> bool:
    return bool(_ASKS_WHAT_IS_OPEN.search(question)) and not _ASKS_FOR_A_CHANGE.search(question)


def open_lists(tables: list[DataTable], question: str, budget: int = OPEN_ITEMS_CHARS) -> list[OpenList]:
    """The task lists the question points at, with their open items, within `budget` characters."""
    lists = [_open_list(table) for table in tables if tuple(c.name for c in table.columns) == TASK_COLUMNS]
    lists = [found for found in lists if found.items]
    asked = _words(question) - STOP_WORDS
    overlap = {found.path: len(asked & _words(_where(found))) for found in lists}
    best = max(overlap.values(), default=0)
    if not best and not _NAMES_A_LIST.search(question):
        return []
    if best:
        lists = [found for found in lists if overlap[found.path] == best]
    chosen: list[OpenList] = []
    used = 0
    for found in lists[:LISTS_SHOWN]:
        size = sum(len(text) + len(section) + 16 for _, text, section in found.items)
        if chosen and used + size > budget:
            break
        chosen.append(found)
        used += size
    return chosen


def _open_list(table: DataTable) -> OpenList:
    open_items = tuple(
        (int(str(line)), str(item), str(section))
        for item, done, section, line in table.rows
        if str(done) == "0"
    )
    return OpenList(table.origin, len(table.rows), open_items)


def _where(found: OpenList) -> str:
    sections = " ".join(section for _, _, section in found.items)
    return f"{found.path.replace('-', ' ').replace('_', ' ')} {sections}"


def _words(text: str) -> set[str]:
    words = {word.lower() for word in _WORD.findall(text)}
    if _TO_DO.search(text):
        words.add("todo")  # "my to-do list" and TODO.md name one thing
    return words
