"""The SQL a model may write over the workspace's tables, as Lark terminals built from the tables.

Only real table and column names can be written, each column only with a table that has it; in a
text column with few distinct values, only a value that occurs there can be compared with it; a
column of dates is compared with dates and matched by a date's start (`LIKE '2024-03%'`). Keywords
are upper case and tokens are one space apart. The language is SQLite's `SELECT` over one table, or
two joined on a key, with WHERE, GROUP BY, HAVING, ORDER BY and LIMIT, aggregates, arithmetic and a
few functions, nested as deep as a small model's query goes.

The whole query is one lexeme made of named terminals that refer to each other (a column list, a
condition, an aggregate), so each part is written once: llguidance and llama.cpp's GBNF keep the
references, and a query's JSON string is matched as one token stream with no lexer ambiguity.
`sql_schema` puts them in the query argument's grammar schema under the `x-lark` keyword, which the
schema compiler reads.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from localagent.tools.sql_focus import Focus, Literals
from localagent.tools.table_catalog import Column, DataTable

MAX_JOIN_TABLES = 12  # above this many tables, joins are left out (pairs grow with the square)
JOIN_SHARE = 0.5  # a column joins a key column that holds this share of its distinct values

_SHARED = {
    "NUM": r"/-?\d{1,12}(\.\d{1,6})?/",
    "FREE": r"/'[^'\"\\\x00-\x1f]{0,60}'/",
    "ALIAS": r"/[a-z][a-z0-9_]{0,23}/",
    "DATE": r"/'\d{4}(-\d{2}(-\d{2}( \d{2}:\d{2}(:\d{2})?)?)?)?'/",
    "DATE_START": r"/'\d{4}(-\d{2}(-\d{2})?)?%'/",
    "DATE_PART": r"/'(%Y|%m|%d|%Y-%m|%m-%d|%Y-%m-%d|%H|%w|%j)'/",
    "CMP": r'" " /(=|!=|<>|<=|>=|<|>)/ " "',
    "EQ": r'" " /(=|!=|<>)/ " "',
    "OP": r"/ [-+*\/] /",
    "ANDOR": r'" AND " | " OR "',
    "NULL_TEST": r'" IS " "NOT "? "NULL"',
    "LIMIT": r'" LIMIT " /\d{1,4}/',
}


def sql_schema(
    tables: Sequence[DataTable], description: str, focus: Focus | None = None
) -> dict[str, object]:
    """The JSON schema of a query string over `tables`, carrying its grammar for the schema compiler;
    with a question's `focus`, the conditions and the computation the question fixes."""
    return {"type": "string", "description": description, "x-lark": sql_terminals(tables, focus)}


def sql_terminals(tables: Sequence[DataTable], focus: Focus | None = None) -> dict[str, object]:
    """`{"start": "SQL", "terminals": {NAME: Lark terminal body}}` for the queries over `tables`."""
    focus = focus or Focus()
    terminals = dict(_SHARED)
    queries = []
    for number, table in enumerate(table for table in tables if table.columns):
        scope = _Scope(terminals, f"T{number}")
        required = _required(table, focus)
        queries.append(_query(scope, _literal(table.name), _written(table, qualified=False), required, focus))
    if len(tables) <= MAX_JOIN_TABLES:
        for number, (left, right, keys) in enumerate(_joinable(tables)):
            on = " | ".join(_literal(f"{left.name}.{a} = {right.name}.{b}") for a, b in keys)
            source = f"{_literal(left.name + ' JOIN ' + right.name + ' ON ')} ({on})"
            columns = _written(left, qualified=True) + _written(right, qualified=True)
            joined = Focus(literals=focus.literals)
            queries.append(_query(_Scope(terminals, f"J{number}"), source, columns, [], joined))
    terminals["SQL"] = " | ".join(queries)
    return {"start": "SQL", "terminals": terminals}


@dataclass(frozen=True)
class _Written:
    """A column as a query writes it (`amount`, or `orders.amount` in a join), and whose it is."""

    text: str
    table: str
    column: Column


class _Scope:
    """Terminals named `{scope}_…`, for the queries over one table or join."""

    def __init__(self, terminals: dict[str, str], name: str) -> None:
        self.terminals = terminals
        self.name = name

    def define(self, name: str, body: str) -> str:
        self.terminals[f"{self.name}_{name}"] = body
        return f"{self.name}_{name}"


def _required(table: DataTable, focus: Focus) -> list[str]:
    """The conditions a query over `table` must start its WHERE with, from what the question names."""
    required = []
    for column, values in focus.conditions.get(table.name, []):
        value = "(" + " | ".join(_literal(f"'{value}'") for value in values) + ")"
        name = _literal(column)
        required.append(
            f'({name} (EQ | " LIKE ") {value} | {name} " NOT"? " IN (" {value} (", " {value})~0..9 ")")'
        )
    for column, starts in focus.months.get(table.name, []):
        name = _literal(column)
        months = " | ".join(_literal(f"'{start}%'") for start in starts)
        numbers = " | ".join(sorted({_literal(f"'{start[5:7]}'") for start in starts}))
        required.append(f'({name} " LIKE " ({months}) | "strftime(\'%m\', " {name} ") = " ({numbers}))')
    return required


