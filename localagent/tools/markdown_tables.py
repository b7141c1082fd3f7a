"""The tables a Markdown file holds: its pipe tables, and its task list as a table of items.

A task list (`- [ ] …` and `- [x] …` lines) becomes one table with a row per item: its text, whether
it is done (1) or open (0), the heading it falls under, and its line. Counting open items is then a
query, not something a small model does by eye.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>.*?)[ \t#]*$")
_TASK = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[(?P<box>[ xX])\][ \t]+(?P<text>.*?)\s*$")
_ROW = re.compile(r"^\s*\|?(.*?)\|?\s*$")
_SEPARATOR_CELL = re.compile(r"^\s*:?-{2,}:?\s*$")
TASK_COLUMNS = ("item", "done", "section", "line")


@dataclass(frozen=True)
class MarkdownTable:
    heading: str  # the heading the table falls under; "" for none
    header: list[str]
    rows: list[list[str]]


def task_rows(text: str) -> list[list[str]]:
    """A row per task-list item, with the columns TASK_COLUMNS, every cell as text."""
    rows: list[list[str]] = []
    heading = ""
    for number, line in enumerate(text.splitlines(), start=1):
        title = _HEADING.match(line)
        if title:
            heading = title.group("title")
            continue
        task = _TASK.match(line)
        if task:
            done = "0" if task.group("box") == " " else "1"
            rows.append([task.group("text"), done, heading, str(number)])
    return rows


def pipe_tables(text: str) -> list[MarkdownTable]:
    """The pipe tables of a Markdown text: a header row, a separator row (`|---|:--:|`), then rows."""
    lines = text.splitlines()
    tables: list[MarkdownTable] = []
    heading = ""
    at = 0
    while at < len(lines):
        title = _HEADING.match(lines[at])
        if title:
            heading = title.group("title")
        if "|" in lines[at] and at + 1 < len(lines) and _is_separator(lines[at + 1]):
            header = _cells(lines[at])
            rows: list[list[str]] = []
            at += 2
            while at < len(lines) and "|" in lines[at] and lines[at].strip():
                cells = _cells(lines[at])
                rows.append((cells + [""] * len(header))[: len(header)])
                at += 1
            if header and rows:
                tables.append(MarkdownTable(heading, header, rows))
            continue
        at += 1
    return tables


def _is_separator(line: str) -> bool:
    cells = _cells(line)
    return bool(cells) and all(_SEPARATOR_CELL.match(cell) for cell in cells)


def _cells(line: str) -> list[str]:
    inner = _ROW.match(line)
    body = inner.group(1) if inner else line
    return [_plain(cell) for cell in re.split(r"(?<!\\)\|", body)]


def _plain(cell: str) -> str:
    """A cell's text without Markdown emphasis or code marks around it."""
    text = cell.strip().replace("\\|", "|")
    return re.sub(r"^(\*\*|__|\*|_|`)(.*)\1$", r"\2", text)
