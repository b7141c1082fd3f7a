"""A data file's column names and rows, every cell as text: a CSV file (or TSV, or another
delimiter its header shows) or a JSON file that holds a list of records."""

from __future__ import annotations

import csv
import io
import json
import stat

from localagent.tools.base import ToolError
from localagent.tools.workspace import Workspace

DATA_BYTES_LIMIT = 5_000_000  # a bigger file is not loaded
HEADER_CHARS = 65_536  # where to look for a CSV file's column names


def read_records(
    workspace: Workspace, path: str, *, header_only: bool = False
) -> tuple[list[str], list[list[str]]]:
    """A data file's column names and rows, every cell as text ('' for none); with `header_only`, a
    CSV file's column names are read from its start alone."""
    real = workspace.resolve(path)
    try:
        status = real.stat()
        if not stat.S_ISREG(status.st_mode):
            raise ToolError(f"{path} is not a regular file.")
        if status.st_size > DATA_BYTES_LIMIT:
            raise ToolError(
                f"{path} is larger than {DATA_BYTES_LIMIT // 1_000_000} MB; it cannot be queried."
            )
        is_json = path.lower().endswith(".json")
        with real.open(encoding="utf-8-sig", errors="replace", newline="") as file:
            text = file.read(HEADER_CHARS if header_only and not is_json else -1)
    except OSError as error:
        raise ToolError(f"Cannot read {path}: {error.strerror}.") from None
    return _json_records(path, text) if is_json else _csv_records(path, text)


def _csv_records(path: str, text: str) -> tuple[list[str], list[list[str]]]:
    first_line = text.split("\n", 1)[0]
    # The header tells the delimiter; csv.Sniffer guesses wrong on rows of uneven length.
    delimiter = max(",;\t|", key=first_line.count)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    records = [row for row in reader if any(cell.strip() for cell in row)]
    if not records:
        raise ToolError(f"{path} is empty; it has no column names to query.")
    header = _column_names(records[0])
    width = len(header)
    return header, [[cell.strip() for cell in (row + [""] * width)[:width]] for row in records[1:]]


def _json_records(path: str, text: str) -> tuple[list[str], list[list[str]]]:
    """The records of a JSON file: a list of objects, or the one list of objects in an object."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ToolError(f"{path} is not valid JSON.") from None
    if isinstance(data, dict):
        lists = [value for value in data.values() if _is_records(value)]
        data = lists[0] if len(lists) == 1 else None
    if not _is_records(data):
        raise ToolError(f"{path} does not hold a list of records.")
    records = [_flattened(record) for record in data]
    keys = list(dict.fromkeys(key for record in records for key in record))
    return _column_names(keys), [[_json_cell(record.get(key)) for key in keys] for record in records]


def _flattened(record: dict[str, object]) -> dict[str, object]:
    """A record whose nested objects' fields are fields of its own: {"contact": {"email": …}} has
    the field contact_email."""
    flat: dict[str, object] = {}
    for key, value in record.items():
        if isinstance(value, dict) and value:
            flat.update({f"{key}_{inner}": item for inner, item in _flattened(value).items()})
        else:
            flat[key] = value
    return flat


def _is_records(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def _json_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _column_names(cells: list[str]) -> list[str]:
    names: list[str] = []
    for index, cell in enumerate(cells, start=1):
        name = cell.strip() or f"column{index}"
        while name.lower() in (taken.lower() for taken in names):
            name = f"{name}_{index}"
        names.append(name)
    return names
