"""A table file's column named in a calculator expression, replaced by the column's numbers.

A coder model asked for a total over a CSV file writes `sum(gauges/may.csv['mm'])` or
`sum(gauges/may.csv, 'mm')` into the calculator, however often it is told to write arithmetic.
Such a reference to a CSV or TSV file of the workspace becomes the list of that column's numbers,
read from the file by code, so the calculator's `sum`, `mean`, `len`, `min` and `max` work on it.
"""

from __future__ import annotations

import re

from localagent.tools.base import ToolError
from localagent.tools.data_records import read_records
from localagent.tools.workspace import Workspace

# gauges/may.csv['mm'], or gauges/may.csv, 'mm' as a function's two arguments; quoted or not
_REFERENCE = re.compile(
    r"""(?P<quote>['"]?)(?P<path>[\w./-]+\.(?:csv|tsv))(?P=quote)\s*"""
    r"""(?:\[\s*(?P<q1>['"]?)(?P<column>[^'"\[\],()]+)(?P=q1)\s*\]"""
    r"""|,\s*(?P<q2>['"]?)(?P<argument>[^'"\[\],()]+)(?P=q2))""",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
MAX_VALUES = 10_000  # the numbers become an expression the calculator parses


def with_column_values(expression: str, workspace: Workspace) -> tuple[str, list[str]]:
    """The expression with every table column it names replaced by a list of its numbers, and a note
    for each column replaced ("4 values of mm in gauges/may.csv")."""
    notes: list[str] = []

    def values(match: re.Match[str]) -> str:
        path = match["path"]
        try:
            real = workspace.resolve(path)
        except ToolError:
            return match[0]
        if not real.is_file():
            return match[0]  # left as written, to fail as code does in the calculator
        column = (match["column"] or match["argument"]).strip()
        numbers = column_numbers(workspace, path, column)
        notes.append(f"{len(numbers)} values of {column} in {path}")
        return "[" + ", ".join(numbers) + "]"

    return _REFERENCE.sub(values, expression), notes


def column_numbers(workspace: Workspace, path: str, column: str) -> list[str]:
    """The numbers of one column of a table file, as written there; a ToolError names what is wrong."""
    header, rows = read_records(workspace, path)
    names = [name.lower() for name in header]
    if column.lower() not in names:
        raise ToolError(f"{path} has no column {column!r}; its columns are {', '.join(header)}.")
    if len(rows) > MAX_VALUES:
        raise ToolError(
            f"{path} has {len(rows)} rows; the calculator reads a column of at most {MAX_VALUES}."
        )
    index = names.index(column.lower())
    numbers = []
    for number, row in enumerate(rows, start=2):
        if not _NUMBER.fullmatch(row[index]):
            raise ToolError(
                f"Column {column!r} of {path} holds {row[index]!r}, not a number, in row {number}."
            )
        numbers.append(row[index])
    return numbers
