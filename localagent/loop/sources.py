"""What an answer rests on: the lines of the files, shown to the model, that hold the answer's values.

The candidates are every place a run showed the model a file's line: the evidence before the
question, `read_file`'s numbered lines, `search_text`'s `path:line:` matches, and the tables a query
read. A place is a source when it holds one of the answer's values: a number (1,482.75 is 1482.75),
a code with digits, or a name. Nothing asks the model which places it used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from localagent.core.messages import AssistantMessage, Message, ToolMessage, UserMessage

SOURCES_SHOWN = 4

_NUMBER = re.compile(r"(?<![\w.:])-?\d[\d,]*(?:\.\d+)?(?![\w.]*\w|:\d)")
_TIME = re.compile(r"(?<![\w:])\d{1,2}:\d\d(?::\d\d)?(?![\w:])")  # 12:30 is one value, not 12 and 30
_CODE = re.compile(r"\b(?=[\w./-]*\d)(?=[\w./-]*[A-Za-z])[A-Za-z0-9]+(?:[-./_][A-Za-z0-9]+)+\b")
_NAME = re.compile(r"(?<=[a-z,;:]\s)[A-Z][\w'’-]*[a-z][\w-]*")
# Lines as the tools and the evidence number them: "12: text" under "path, lines 3-14 …:", and a
# search's "path:12: text".
_BLOCK_HEAD = re.compile(r"^(?P<path>[^\s:,][^:,\n]*?), lines? \d+(?:-\d+)?(?: of \d+)?(?: \(under .*\))?:$")
_NUMBERED = re.compile(r"^(?P<number>\d+): (?P<text>.*)$")
_SEARCH_LINE = re.compile(r"^(?P<path>[^\s:][^:\n]*):(?P<number>\d+): (?P<text>.*)$")
_FROM_TABLE = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][\w]*)", re.IGNORECASE)

# A table's name in a query -> the file (or folder) it is read from.
TableSources = Callable[[str], str | None]


@dataclass(frozen=True)
class _Place:
    where: str  # "path:12", or a table's file
    text: str


def answer_sources(
    messages: Sequence[Message], answer: str, table_sources: TableSources | None = None
) -> tuple[str, ...]:
    """The places, as `path:line` (or a table's file), whose text holds a value of the answer."""
    numbers = {_number(match) for match in _NUMBER.findall(answer)} - {None}
    words = {match.lower() for match in _CODE.findall(answer) + _NAME.findall(answer) + _TIME.findall(answer)}
    if not numbers and not words:
        return ()
    found: list[str] = []
    for place in _places(messages, table_sources):
        if place.where in found:
            continue
        held_numbers = {_number(match) for match in _NUMBER.findall(place.text)}
        text = place.text.lower()
        if numbers & held_numbers or any(
            re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) for word in words
        ):
            found.append(place.where)
    return tuple(found[:SOURCES_SHOWN])


def _places(messages: Sequence[Message], table_sources: TableSources | None) -> list[_Place]:
    places: list[_Place] = []
    queries: dict[str, str] = {}  # request id -> the SQL of a query_tables call
    for message in messages:
        if isinstance(message, AssistantMessage):
            queries |= {
                request.id: str(request.arguments.get("sql", ""))
                for request in message.tool_requests
                if request.name == "query_tables" and isinstance(request.arguments, dict)
            }
        elif isinstance(message, UserMessage) and not message.feedback:
            places += _numbered_lines(message.content)
        elif isinstance(message, ToolMessage) and not message.is_error:
            places += _numbered_lines(message.content) + _search_lines(message.content)
            sql = queries.get(message.request_id)
            if table_sources is not None and sql:
                places += _query_tables(sql, message.content, table_sources)
    return places


def _numbered_lines(text: str) -> list[_Place]:
    places: list[_Place] = []
    path: str | None = None
    for line in text.splitlines():
        head = _BLOCK_HEAD.match(line)
        if head:
            path = head.group("path")
            continue
        numbered = _NUMBERED.match(line)
        if path and numbered:
            places.append(_Place(f"{path}:{numbered.group('number')}", numbered.group("text")))
        elif not numbered:
            path = None
    return places


def _search_lines(text: str) -> list[_Place]:
    return [
        _Place(f"{match.group('path')}:{match.group('number')}", match.group("text"))
        for match in map(_SEARCH_LINE.match, text.splitlines())
        if match
    ]


def _query_tables(sql: str, result: str, table_sources: TableSources) -> list[_Place]:
    files = [source for name in _FROM_TABLE.findall(sql) if (source := table_sources(name))]
    return [_Place(file, result) for file in dict.fromkeys(files)]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None
