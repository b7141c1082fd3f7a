"""query_tables: SQL (SQLite) over the workspace's tables, written under a grammar of their own names.

A coder model writes `SELECT AVG(price) FROM wares WHERE category = 'kitchen'` more reliably than it
picks the right rows out of a file it has read and adds them up itself; the grammar built from the
tables (`sql_grammar`) keeps it to the tables, columns and values that are there.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from localagent.core.cancel import CancelToken
from localagent.tools.base import Tool, ToolError
from localagent.tools.calculator import format_number
from localagent.tools.sql_focus import asks_for_computation, question_focus
from localagent.tools.sql_grammar import sql_schema
from localagent.tools.table_catalog import DataTable, workspace_tables
from localagent.tools.workspace import Workspace

TABLES_LISTED = 12  # tables the workspace's listing names, with their columns
VALUES_LISTED = 5  # values of a column with few, in that listing
ROWS_SHOWN = 50
CELL_CHARS = 200
QUERY_SECONDS = 5.0  # a query that runs longer (a huge cross join, say) is stopped
_PROGRESS_EVERY = 10_000  # SQLite virtual-machine steps between checks of the clock and Ctrl-C
_DESCRIPTION = "One SQLite SELECT over the tables listed with the files, as in SELECT SUM(amount) FROM orders"

Sql = Annotated[str, Field(description=_DESCRIPTION)]


class TableQuery:
    """The query_tables tool of one workspace; the files are read again when they change."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def tool(self) -> Tool:
        tool = Tool.from_function(self.query_tables)
        return Tool(
            tool.spec,
            tool.validate,
            tool.invoke,
            narrow=self._grammar_schema,
            offered_for=self._offered,
        )

    def _offered(self, question: str) -> bool:
        return asks_for_computation(question, workspace_tables(self.workspace))

    def has_tables(self) -> bool:
        return bool(workspace_tables(self.workspace))

    def query_tables(self, sql: Sql, cancel: CancelToken) -> str:
        """Count, sum, average or find the largest of the rows of a table, or filter them, with one SQL
        query. The workspace's tables are listed with its files: CSV, TSV and JSON files, Markdown
        tables and task lists (a row per item, done 1 or 0)."""
        tables = workspace_tables(self.workspace)
        if not tables:
            raise ToolError(
                "The workspace has no tables (no CSV, TSV or JSON records, Markdown tables or task lists). "
                "Read or search the files instead."
            )
        connection = sqlite3.connect(":memory:")
        try:
            _load(connection, tables)
            connection.commit()
            connection.execute("PRAGMA query_only = ON")
            # Reading only: a query without a grammar (a hosted model) must not ATTACH a file anywhere.
            connection.set_authorizer(_read_only)
            deadline = time.monotonic() + QUERY_SECONDS
            connection.set_progress_handler(
                lambda: int(cancel.cancelled or time.monotonic() > deadline), _PROGRESS_EVERY
            )
            try:
                cursor = connection.execute(sql.strip().rstrip(";"))
                rows = cursor.fetchmany(ROWS_SHOWN + 1)
            except sqlite3.Error as error:
                if str(error) == "interrupted":
                    cancel.raise_if_cancelled()
                    raise ToolError(f"The query ran over {QUERY_SECONDS:g} s and was stopped.") from None
                raise ToolError(
                    f"SQL error: {str(error).rstrip('.')}. Tables: {_described(tables)}."
                ) from None
            columns = [column[0] for column in cursor.description or []]
            extreme_rows = _rows_holding_extreme(connection, sql, rows)
        finally:
            connection.close()
        return _shown(columns, rows) + extreme_rows

    def _grammar_schema(self, question: str) -> dict[str, Any] | None:
        tables = workspace_tables(self.workspace)
        if not tables:
            return None
        sql = sql_schema(tables, _DESCRIPTION, question_focus(question, tables))
        return {"type": "object", "properties": {"sql": sql}, "required": ["sql"]}


