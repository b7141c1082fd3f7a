"""The section a line of a text file sits in, whatever the kind of file.

One rule set for every file a search meets:
- a Markdown heading (`## Budget`) in a Markdown file, nested by its level;
- a table header (`[server]`, `[[jobs]]`) as INI and TOML write them;
- a less indented line that ends in ':' above an indented one (`database:` in YAML, `def total():` in
  Python, `Groceries:` over an indented list);
- the first line of a CSV or TSV file, which names every row's columns.

A search shows a matching line's section after it, and a matching line that opens a section with the
first lines below it: a key under `[server]` is what a search for "server" was after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SECTION_CHARS = 80
MARKDOWN_SUFFIXES = (".md", ".markdown")
TABLE_SUFFIXES = (".csv", ".tsv")
_MARKDOWN_HEADING = re.compile(r"(#{1,6})\s")
_TABLE_HEADER = re.compile(r"\s*\[{1,2}[^\[\]=]+\]{1,2}\s*(?:[#;].*)?")
_BLOCK_OPENER_CHARS = 100  # a longer line ending in ':' is a sentence, not a block's name


@dataclass
class Sections:
    """Reads a file's lines in order and says, for each, the section it sits in."""

    path: str
    _headings: list[tuple[int, str]] = field(default_factory=list)  # (level, heading text)
    _blocks: list[tuple[int, str]] = field(default_factory=list)  # (indentation, opener text)
    _line_number: int = 0

    def __post_init__(self) -> None:
        suffix = Path(self.path).suffix.lower()
        self._markdown = suffix in MARKDOWN_SUFFIXES
        self._table = suffix in TABLE_SUFFIXES

    def step(self, text: str) -> tuple[str | None, Opened | None]:
        """The section `text` sits in, and the section it opens itself, if any; then moves past it."""
        self._line_number += 1
        stripped = text.strip()
        if not stripped:
            return self.enclosing(), None
        if self._table:
            if self._line_number == 1:
                self._headings = [(0, stripped)]
                return None, Opened(None)
            return self.enclosing(), None
        level = self._heading_level(text)
        if level is not None:
            self._headings = [entry for entry in self._headings if entry[0] < level]
            self._headings.append((level, stripped))
            self._blocks = []
            return None, Opened(None)
        indent = len(text) - len(text.lstrip())
        self._blocks = [entry for entry in self._blocks if entry[0] < indent]
        section = self.enclosing()
        if stripped.endswith(":") and len(stripped) <= _BLOCK_OPENER_CHARS:
            self._blocks.append((indent, stripped))
            return section, Opened(indent)
        return section, None

    def enclosing(self) -> str | None:
        names = [text for _, text in self._headings] + [text for _, text in self._blocks]
        if not names:
            return None
        joined = " > ".join(names)
        return joined if len(joined) <= SECTION_CHARS else "…" + joined[-(SECTION_CHARS - 1) :].lstrip()

    def _heading_level(self, text: str) -> int | None:
        if self._markdown:
            heading = _MARKDOWN_HEADING.match(text)
            return len(heading.group(1)) if heading else None
        if _TABLE_HEADER.fullmatch(text):
            return 1
        return None


@dataclass(frozen=True)
class Opened:
    """A section a line opens: a heading's runs to the next heading, an indented block's to the next
    line indented no deeper than its opener (`indent`)."""

    indent: int | None

    def ended_by(self, text: str, is_heading: bool) -> bool:
        if is_heading:
            return True
        if self.indent is None or not text.strip():
            return False
        return len(text) - len(text.lstrip()) <= self.indent