def _written(table: DataTable, *, qualified: bool) -> list[_Written]:
    prefix = f"{table.name}." if qualified else ""
    return [_Written(prefix + column.name, table.name, column) for column in table.columns]


def _query(scope: _Scope, source: str, columns: list[_Written], required: list[str], focus: Focus) -> str:
    """Define the terminals of the queries over one table (or join); return its query."""
    define = scope.define
    column = define("COL", " | ".join(_literal(written.text) for written in columns))
    dates = [written.text for written in columns if written.column.dates]
    inner_options = [
        column,
        "NUM",
        f'/(LOWER|UPPER|LENGTH|TRIM|ABS)\\(/ {column} ")"',
        f'"CAST(" {column} / AS (INTEGER|REAL)\\)/',
    ]
    if dates:
        date = define("DATECOL", " | ".join(_literal(written) for written in dates))
        inner_options += [f'"strftime(" DATE_PART ", " {date} ")"', f'/(julianday|date)\\(/ {date} ")"']
    inner = define("INNER", " | ".join(inner_options))
    next_inner = define("NEXT_INNER", f"OP {inner}")
    arithmetic = define("ARITH", f"{inner} {next_inner}~0..3")
    condition = define("COND", " | ".join(_conditions(columns, focus.literals)))
    argument = f'"DISTINCT "? ({condition} | {arithmetic}) ")"'
    aggregate = define(
        "AGG",
        " | ".join(
            [
                '"COUNT(*)"',
                f'"COUNT(" "DISTINCT "? {column} ")"',
                # SUM(done = 0) counts the rows where a condition holds
                f"/(SUM|AVG|MIN|MAX|TOTAL)\\(/ {argument}",
                f'"GROUP_CONCAT(" {column} (", " FREE)? ")"',
            ]
        ),
    )
    term = define("TERM", f'{aggregate} | {inner} | "ROUND(" ({aggregate} | {arithmetic}) ", " /\\d/ ")"')
    next_term = define("NEXT_TERM", f"OP {term}")
    item = define("ITEM", f'{term} {next_term}~0..3 (" AS " ALIAS)?')
    next_item = define("NEXT_ITEM", f'", " {item}')
    grouped = define("GROUPED", f'"(" {condition} (ANDOR {condition})~1..3 ")"')
    test = define("TEST", f'"NOT "? ({condition} | {grouped})')
    next_test = define("NEXT_TEST", f"ANDOR {test}")
    if required:
        # in any order, as a question names them in its own
        orders = itertools.permutations(required) if len(required) <= 3 else [required]
        must = " | ".join("(" + ' " AND " '.join(order) + ")" for order in orders)
        where = define("WHERE", f'" WHERE " ({must}) {next_test}~0..4')
    else:
        where = define("WHERE", f'" WHERE " {test} {next_test}~0..4') + "?"
    next_column = define("NEXT_COL", f'", " {column}')
    group = define("GROUP", f'" GROUP BY " {column} {next_column}~0..2 (" HAVING " {aggregate} CMP NUM)?')
    order_item = define("ORDER_ITEM", f'({column} | {aggregate} | ALIAS | /\\d/) (" ASC" | " DESC")?')
    next_order = define("NEXT_ORDER", f'", " {order_item}')
    order = define("ORDER", f'" ORDER BY " {order_item} {next_order}~0..2')
    select = f'"SELECT " "DISTINCT "? ("*" | {item} {next_item}~0..3)'
    before = define("ITEM_BEFORE", f'{item} ", "')

    grouping = define("GROUPING", f'{column} ", "')

    def select_with(value: str, *, first: bool) -> str:
        """A select list that holds `value`, rounded or not: after nothing but the columns a group is
        named by (`SELECT city, AVG(price)`), or among any items."""
        wanted = f'("ROUND(" {value} ", " /\\d/ ")" | {value}) (" AS " ALIAS)?'
        return f'"SELECT " {grouping if first else before}~0..3 {wanted} {next_item}~0..3'

    if focus.computation == "AVG":
        select = select_with(f'"AVG(" {argument}', first=True)
    elif focus.computation == "PERCENT":
        select = select_with(f'"100.0 * " {term} {next_term}~1..3', first=True)
    rest = f"{where} {group}? {order}? LIMIT?"
    query = f'{define("SELECT", select)} " FROM " {source} {rest}'
    if focus.computation in ("MAX", "MIN"):
        extreme = f'"{focus.computation}(" {arithmetic} ")"'
        by_value = f'{select_with(extreme, first=False)} " FROM " {source} {where} {group}?'
        direction = '" DESC"' if focus.computation == "MAX" else '" ASC"?'
        top_item = f"({column} | {aggregate} | ALIAS | /\\d/) {direction}"
        ordered = f'" ORDER BY " {top_item} {next_order}~0..2 LIMIT'
        by_order = f'{define("SELECT", select)} " FROM " {source} {where} {group}? {ordered}'
        query = f"{define('BY_VALUE', by_value)} | {define('BY_ORDER', by_order)}"
    return define("QUERY", query)