def tables_listing(workspace: Workspace) -> str:
    """The workspace's tables for the model's first view of it, one line each; "" for none."""
    tables = workspace_tables(workspace)
    lines = [
        f"- {table.name} ({table.source}, {_rows(len(table.rows))}): {_columns(table)}" for table in tables
    ]
    if len(lines) > TABLES_LISTED:
        lines = [*lines[:TABLES_LISTED], f"(and {len(lines) - TABLES_LISTED} more tables)"]
    return "\n".join(lines)


_EXTREME = re.compile(
    r"SELECT (?:ROUND\()?(MAX|MIN)\((\w+)\)(?:, \d\))?(?: AS \w+)? FROM (\w+)( WHERE .*?)?$", re.IGNORECASE
)
EXTREME_ROWS_SHOWN = 3


def _rows_holding_extreme(connection: sqlite3.Connection, sql: str, rows: list[tuple[object, ...]]) -> str:
    """For a query of one column's largest or smallest value alone, the rows that hold it: asked for
    the most expensive job, a model writes MAX(amount) and would answer with the amount alone."""
    found = _EXTREME.match(" ".join(sql.split()).rstrip(";"))
    if not found or len(rows) != 1 or len(rows[0]) != 1 or rows[0][0] is None:
        return ""
    _, column, table, where = found.groups()
    condition = f"({where[len(' WHERE ') :]}) AND " if where else ""
    try:
        cursor = connection.execute(
            f"SELECT * FROM {table} WHERE {condition}{column} = ? LIMIT {EXTREME_ROWS_SHOWN + 1}",
            (rows[0][0],),
        )
        holding = cursor.fetchall()
    except sqlite3.Error:
        return ""
    if not holding:
        return ""
    names = [described[0] for described in cursor.description]
    lines = _table_lines(names, holding[:EXTREME_ROWS_SHOWN])
    return f"\nThe row{'s' * (len(holding) > 1)} holding it:\n" + "\n".join(lines)


def _rows(count: int) -> str:
    return f"{count} row{'s' * (count != 1)}"


def _columns(table: DataTable) -> str:
    shown = []
    for column in table.columns:
        if column.values and len(column.values) <= VALUES_LISTED:
            shown.append(f"{column.name} ({'/'.join(column.values)})")
        else:
            shown.append(column.name)
    return ", ".join(shown)


def _described(tables: Sequence[DataTable]) -> str:
    listed = [f"{table.name} ({', '.join(column.name for column in table.columns)})" for table in tables]
    return "; ".join(listed[:TABLES_LISTED])


_READING = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)


def _read_only(action: int, *_: object) -> int:
    return sqlite3.SQLITE_OK if action in _READING else sqlite3.SQLITE_DENY


def _load(connection: sqlite3.Connection, tables: Sequence[DataTable]) -> None:
    for table in tables:
        columns = ", ".join(f'"{column.name}" {column.kind}' for column in table.columns)
        connection.execute(f'CREATE TABLE "{table.name}" ({columns})')
        marks = ", ".join("?" * len(table.columns))
        connection.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})', table.rows)


def _shown(columns: list[str], rows: list[tuple[object, ...]]) -> str:
    """The result as a table with its column names first, and how many rows last (as psql does): a
    count above the rows was given as the answer to "which ..."."""
    if not rows:
        return "No rows."
    if len(rows) == 1:
        # One row as `name = value` pairs: "1 row:" above a lone count was read as the count.
        return ", ".join(f"{name} = {_cell(value)}" for name, value in zip(columns, rows[0], strict=True))
    lines = _table_lines(columns, rows[:ROWS_SHOWN])
    lines.append(
        f"(the first {ROWS_SHOWN} rows; there are more)" if len(rows) > ROWS_SHOWN else f"({len(rows)} rows)"
    )
    return "\n".join(lines)


def _table_lines(columns: Sequence[str], rows: Sequence[tuple[object, ...]]) -> list[str]:
    return [" | ".join(columns), *(" | ".join(_cell(value) for value in row) for row in rows)]


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value)
    text = str(value).replace("\n", " ")
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS] + "…"
