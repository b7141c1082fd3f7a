"""A table file's column named in a calculator expression, replaced by the column's numbers.

A coder model asked for a total over a CSV file writes `sum(gauges/may.csv['mm'])` or
`sum(gauges/may.csv, 'mm')` into the calculator, however often it is told to write arithmetic.
Such a reference to a CSV or TSV file of the workspace becomes the list of that column's numbers,
read from the file by code, so the calculator's `sum`, `mean`, `len`, `min` and `max` work on it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from localagent.tools.base import ToolError
from localagent.tools.workspace import Workspace

DELIMITERS = {".csv": ",", ".tsv": "\t"}
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
        numbers = column_numbers(real, path, column)
        notes.append(f"{len(numbers)} values of {column} in {path}")
        return "[" + ", ".join(numbers) + "]"

    return _REFERENCE.sub(values, expression), notes


def column_numbers(real: Path, path: str, column: str) -> list[str]:
    """The numbers of one column of a table file, as written there; a ToolError names what is wrong."""
    try:
        with real.open(encoding="utf-8", errors="replace", newline="") as file:
            rows = [
                [field.strip() for field in row]
                for row in csv.reader(file, delimiter=DELIMITERS[real.suffix.lower()])
            ]
    except OSError:
        raise ToolError(f"Cannot read {path}.") from None
    rows = [row for row in rows if any(row)]
    if not rows:
        raise ToolError(f"{path} is empty.")
    header = [name.lower() for name in rows[0]]
    if column.lower() not in header:
        raise ToolError(f"{path} has no column {column!r}; its columns are {', '.join(rows[0])}.")
    if len(rows) - 1 > MAX_VALUES:
        raise ToolError(
            f"{path} has {len(rows) - 1} rows; the calculator reads a column of at most {MAX_VALUES}."
        )
    index = header.index(column.lower())
    numbers = []
    for number, row in enumerate(rows[1:], start=2):
        field = row[index] if index < len(row) else ""
        if not _NUMBER.fullmatch(field):
            raise ToolError(f"Column {column!r} of {path} holds {field!r}, not a number, in row {number}.")
        numbers.append(field)
    return numbers
