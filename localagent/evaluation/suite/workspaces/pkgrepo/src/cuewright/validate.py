"""Checking cues against the usual subtitling rules: timing, overlaps, length and reading speed.

The defaults follow common broadcast guidelines for adult audiences; pass your own
:class:`ValidationRules` for children's programming or for a house style. docs/validation.md
describes every rule and its code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cuewright.exceptions import (
    CueTimingError,
    CueTooLongError,
    EmptyCueError,
    OverlapError,
    ValidationError,
)
from cuewright.parser import Cue

DEFAULT_MIN_DURATION_MS = 800  # shorter cues flash by before they can be read
DEFAULT_MAX_DURATION_MS = 7_000  # longer cues are usually a forgotten end time
DEFAULT_MIN_GAP_MS = 83  # two frames at 24 fps between consecutive cues
DEFAULT_MAX_LINE_LENGTH = 42  # characters per line
DEFAULT_MAX_LINES = 2  # lines per cue
DEFAULT_MAX_CPS = 17.0  # reading speed, characters per second (spaces count, tags do not)

Severity = Literal["error", "warning"]

# Problems that only warn have a code but no exception class: strict mode never raises for them.
WARNING_CODES = {
    "CW210": "cue shorter than min_duration_ms",
    "CW211": "line longer than max_line_length",
    "CW212": "more lines than max_lines",
    "CW213": "reading speed above max_cps",
}
_RAISES = {
    CueTimingError.code: CueTimingError,
    OverlapError.code: OverlapError,
    CueTooLongError.code: CueTooLongError,
    EmptyCueError.code: EmptyCueError,
}


@dataclass(frozen=True)
class ValidationRules:
    """The limits :func:`validate` checks. Any field set to None switches its rule off."""

    min_duration_ms: int | None = DEFAULT_MIN_DURATION_MS
    max_duration_ms: int | None = DEFAULT_MAX_DURATION_MS
    min_gap_ms: int | None = DEFAULT_MIN_GAP_MS
    max_line_length: int | None = DEFAULT_MAX_LINE_LENGTH
    max_lines: int | None = DEFAULT_MAX_LINES
    max_cps: float | None = DEFAULT_MAX_CPS
    allow_empty: bool = False

    @classmethod
    def for_children(cls) -> ValidationRules:
        """Slower reading speed and longer minimum duration, for audiences under 12."""
        return cls(min_duration_ms=1_500, max_cps=13.0, max_line_length=37)


@dataclass(frozen=True)
class Problem:
    """One broken rule: where, which code, and a sentence for people."""

    index: int  # 1-based cue number
    code: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"cue {self.index}: [{self.code}] {self.message}"


def reading_speed(cue: Cue) -> float:
    """Characters per second of a cue's plain text; 0.0 for a cue without duration."""
    seconds = cue.duration / 1000
    if seconds <= 0:
        return 0.0
    characters = len(cue.plain_text.replace("\n", " "))
    return characters / seconds


def _problems_of(
    index: int, cue: Cue, previous: Cue | None, rules: ValidationRules
) -> list[Problem]:
    found: list[Problem] = []
    if cue.end <= cue.start:
        found.append(
            Problem(index, CueTimingError.code, "ends before it starts or has no duration")
        )
    if previous is not None and rules.min_gap_ms is not None:
        gap = cue.start - previous.end
        if gap < 0:
            found.append(
                Problem(index, OverlapError.code, f"overlaps the previous cue by {-gap} ms")
            )
        elif gap < rules.min_gap_ms:
            found.append(
                Problem(
                    index, OverlapError.code, f"only {gap} ms after the previous cue", "warning"
                )
            )
    if rules.max_duration_ms is not None and cue.duration > rules.max_duration_ms:
        found.append(Problem(index, CueTooLongError.code, f"on screen for {cue.duration} ms"))
    if not cue.plain_text.strip() and not rules.allow_empty:
        found.append(Problem(index, EmptyCueError.code, "has no text"))
    if rules.min_duration_ms is not None and 0 < cue.duration < rules.min_duration_ms:
        found.append(Problem(index, "CW210", f"only {cue.duration} ms on screen", "warning"))
    lines = cue.plain_text.splitlines()
    if rules.max_line_length is not None:
        for line in lines:
            if len(line) > rules.max_line_length:
                found.append(Problem(index, "CW211", f"line of {len(line)} characters", "warning"))
    if rules.max_lines is not None and len(lines) > rules.max_lines:
        found.append(Problem(index, "CW212", f"{len(lines)} lines", "warning"))
    if rules.max_cps is not None and reading_speed(cue) > rules.max_cps:
        cps = reading_speed(cue)
        found.append(Problem(index, "CW213", f"{cps:.1f} characters per second", "warning"))
    return found


def validate(
    cues: Sequence[Cue], rules: ValidationRules | None = None, strict: bool = False
) -> list[Problem]:
    """Every problem of every cue, in cue order.

    With ``strict=True`` the first error (not warning) is raised as its exception class instead.
    """
    rules = rules or ValidationRules()
    problems: list[Problem] = []
    previous: Cue | None = None
    for index, cue in enumerate(cues, start=1):
        for problem in _problems_of(index, cue, previous, rules):
            if strict and problem.severity == "error":
                raise _RAISES.get(problem.code, ValidationError)(problem.message, index=index)
            problems.append(problem)
        previous = cue
    return problems
