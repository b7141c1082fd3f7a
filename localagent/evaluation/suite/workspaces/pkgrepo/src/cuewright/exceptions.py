"""The exceptions cuewright raises.

Every exception derives from :class:`CuewrightError`, so ``except CuewrightError`` catches anything
the library raises on purpose. Each class carries a stable error ``code`` (``CW`` and three digits)
that also appears in validation reports and in the command line's output:

    CW1xx  reading a file: encodings, timecodes, the structure of a cue
    CW2xx  validation: timing and length rules (see docs/validation.md)
    CW3xx  format-specific problems (WebVTT headers, unsupported blocks)

Codes are never reused: a removed error keeps its number retired.
"""

from __future__ import annotations


class CuewrightError(Exception):
    """Base class of every error cuewright raises."""

    code = "CW000"

    def __init__(self, message: str, *, line: int | None = None, index: int | None = None) -> None:
        self.message = message
        self.line = line  # 1-based line in the source file, when known
        self.index = index  # 1-based cue number, when known
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"cue {self.index}")
        if self.line is not None:
            where.append(f"line {self.line}")
        prefix = f"[{self.code}] "
        return prefix + (f"{', '.join(where)}: {self.message}" if where else self.message)


# ---------------------------------------------------------------------------------------------
# CW1xx: reading


class ParseError(CuewrightError):
    """A file that is not valid SRT or WebVTT: a missing blank line, a cue without a timing line."""

    code = "CW101"


class TimecodeError(ParseError):
    """A timecode that cannot be read, such as ``00:61:00,000`` or ``1:02:03``.

    Hours may have more than two digits only in WebVTT; minutes and seconds must be below 60.
    """

    code = "CW102"


class EncodingError(ParseError):
    """The file's bytes could not be decoded with the given encoding or any fallback encoding."""

    code = "CW103"


# CW104 was DuplicateIndexError, removed in 2.0.0: duplicate SRT numbers are renumbered instead.


# ---------------------------------------------------------------------------------------------
# CW2xx: validation


class ValidationError(CuewrightError):
    """Raised by ``validate(..., strict=True)`` for the first problem found.

    In the default, non-strict mode the same problems are returned as a list of
    :class:`cuewright.validate.Problem` and nothing is raised.
    """

    code = "CW200"


class CueTimingError(ValidationError):
    """A cue ends before it starts, or starts and ends at the same time."""

    code = "CW201"


class OverlapError(ValidationError):
    """A cue starts before the previous cue has ended (or within the minimum gap after it)."""

    code = "CW202"


class CueTooLongError(ValidationError):
    """A cue stays on screen longer than the ``max_duration_ms`` rule allows."""

    code = "CW203"


class EmptyCueError(ValidationError):
    """A cue has a timing line but no text, or only whitespace and formatting tags."""

    code = "CW204"


# ---------------------------------------------------------------------------------------------
# CW3xx: format-specific


class MissingHeaderError(ParseError):
    """A WebVTT file that does not start with the ``WEBVTT`` signature line."""

    code = "CW301"


class UnsupportedBlockError(ParseError):
    """A WebVTT block cuewright does not understand (anything but cues, NOTE, STYLE and REGION).

    Only raised with ``parse_vtt(..., strict=True)``; otherwise the block is skipped with a warning.
    """

    code = "CW302"


ERROR_CODES: dict[str, type[CuewrightError]] = {
    cls.code: cls
    for cls in (
        CuewrightError,
        ParseError,
        TimecodeError,
        EncodingError,
        ValidationError,
        CueTimingError,
        OverlapError,
        CueTooLongError,
        EmptyCueError,
        MissingHeaderError,
        UnsupportedBlockError,
    )
}
"""Every error class by its code, for ``cuewright explain CW203`` and for tools reading reports."""