def _conditions(columns: list[_Written], literals: Literals | None) -> Iterable[str]:
    """One comparison per column, with what its kind of column may be compared with: any value, or
    with `literals`, only what the question speaks of."""
    numeric = [written.text for written in columns if written.column.kind in ("INTEGER", "REAL")]
    for written in columns:
        name, column = _literal(written.text), written.column
        where = (written.table, column.name)
        if column.kind in ("INTEGER", "REAL"):
            number = "NUM" if literals is None else _any_literal(literals.numbers)
            other = " | ".join(_literal(text) for text in numeric if text != written.text)
            than_column = f" | CMP ({other})" if other else ""
            yield f'{name} (CMP {number} | " BETWEEN " {number} " AND " {number} | NULL_TEST{than_column})'
        elif column.dates:
            yield from _date_conditions(name, literals, literals.dates.get(where, ()) if literals else ())
        else:
            if literals is None:
                values, like = column.values, "FREE"
            else:
                values, like = literals.values.get(where, ()), _like_patterns(literals.words)
            tests = ["NULL_TEST"]
            if values:
                value = _any_literal(f"'{value}'" for value in values)
                tests += [f"EQ {value}", f'" NOT"? " IN (" {value} (", " {value})~0..9 ")"']
            if like and not column.values:  # a few-valued column is tested by its values
                tests.append(f'" NOT"? " LIKE " {like}')
            subject = name if column.values else f'("LOWER(" {name} ")" | {name})'
            yield f"{subject} ({' | '.join(tests)})"


def _date_conditions(name: str, literals: Literals | None, starts: Sequence[str]) -> Iterable[str]:
    if literals is None:
        date, date_start, part_value = "DATE", "DATE_START", "/'[0-9-]{1,10}'/"
    elif starts:
        date = _any_literal(f"'{start}'" for start in starts)
        date_start = _any_literal(f"'{start}%'" for start in starts)
        parts = {start[5:7] for start in starts if len(start) >= 7} | {start[:4] for start in starts}
        part_value = _any_literal(f"'{part}'" for part in sorted(parts))
    else:
        yield f"{name} NULL_TEST"
        return
    between = f'" BETWEEN " {date} " AND " {date}'
    yield f'{name} (CMP {date} | {between} | " NOT"? " LIKE " {date_start} | NULL_TEST)'
    yield f'"strftime(" DATE_PART ", " {name} ")" CMP {part_value}'


def _like_patterns(words: Sequence[str]) -> str:
    """LIKE patterns that hold one of the question's words: '%word%' or 'word%'."""
    plain = [word for word in words if "'" not in word and '"' not in word]
    if not plain:
        return ""
    word = "(" + " | ".join(_literal(word) for word in plain) + ")"
    return f'"\'" "%"? {word} "%\'"'


def _any_literal(texts: Iterable[str]) -> str:
    return "(" + " | ".join(_literal(text) for text in dict.fromkeys(texts)) + ")"


def _joinable(tables: Sequence[DataTable]) -> Iterable[tuple[DataTable, DataTable, list[tuple[str, str]]]]:
    """Each ordered pair of tables where a text or id column of one holds values of a key column of
    the other (a column whose every value is different), with those column pairs. A table is not joined with
    one whose columns it has all (a folder's table and one of its files)."""
    values = {
        (table.name, column.name): [row[at] for row in table.rows if row[at] is not None]
        for table in tables
        for at, column in enumerate(table.columns)
        if column.kind == "TEXT" or column.name.endswith("id")
    }
    for left in tables:
        for right in tables:
            names_left = {column.name for column in left.columns}
            names_right = {column.name for column in right.columns}
            if left is right or names_left <= names_right or names_right <= names_left:
                continue
            keys = [
                (a.name, b.name)
                for a in left.columns
                for b in right.columns
                if _refers(values.get((left.name, a.name)), values.get((right.name, b.name)))
            ]
            if keys:
                yield left, right, keys


def _refers(column: list[object] | None, key: list[object] | None) -> bool:
    """Whether `key` is a key (every value different) that holds at least half of `column`'s values."""
    if not column or not key or len(key) < 2 or len(set(key)) != len(key):
        return False
    distinct = set(column)
    return len(distinct & set(key)) >= JOIN_SHARE * len(distinct)


def _literal(text: str) -> str:
    """A Lark string literal; the text holds no double quote or backslash (a JSON string's escapes)."""
    return json.dumps(text, ensure_ascii=False)
