"""The lines a search finds, kept as fields and written out only when the model is shown them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SEARCH_MATCH_LIMIT = 50
SEARCH_FILE_BYTES_LIMIT = 2_000_000  # bigger files are skipped when searching a directory
SECTION_NOTE = re.compile(r"  \(under (['\"]).*\1\)$", re.MULTILINE)  # a line's heading, as shown after it


@dataclass(frozen=True)
class FoundLine:
    path: str
    number: int
    text: str
    section: str | None = None  # the Markdown heading the line falls under
    # For a heading that matched: the first lines of its section. "# Expenses" matching a search
    # for expenses says nothing by itself; the rules under it are what the model looks for.
    below: tuple[tuple[int, str], ...] = ()

    def shown(self) -> str:
        where = "" if self.section is None else f"  (under {self.section!r})"
        lines = [f"{self.path}:{self.number}: {self.text}{where}"]
        lines.extend(f"  {number}: {text}" for number, text in self.below)
        return "\n".join(lines)

    def places(self) -> set[tuple[str, int]]:
        """The (path, line number) of every line this shows."""
        return {(self.path, self.number), *((self.path, number) for number, _ in self.below)}


@dataclass
class Search:
    results: list[FoundLine] = field(default_factory=list)
    searched: int = 0
    skipped_large: int = 0
    more: bool = False
    sections_left: int = 0  # headings still to be shown with their sections when they match
    matched: int = 0  # every matching line, shown or not: a count the model need not make itself

    @property
    def skipped(self) -> str:
        if not self.skipped_large:
            return ""
        return f" ({self.skipped_large} files over {SEARCH_FILE_BYTES_LIMIT:,} bytes skipped)"

    def paths(self) -> list[str]:
        return list(dict.fromkeys(line.path for line in self.results))

    def report(self, heading: str) -> str:
        files = len(self.paths())
        count = f"{self.matched} matching line{'s' * (self.matched != 1)}" + (
            f" in {files} files" if files > 1 else ""
        )
        lines = [f"{heading}{self.skipped} ({count}):", *(line.shown() for line in self.results)]
        if self.more:
            lines.append(
                f"[Shown: the first {SEARCH_MATCH_LIMIT} of the {self.matched} matching lines. "
                "Use a more specific pattern or a smaller path to see others.]"
            )
        return "\n".join(lines)
