"""query_tables: SQL (SQLite) over the workspace's data files (CSV, and JSON lists of records).

A coder model writes `SELECT AVG(price) FROM wares WHERE category = 'kitchen'` more reliably than
it picks the right rows out of a file it has read and adds them up itself.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field

from localagent.core.cancel import CancelToken
from localagent.tools.base import Tool, ToolError
from localagent.tools.calculator import format_number
from localagent.tools.data_records import read_records
from localagent.tools.walk import workspace_paths
from localagent.tools.workspace import Workspace

DATA_FILE_LIMIT = 100  # data files a workspace may offer as tables
WALK_FILE_LIMIT = 5000  # files looked at while looking for them, so a home folder is not walked whole
TABLES_DESCRIBED = 20  # tables an SQL error lists, with their columns
ROWS_SHOWN = 50
CELL_CHARS = 200
QUERY_SECONDS = 5.0  # a query that runs longer (a huge cross join, say) is stopped
_PROGRESS_EVERY = 10_000  # SQLite virtual-machine steps between checks of the clock and Ctrl-C
_SUFFIXES = (".csv", ".json")
_PLAIN_NAME = re.compile(r"[A-Za-z_]\w*")  # a table name SQL takes without quotes

Sql = Annotated[
    str,
    Field(
        pattern=r"^\s*(SELECT|Select|select|WITH|With|with)\s",
        description='One SQLite SELECT statement. A table is named by its path, as in FROM "data/items.csv", '
        "or by its name alone, as in FROM items",
    ),
]


@dataclass(frozen=True)
class Table:
    """A table a query may name: one data file, or a folder of CSV files with the same columns."""

    name: str  # the file's or folder's path
    files: tuple[str, ...]
    header: tuple[str, ...]

    @property
    def is_folder(self) -> bool:
        return self.files != (self.name,)

    def names(self) -> list[str]:
        """Its path, and its file name without the extension when that is a plain SQL name
        (wares.csv: wares; orders/: orders)."""
        stem = Path(self.name).name if self.is_folder else Path(self.name).stem
        return [self.name, stem] if stem != self.name and _PLAIN_NAME.fullmatch(stem) else [self.name]

    def described(self) -> str:
        what = f"; the {len(self.files)} files of {self.name}/ in one" if self.is_folder else ""
        return f"{_quoted(self.name)} ({', '.join(self.header)}{what})"


def data_tables(workspace: Workspace) -> list[Table]:
    """The tables of the workspace: each CSV file, each JSON file that holds a list of records, and
    each folder of two or more CSV files with the same columns (with a first column `file`)."""
    tables: list[Table] = []
    for path in _data_files(workspace):
        try:
            header, _ = read_records(workspace, path, header_only=True)
        except ToolError:
            continue
        tables.append(Table(path, (path,), tuple(header)))
    by_folder: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for table in tables:
        folder = str(Path(table.name).parent)
        if table.name.lower().endswith(".csv") and folder != ".":
            by_folder.setdefault((folder, table.header), []).append(table.name)
    folders = [
        Table(folder, tuple(files), ("file", *header))
        for (folder, header), files in by_folder.items()
        if len(files) > 1 and "file" not in header
    ]
    return folders + tables


def _data_files(workspace: Workspace) -> list[str]:
    _, files = workspace_paths(workspace, WALK_FILE_LIMIT)
    return sorted([path for path in files if path.lower().endswith(_SUFFIXES)][:DATA_FILE_LIMIT])


class TableQuery:
    """The query_tables tool of one workspace; the files are read again for every query, so edits show."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def tool(self) -> Tool:
        return Tool.from_function(self.query_tables)

    def query_tables(self, sql: Sql, cancel: CancelToken) -> str:
        """Run an SQL query (SQLite) on the data files: filter, count, sum, average or join rows. Each CSV
        file is a table, as is each JSON file that holds a list of records, and each folder of CSV files
        with the same columns (its column file tells which file a row is from)."""
        tables = data_tables(self.workspace)
        if not tables:
            raise ToolError(
                "There are no CSV files, and no JSON files with a list of records, in the workspace, so "
                "there are no tables to query."
            )
        query = _quote_paths(sql.strip().rstrip(";"), [table.name for table in tables])
        connection = sqlite3.connect(":memory:")
        try:
            self._load(connection, [table for table in tables if _mentions(query, table)])
            connection.execute("PRAGMA query_only = ON")
            deadline = time.monotonic() + QUERY_SECONDS
            connection.set_progress_handler(
                lambda: int(cancel.cancelled or time.monotonic() > deadline), _PROGRESS_EVERY
            )
            try:
                cursor = connection.execute(query)
                rows = cursor.fetchmany(ROWS_SHOWN + 1)
            except sqlite3.Error as error:
                if str(error) == "interrupted":
                    cancel.raise_if_cancelled()
                    raise ToolError(f"The query ran over {QUERY_SECONDS:g} s and was stopped.") from None
                problem = str(error).rstrip(".")
                described = "; ".join(table.described() for table in tables[:TABLES_DESCRIBED])
                other_files = ""
                if problem.startswith("no such table"):
                    other_files = " Other files are no tables: read them with read_file."
                raise ToolError(
                    f"SQL error: {problem}. Tables and their columns: {described}.{other_files}"
                ) from None
            columns = [column[0] for column in cursor.description or []]
        finally:
            connection.close()
        return _shown(columns, rows)

    def _load(self, connection: sqlite3.Connection, tables: Iterable[Table]) -> None:
        taken: set[str] = set()
        for table in tables:
            rows: list[list[str]] = []
            for path in table.files:
                _, records = read_records(self.workspace, path)
                rows.extend([path, *record] if table.is_folder else record for record in records)
            width = len(table.header)
            kinds = [_column_kind(row[index] for row in rows) for index in range(width)]
            columns = ", ".join(
                f"{_quoted(name)} {kind}" for name, kind in zip(table.header, kinds, strict=True)
            )
            connection.execute(f"CREATE TABLE {_quoted(table.name)} ({columns})")
            connection.executemany(
                f"INSERT INTO {_quoted(table.name)} VALUES ({', '.join('?' * width)})",
                ([_value(cell, kind) for cell, kind in zip(row, kinds, strict=True)] for row in rows),
            )
            for alias in table.names()[1:]:
                if alias.lower() not in taken:
                    taken.add(alias.lower())
                    connection.execute(f"CREATE VIEW {_quoted(alias)} AS SELECT * FROM {_quoted(table.name)}")


