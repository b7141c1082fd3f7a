"""An index of the workspace's text: SQLite FTS5 over its passages, ranked by bm25.

The index of a folder is kept on disk, one database per workspace, and brought up to date at every
run by each file's size and modification time: only files that changed are read again. Where the
disk cannot hold it (a read-only cache, a locked database), the index is built in memory instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import stat
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from localagent.core.paths import cache_dir
from localagent.evidence.passages import Passage, split_passages
from localagent.tools.walk import workspace_paths
from localagent.tools.workspace import Workspace

INDEXED_FILES = 5000  # a bigger folder (a home folder) is indexed as far as this
INDEXED_BYTES = 2_000_000  # a bigger file is left out
KEPT_INDEXES = 64  # index databases kept on disk, the least recently used going first
_SCHEMA_VERSION = "1"
# Porter stemming folds "restarted" into "restart"; remove_diacritics folds "Zürich" into "zurich".
_TOKENIZER = "porter unicode61 remove_diacritics 2"
_BINARY_SNIFF = 8192
_WORD_SPLIT = re.compile(r"[^\w]+|_")


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float  # bm25: lower is better


class WorkspaceIndex:
    """The passages of one workspace's text files, searchable by words once `refresh` has read them."""

    def __init__(self, workspace: Workspace, *, on_disk: bool = True) -> None:
        self.workspace = workspace
        self._db = _open(workspace.root, on_disk)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> WorkspaceIndex:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def refresh(self, hidden: Collection[Path] = ()) -> None:
        """Read again every file whose size or modification time changed; forget deleted ones, and
        the `hidden` ones (the run's own transcript, which would quote earlier answers as evidence)."""
        _, paths = workspace_paths(self.workspace, INDEXED_FILES)
        left_out = {
            self.workspace.relative(real)
            for real in map(Path.resolve, hidden)
            if self.workspace.contains(real)
        }
        paths = [path for path in paths if path not in left_out]
        known = dict(self._db.execute("SELECT path, version FROM files").fetchall())
        seen: set[str] = set()
        with self._db:
            for path in paths:
                version = _version(self.workspace.root / path)
                if version is None:
                    continue
                seen.add(path)
                if known.get(path) == version:
                    continue
                self._forget(path)
                self._db.execute("INSERT INTO files VALUES (?, ?)", (path, version))
                text = _text(self.workspace.root / path)
                if text is not None:
                    self._add(split_passages(path, text))
            for path in set(known) - seen:
                self._forget(path)

    def search(self, terms: Sequence[str], limit: int = 20, required: Sequence[str] = ()) -> list[Hit]:
        """The passages that hold any of `terms` (words or phrases), and each of `required`, best first."""
        query = " OR ".join(_phrase(term) for term in terms if _phrase(term))
        must = " AND ".join(_phrase(term) for term in required if _phrase(term))
        if must:
            query = f"({must}) AND ({query})" if query else must
        if not query:
            return []
        rows = self._db.execute(
            "SELECT path, first_line, last_line, context, text, bm25(passages, 0.5, 1.0, 0.6) AS score "
            "FROM passages WHERE passages MATCH ? ORDER BY score LIMIT ?",
            (query, limit),
        ).fetchall()
        return [
            Hit(Passage(path, first, last, context, text), score)
            for path, first, last, context, text, score in rows
        ]

    def holds(self, term: str) -> bool:
        """Whether any file's text, section or name holds the word or phrase."""
        phrase = _phrase(term)
        if not phrase:
            return True
        row = self._db.execute("SELECT 1 FROM passages WHERE passages MATCH ? LIMIT 1", (phrase,)).fetchone()
        return row is not None or self._names_hold(term)

    def line_counts(self, term: str, limit: int = 3) -> list[tuple[str, int]]:
        """The files with the most lines that hold `term` as a word, and how many each: exact, read
        from the files, in the term's case when it has capitals (as ripgrep's smart case)."""
        phrase = _phrase(term)
        if not phrase:
            return []
        paths = [
            path
            for (path,) in self._db.execute(
                "SELECT DISTINCT path FROM passages WHERE passages MATCH ?", (phrase,)
            )
        ]
        flags = 0 if any(char.isupper() for char in term) else re.IGNORECASE
        pattern = re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", flags)
        counts = []
        for path in paths:
            text = _text(self.workspace.root / path)
            found = sum(1 for line in (text or "").splitlines() if pattern.search(line))
            if found:
                counts.append((path, found))
        return sorted(counts, key=lambda item: -item[1])[:limit]

    def _names_hold(self, term: str) -> bool:
        words = _words(term)
        return any(
            all(word in _words(path) for word in words)
            for (path,) in self._db.execute("SELECT path FROM files")
        )

    def _forget(self, path: str) -> None:
        self._db.execute("DELETE FROM files WHERE path = ?", (path,))
        self._db.execute("DELETE FROM passages WHERE path = ?", (path,))

    def _add(self, passages: Iterable[Passage]) -> None:
        self._db.executemany(
            "INSERT INTO passages (name, context, text, path, first_line, last_line) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            ((_name_words(p.path), p.context, p.text, p.path, p.first_line, p.last_line) for p in passages),
        )


def _open(root: Path, on_disk: bool) -> sqlite3.Connection:
    if on_disk:
        with contextlib.suppress(OSError, sqlite3.Error):
            return _prepared(sqlite3.connect(_database_path(root), timeout=5, check_same_thread=False))
    return _prepared(sqlite3.connect(":memory:", check_same_thread=False))


def _prepared(db: sqlite3.Connection) -> sqlite3.Connection:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if str(version) != _SCHEMA_VERSION:
        with db:
            db.execute("DROP TABLE IF EXISTS files")
            db.execute("DROP TABLE IF EXISTS passages")
    with db:
        db.execute("CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, version TEXT)")
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5("
            "name, context, text, path UNINDEXED, first_line UNINDEXED, last_line UNINDEXED, "
            f"tokenize = '{_TOKENIZER}')"
        )
        db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
    return db


def _database_path(root: Path) -> Path:
    folder = cache_dir("index")
    folder.mkdir(parents=True, exist_ok=True)
    _prune(folder)
    path = folder / f"{hashlib.sha256(str(root).encode()).hexdigest()[:24]}.sqlite"
    with contextlib.suppress(OSError):
        os.utime(path)  # the least recently used go first
    return path


def _prune(folder: Path) -> None:
    databases = sorted(folder.glob("*.sqlite"), key=lambda p: _mtime(p), reverse=True)
    for old in databases[KEPT_INDEXES:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()


def _version(real: Path) -> str | None:
    try:
        status = real.stat()
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return None
    return f"{status.st_size}:{status.st_mtime_ns}"


def _text(real: Path) -> str | None:
    """The file's text, or None for a binary or too big a file."""
    try:
        if real.stat().st_size > INDEXED_BYTES:
            return None
        data = real.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:_BINARY_SNIFF]:
        return None
    return data.decode("utf-8", errors="replace")


def _words(text: str) -> list[str]:
    return [word for word in _WORD_SPLIT.split(text.lower()) if word]


def _name_words(path: str) -> str:
    """A path's words: `notes/2024-03-04-board.md` is found by "board" and "notes"."""
    return " ".join(_words(path))


def _phrase(term: str) -> str:
    """An FTS5 phrase of the term's words ("" when it has none): `K-7731` matches "K 7731" too."""
    words = _words(term)
    return '"' + " ".join(words) + '"' if words else ""
