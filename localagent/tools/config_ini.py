"""INI for set_key: where each key's value is written, found by reading the file's lines as
configparser does, and parsed by configparser with comments after a value (` ; …`, ` # …`)."""

from __future__ import annotations

import configparser
import re
from dataclasses import replace
from typing import Any

from localagent.tools.config_syntax import (
    MULTI_LINE,
    KeyPath,
    Place,
    Unparsable,
    lines_with_offsets,
    one_line,
)

_COMMENT_PREFIXES = ("#", ";")
_TOP = "\0top"  # a section no file has, holding the keys before the file's first section
_NO_DEFAULTS = "\0defaults"  # so that [DEFAULT] is a section like any other, its keys its own
_SECTION = re.compile(r"\[(?P<name>.+)\]")  # configparser's own, matched at the line's start
_DELIMITER = re.compile(r"[=:]")


class IniSyntax:
    name = "INI"
    suffixes = (".ini", ".cfg", ".conf")

    def parse(self, text: str) -> Any:
        parser = configparser.ConfigParser(
            interpolation=None,
            inline_comment_prefixes=_COMMENT_PREFIXES,
            default_section=_NO_DEFAULTS,
            allow_no_value=True,
        )
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
        try:
            parser.read_string(f"[{_TOP}]\n{text}")
        except configparser.Error as error:
            raise Unparsable(_reason(error)) from None
        except AttributeError:  # configparser's own failure on an indented line below a bare key
            raise Unparsable("an indented line follows a key that has no value") from None
        data: dict[str, Any] = {}
        for section in parser.sections():
            options = dict(parser.items(section, raw=True))
            if section != _TOP:
                data[section] = options
                continue
            clash = next((name for name in options if parser.has_section(name)), None)
            if clash is not None:
                raise Unparsable(f"the key {clash!r} before the first section is also a section's name")
            data.update(options)
        return data

    def places(self, text: str) -> list[Place]:
        found: list[Place] = []
        section: KeyPath = ()
        continued: int | None = None  # the place whose value deeper-indented lines go on with
        key_indent = 0
        for offset, line in lines_with_offsets(text):
            content = line[: _comment_start(line)]
            if not content.strip():
                continue
            indent = len(content) - len(content.lstrip())
            if continued is not None and indent > key_indent:
                found[continued] = replace(found[continued], refusal=MULTI_LINE)
                continue
            continued, key_indent = None, indent
            if header := _SECTION.match(content.strip()):
                section = (header["name"],)
                continue
            delimiter = _DELIMITER.search(content)
            if delimiter is None:
                continue  # a key without a value
            after = content[delimiter.end() :]
            start = offset + delimiter.end() + len(after) - len(after.lstrip())
            end = max(start, offset + len(content.rstrip()))
            found.append(Place((*section, content[: delimiter.start()].strip()), start, end))
            continued = len(found) - 1
        return found

    def written(self, old: Any, old_source: str, value: str) -> tuple[Any, str]:
        return value, value  # every INI value is text, written as it is


def _comment_start(line: str) -> int:
    """Where configparser's comment starts in the line: a whole line after '#' or ';', or a '#' or
    ';' after a space; the line's length when it has none."""
    if line.strip().startswith(_COMMENT_PREFIXES):
        return 0
    starts = [
        match.start()
        for match in re.finditer(r"[#;]", line)
        if match.start() == 0 or line[match.start() - 1].isspace()
    ]
    return min(starts, default=len(line))


def _reason(error: configparser.Error) -> str:
    """configparser's reason in one line, with the file's own line numbers (the parsed text has a
    line before them)."""
    if isinstance(error, configparser.ParsingError):
        line_number, line = error.errors[0]
        return f"line {line_number - 1} is no key, section or comment: {one_line(line)}"
    if isinstance(error, configparser.DuplicateOptionError | configparser.DuplicateSectionError):
        where = "before the first section" if error.section == _TOP else f"in [{error.section}]"
        what = (
            f"the key {error.option!r} {where}"
            if isinstance(error, configparser.DuplicateOptionError)
            else f"the section [{error.section}]"
        )
        return f"{what} is there twice (again at line {(error.lineno or 1) - 1})"
    return one_line(error.message)
