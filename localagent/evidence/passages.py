"""A file cut into passages: a few neighbouring lines each, with the heading, section or table header
they fall under, so a passage read alone still says what it is about.

The outline comes from the file's own structure: Markdown headings, INI and TOML sections, LaTeX
sections, a CSV file's header row, and for indented files (YAML, Python) the less indented `key:` or
`def ...:` lines above. A blank line or a heading ends a passage, and so does its size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

PASSAGE_LINES = 6  # most lines in one passage
PASSAGE_CHARS = 600  # most characters in one passage (a log line is long)
LINE_CHARS = 300  # a longer line is cut in the passage's text
CONTEXT_CHARS = 80

_MARKDOWN_HEADING = re.compile(r"(#{1,6})\s+\S")
_SECTION = re.compile(r"\[\[?[^\]]+\]\]?\s*(?:[;#].*)?")  # INI and TOML
_LATEX_SECTION = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\{")
_LATEX_LEVELS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4, "paragraph": 5}
_OPENS_BLOCK = re.compile(r"[^#\s][^#]*:\s*(?:#.*)?")  # `key:` or `def f():`, a line that opens a block
_OPENING_INDENT = 4  # in an indented file, a block opened at most this deep starts a passage
_JSON_STRUCTURE = re.compile(r"[\[\]{},]+")
_TABLE_SUFFIXES = (".csv", ".tsv")
_SECTIONED_SUFFIXES = (".ini", ".cfg", ".toml", ".conf")
_INDENTED_SUFFIXES = (".yaml", ".yml", ".py", ".pyi")


@dataclass(frozen=True)
class Passage:
    path: str
    first_line: int  # 1-based
    last_line: int
    context: str  # the heading, section or header the lines fall under; "" for none
    text: str  # the lines, one per line, each cut at LINE_CHARS


def split_passages(path: str, text: str) -> list[Passage]:
    """The passages of a file, in order; every line that holds something is in exactly one."""
    lines = text.splitlines()
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in _TABLE_SUFFIXES:
        return _table_rows(path, lines)
    outline = _Outline(suffix)
    passages: list[Passage] = []
    block: list[tuple[int, str]] = []
    block_context = ""

    def close() -> None:
        if block:
            passages.append(_passage(path, block, block_context))
            block.clear()

    for number, line in enumerate(lines, start=1):
        if not line.strip() or outline.is_structure(line):
            close()
            continue
        heading = outline.read(line)
        if heading or _full(block, line):
            close()
        if not block:
            block_context = outline.context(exclude=line)
        block.append((number, line))
    close()
    return passages


def _full(block: list[tuple[int, str]], line: str) -> bool:
    size = sum(len(text) for _, text in block) + len(line)
    return len(block) >= PASSAGE_LINES or (bool(block) and size > PASSAGE_CHARS)


def _passage(path: str, block: list[tuple[int, str]], context: str) -> Passage:
    text = "\n".join(_cut(line.rstrip(), LINE_CHARS) for _, line in block)
    return Passage(path, block[0][0], block[-1][0], context, text)


def _table_rows(path: str, lines: list[str]) -> list[Passage]:
    """One passage per row of a CSV or TSV file, under its header row."""
    header = next((line for line in lines if line.strip()), "")
    context = _cut(header.strip(), CONTEXT_CHARS * 2)
    return [
        Passage(path, number, number, context, _cut(line.rstrip(), LINE_CHARS))
        for number, line in enumerate(lines, start=1)
        if line.strip() and line != header
    ]


class _Outline:
    """The headings above the current line, by level, as a file of one kind is read line by line."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix
        self.headings: list[tuple[float, str]] = []  # (level, text), outermost first
        self.record_opened = False

    def read(self, line: str) -> bool:
        """Take a line; True when it is a heading (it then opens the next passage)."""
        if self.suffix == ".json":
            if self.record_opened:
                self.headings = [(0.0, _cut(line.strip().rstrip(","), CONTEXT_CHARS))]
                self.record_opened = False
            return False
        level = self._level(line)
        indented = self.suffix in _INDENTED_SUFFIXES
        if indented:
            indent = len(line) - len(line.lstrip())
            self.headings = [(lvl, text) for lvl, text in self.headings if lvl < indent]
        if level is None:
            return False
        self.headings = [(lvl, text) for lvl, text in self.headings if lvl < level]
        self.headings.append((level, _cut(line.strip(), CONTEXT_CHARS)))
        return not indented or level <= _OPENING_INDENT

    def is_structure(self, line: str) -> bool:
        """A JSON line of brackets alone, which ends a record's passage; the next record's first field
        becomes the context of the passages of that record."""
        if self.suffix != ".json" or not _JSON_STRUCTURE.fullmatch(line.strip()):
            return False
        if line.strip().startswith(("{", "[")):
            self.headings = []
            self.record_opened = True
        return True

    def context(self, exclude: str) -> str:
        """The headings above, the innermost two, leaving out the line `exclude` (a passage's first)."""
        first = _cut(exclude.strip().rstrip(","), CONTEXT_CHARS)
        texts = [text for _, text in self.headings if text not in (first, exclude.strip())]
        return " > ".join(texts[-2:])

    def _level(self, line: str) -> float | None:
        stripped = line.strip()
        suffix = self.suffix
        if suffix in (".md", ".markdown"):
            match = _MARKDOWN_HEADING.match(line)
            return float(len(match.group(1))) if match else None
        if suffix in _SECTIONED_SUFFIXES:
            return 0.0 if _SECTION.fullmatch(stripped) else None
        if suffix in (".tex", ".sty"):
            match = _LATEX_SECTION.match(stripped)
            return float(_LATEX_LEVELS[match.group(1)]) if match else None
        if suffix in _INDENTED_SUFFIXES:
            if _OPENS_BLOCK.fullmatch(stripped) and not stripped.startswith(("-", "return", "else")):
                return float(len(line) - len(line.lstrip()))
            return None
        match = _MARKDOWN_HEADING.match(line)  # plain text often uses Markdown headings too
        return float(len(match.group(1))) if match else None


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
