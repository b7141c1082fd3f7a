"""What set_key asks of each configuration file syntax (TOML, INI, YAML): parse a text with the
real parser, find where each key's value is written, and write a new value in that syntax."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any, Protocol

KeyPath = tuple[str, ...]  # a key's names, from the top: ("server", "timeout")


@dataclass(frozen=True)
class Place:
    """Where one key's value is written: characters start to end of the text, without the
    quotes' surroundings, its comment or its line ending."""

    path: KeyPath
    start: int
    end: int
    # Why set_key does not rewrite this value (it runs over several lines, say); None: it may.
    refusal: str | None = None


class Unparsable(Exception):
    """The text does not parse; the message is the parser's reason, on one line."""


class WrongKind(Exception):
    """The new value is not of the kind the key holds; the message names that kind ("a number")."""


class ConfigSyntax(Protocol):
    name: str  # "TOML"
    suffixes: tuple[str, ...]  # (".toml",)

    def parse(self, text: str) -> Any:
        """The parsed text, as the real parser gives it; raises Unparsable."""

    def places(self, text: str) -> list[Place]:
        """Where each key that has a line of its own is written, in the order of the file."""

    def written(self, old: Any, old_source: str, value: str) -> tuple[Any, str]:
        """The value the key will hold and the text that writes it, for the key that holds `old`,
        written as `old_source`; raises WrongKind."""


MULTI_LINE = "its value runs over several lines"


def lines_with_offsets(text: str) -> Iterator[tuple[int, str]]:
    """Each line's offset in the text and the line without its ending; only a line feed ends a line,
    as in the parsers (str.splitlines would also end one at a form feed)."""
    offset = 0
    for line in text.split("\n"):
        yield offset, line.removesuffix("\r")
        offset += len(line) + 1


def one_line(message: object) -> str:
    return " ".join(str(message).split())


def same_kind(old: Any, new: Any) -> bool:
    """Whether `new` may replace `old` without changing what kind of value the key holds: a
    number stays a number (an int may become a float), true or false stays a bool, a date a date."""
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool)
    if isinstance(old, int | float):
        return isinstance(new, int | float)
    if isinstance(old, date | time):
        return _time_kind(old) == _time_kind(new)
    return isinstance(new, type(old))


def kind_name(old: Any) -> str:
    if isinstance(old, bool):
        return "true or false"
    if isinstance(old, int | float):
        return "a number"
    if isinstance(old, date | time):
        return f"a {_time_kind(old)}"
    return "text"


def _time_kind(value: Any) -> str | None:
    if isinstance(value, datetime):
        return "date and time"
    if isinstance(value, date):
        return "date"
    return "time" if isinstance(value, time) else None
