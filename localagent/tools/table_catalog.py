"""The workspace's data as SQL tables: what each table is called, where it comes from, its columns and
their kinds, the few values of a column that has few, and its rows.

Tables come from CSV and TSV files, JSON files that hold a list of records (a nested object's fields
become columns of their own: `contact_email`), BibTeX files (a row per entry), Markdown pipe tables
and Markdown task lists (a row per item, with a `done` column), and a folder of CSV files with the
same columns (one table with a `file` column). Every name is a plain SQL name, so a query needs no
quotes: `orders/2023-07.csv` is `orders_2023_07`, `Unit price` is `unit_price`.

The catalog is read again only when a file changed (by size and modification time).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from localagent.tools.base import ToolError
from localagent.tools.bibtex import bibtex_records
from localagent.tools.data_records import DATA_BYTES_LIMIT, read_records
from localagent.tools.markdown_tables import TASK_COLUMNS, pipe_tables, task_rows
from localagent.tools.walk import workspace_paths
from localagent.tools.workspace import Workspace

DATA_FILE_LIMIT = 100  # data files a workspace may offer as tables
MARKDOWN_FILE_LIMIT = 300  # Markdown files looked into for tables and task lists
WALK_FILE_LIMIT = 5000  # files looked at while looking for them, so a home folder is not walked whole
FEW_VALUES = 20  # a text column with at most this many distinct values has them listed
VALUE_CHARS = 40  # ... each at most this long
_DATA_SUFFIXES = (".csv", ".tsv", ".json", ".bib")
_MARKDOWN_SUFFIXES = (".md", ".markdown")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?")
_INTEGER = re.compile(r"[-+]?\d+")
_GROUPED = re.compile(r"[-+]?[€$£¥]?\s?\d{1,3}(?:,\d{3})+(?:\.\d+)?")  # 1,234.50
_MONEY = re.compile(r"[-+]?[€$£¥]\s?\d+(?:\.\d+)?")
_SAFE_VALUE = re.compile(r"[^'\"\\\x00-\x1f]+")  # a value the grammar can write between quotes
# The SQLite keywords that cannot stand bare as a table or column name (each tried in SQLite 3), and
# the current_* that read as today's date: such a name gets a _ after it, so a query needs no quotes.
_RESERVED = frozenset(
    """
    add all alter and as autoincrement between case cast check collate commit constraint create
    current_date current_time current_timestamp default deferrable delete distinct drop else escape
    except exists foreign from group having in index insert intersect into is isnull join limit not
    nothing notnull null on or order primary raise references returning select set table then to
    transaction union unique update using values when where
    """.split()  # noqa: SIM905 - a word list reads best as words
)


@dataclass(frozen=True)
class Column:
    name: str  # its SQL name
    kind: str  # INTEGER, REAL or TEXT
    values: tuple[str, ...] = ()  # a text column's distinct values, when it has few
    dates: bool = False  # every value is an ISO date, with or without a time


@dataclass(frozen=True)
class DataTable:
    name: str  # its SQL name
    source: str  # what it is read from, as the model is told
    columns: tuple[Column, ...]
    rows: tuple[tuple[object, ...], ...]
    origin: str = ""  # the file it is read from, or its folder's path and a "/"

    def column(self, name: str) -> Column | None:
        return next((column for column in self.columns if column.name == name), None)


@dataclass(frozen=True)
class _Raw:
    """A table as read, before names and kinds: every cell text."""

    stem: str  # what its SQL name is made from
    folder: str  # the folder of its file, to tell apart tables of the same stem
    source: str
    header: list[str]
    rows: list[list[str]]
    path: str  # its file, or its folder's path and a "/"


_cache: dict[str, tuple[tuple[tuple[str, str], ...], list[DataTable]]] = {}


def workspace_tables(workspace: Workspace) -> list[DataTable]:
    """The tables of the workspace's data, read again when a file changed."""
    candidates = _candidate_files(workspace)
    versions = tuple((path, _version(workspace, path)) for path in candidates)
    key = str(workspace.root)
    cached = _cache.get(key)
    if cached is not None and cached[0] == versions:
        return cached[1]
    tables = _named(_read_all(workspace, candidates))
    _cache.clear()  # one workspace at a time is plenty
    _cache[key] = (versions, tables)
    return tables


def _candidate_files(workspace: Workspace) -> list[str]:
    _, files = workspace_paths(workspace, WALK_FILE_LIMIT)
    data = sorted(path for path in files if path.lower().endswith(_DATA_SUFFIXES))
    # Markdown files come after the data files, so that notes without a table take no data file's place.
    markdown = sorted(path for path in files if path.lower().endswith(_MARKDOWN_SUFFIXES))
    return data[:DATA_FILE_LIMIT] + markdown[:MARKDOWN_FILE_LIMIT]


def _version(workspace: Workspace, path: str) -> str:
    try:
        status = (workspace.root / path).stat()
    except OSError:
        return ""
    return f"{status.st_size}:{status.st_mtime_ns}"


def _read_all(workspace: Workspace, paths: Sequence[str]) -> list[_Raw]:
    raws: list[_Raw] = []
    for path in paths:
        try:
            raws.extend(_read(workspace, path))
        except (ToolError, OSError, UnicodeError):
            continue
    return _with_folders(raws) + raws