def _column_kind(cells: Iterable[str]) -> str:
    values = [cell for cell in cells if cell != ""]
    if values and all(re.fullmatch(r"[-+]?\d+", value) for value in values):
        return "INTEGER"
    if values and all(_is_float(value) for value in values):
        return "REAL"
    return "TEXT"


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.lower().strip("+-") not in ("inf", "infinity", "nan")


def _value(cell: str, kind: str) -> int | float | str | None:
    if cell == "":
        return None
    return int(cell) if kind == "INTEGER" else float(cell) if kind == "REAL" else cell


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_paths(sql: str, paths: list[str]) -> str:
    """The query with each bare file path quoted: FROM orders/2023-07.csv means the file, where SQLite
    would read a schema and a table name, or an arithmetic expression."""
    for path in sorted(paths, key=len, reverse=True):
        if _PLAIN_NAME.fullmatch(path):
            continue
        bare = rf'(?<![\w"\'/.-]){re.escape(path)}(?![\w"\'/.-])'
        sql = re.sub(bare, _replacement(_quoted(path)), sql)
    return sql


def _replacement(text: str) -> Callable[[re.Match[str]], str]:
    return lambda _: text


def _mentions(sql: str, table: Table) -> bool:
    return any(
        re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/.-])", sql, re.IGNORECASE) for name in table.names()
    )


def _shown(columns: list[str], rows: list[tuple[object, ...]]) -> str:
    if not rows:
        return "No rows."
    if len(rows) > ROWS_SHOWN:
        count = f"The first {ROWS_SHOWN} rows (there are more):"
    else:
        count = f"{len(rows)} row{'s' * (len(rows) > 1)}:"
    lines = [count, " | ".join(columns)]
    lines.extend(" | ".join(_cell(value) for value in row) for row in rows[:ROWS_SHOWN])
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    text = str(value).replace("\n", " ")
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS] + "…"