def _read(workspace: Workspace, path: str) -> list[_Raw]:
    pure = PurePosixPath(path)
    suffix, stem, folder = pure.suffix.lower(), pure.stem, str(pure.parent)
    if suffix in (".csv", ".tsv", ".json"):
        header, rows = read_records(workspace, path)
        return [_Raw(stem, folder, path, header, rows, path)] if header and rows else []
    text = _small_text(workspace, path)
    if suffix == ".bib":
        header, rows = bibtex_records(text)
        return [_Raw(stem, folder, f"{path} (a row per entry)", header, rows, path)] if rows else []
    tables = pipe_tables(text)
    tasks = task_rows(text)
    raws = []
    if tasks:
        name = stem if not tables else f"{stem}_tasks"
        raws.append(
            _Raw(name, folder, f"{path} (its task list, a row per item)", list(TASK_COLUMNS), tasks, path)
        )
    for number, table in enumerate(tables, start=1):
        name = stem if len(tables) == 1 and not tasks else f"{stem}_{table.heading or number}"
        under = f" under '{table.heading}'" if table.heading else ""
        raws.append(_Raw(name, folder, f"{path} (the table{under})", table.header, table.rows, path))
    return raws


def _small_text(workspace: Workspace, path: str) -> str:
    real = workspace.resolve(path)
    status = real.stat()
    if not stat.S_ISREG(status.st_mode) or status.st_size > DATA_BYTES_LIMIT:
        raise ToolError(f"{path} is not a small regular file.")
    return real.read_text(encoding="utf-8-sig", errors="replace")


def _with_folders(raws: list[_Raw]) -> list[_Raw]:
    """A table for each folder of two or more CSV files with the same columns, with a column `file`."""
    by_folder: dict[tuple[str, tuple[str, ...]], list[_Raw]] = {}
    for raw in raws:
        if raw.path.lower().endswith((".csv", ".tsv")) and raw.folder != ".":
            by_folder.setdefault((raw.folder, tuple(raw.header)), []).append(raw)
    folders = []
    for (folder, header), members in by_folder.items():
        if len(members) < 2 or "file" in (name.lower() for name in header):
            continue
        rows = [[member.path, *row] for member in members for row in member.rows]
        source = f"the {len(members)} files of {folder}/ in one, with a column file"
        folders.append(
            _Raw(
                PurePosixPath(folder).name,
                str(PurePosixPath(folder).parent),
                source,
                ["file", *header],
                rows,
                f"{folder}/",
            )
        )
    return folders


def _named(raws: Iterable[_Raw]) -> list[DataTable]:
    tables: list[DataTable] = []
    taken: set[str] = set()
    for raw in raws:
        name = _table_name(raw, taken)
        taken.add(name)
        names = _column_names(raw.header)
        width = len(names)
        cells = [(row + [""] * width)[:width] for row in raw.rows]
        columns = tuple(_column(name, [row[at] for row in cells]) for at, name in enumerate(names))
        rows = tuple(tuple(_typed(row[at], columns[at].kind) for at in range(width)) for row in cells)
        tables.append(DataTable(name, raw.source, columns, rows, raw.path))
    return tables


def sql_name(text: str) -> str:
    """A plain SQL name for a file stem or a column's heading: lowercase words joined by _."""
    return "_".join(re.findall(r"[a-z0-9]+", text.lower()))


def _table_name(raw: _Raw, taken: set[str]) -> str:
    name = sql_name(raw.stem) or "table"
    folder = sql_name(PurePosixPath(raw.folder).name) if raw.folder != "." else ""
    if (name[0].isdigit() or name in taken or name in _RESERVED) and folder:
        name = f"{folder}_{name}"
    if name[0].isdigit() or name in _RESERVED:
        name = f"t_{name}"
    base, number = name, 2
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    return name


def _column_names(header: Sequence[str]) -> list[str]:
    names: list[str] = []
    for at, cell in enumerate(header, start=1):
        name = sql_name(cell) or f"column{at}"
        if name[0].isdigit():
            name = f"c_{name}"
        if name in _RESERVED:
            name = f"{name}_"
        base, number = name, 2
        while name in names:
            name, number = f"{base}_{number}", number + 1
        names.append(name)
    return names


def _column(name: str, cells: list[str]) -> Column:
    present = [cell for cell in cells if cell != ""]
    if present and all(_INTEGER.fullmatch(cell) for cell in present):
        return Column(name, "INTEGER")
    if present and all(_number(cell) is not None for cell in present):
        return Column(name, "REAL")
    distinct = sorted(set(present))
    few = len(distinct) <= FEW_VALUES and all(
        len(value) <= VALUE_CHARS and _SAFE_VALUE.fullmatch(value) for value in distinct
    )
    dates = bool(present) and all(_DATE.fullmatch(cell) for cell in present)
    return Column(name, "TEXT", tuple(distinct) if few and not dates else (), dates)


def _number(cell: str) -> float | None:
    """A cell's number: 12.5, 1,234.50, €12 or 12%; None for any other text."""
    text = cell.strip().removesuffix("%").strip()
    if _GROUPED.fullmatch(text) or _MONEY.fullmatch(text):
        text = re.sub(r"[€$£¥,\s]", "", text)
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _typed(cell: str, kind: str) -> object:
    if cell == "":
        return None
    if kind == "INTEGER":
        return int(cell)
    if kind == "REAL":
        return _number(cell)
    return cell
