"""Timecodes: reading and writing ``HH:MM:SS,mmm`` (SRT) and ``HH:MM:SS.mmm`` (WebVTT).

Internally every time is a whole number of milliseconds from the start of the video, which keeps
arithmetic exact: shifting by 1500 ms and back gives the same cue, which floats did not (see 0.9.2
in the changelog).
"""

from __future__ import annotations

import re

from cuewright.exceptions import TimecodeError

SRT_SEPARATOR = ","  # between seconds and milliseconds
VTT_SEPARATOR = "."
TIMING_ARROW = "-->"
MAX_SRT_HOURS = 99  # SRT players expect two hour digits
MS_PER_SECOND = 1_000
MS_PER_MINUTE = 60 * MS_PER_SECOND
MS_PER_HOUR = 60 * MS_PER_MINUTE

_SRT_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2}),(\d{3})$")
# WebVTT allows the hours to be left out (MM:SS.mmm) and to have more than two digits.
_VTT_TIME = re.compile(r"^(?:(\d{2,}):)?(\d{2}):(\d{2})\.(\d{3})$")
# Lenient mode also takes one-digit hours and a dot or comma, as many hand-edited files have.
_LENIENT_TIME = re.compile(r"^(\d{1,3}):(\d{1,2}):(\d{1,2})[.,](\d{1,3})$")


def _to_ms(hours: str | None, minutes: str, seconds: str, millis: str, text: str) -> int:
    h = int(hours) if hours else 0
    m, s = int(minutes), int(seconds)
    if m >= 60 or s >= 60:
        raise TimecodeError(f"minutes and seconds must be below 60 in {text!r}")
    ms = int(millis.ljust(3, "0"))
    return h * MS_PER_HOUR + m * MS_PER_MINUTE + s * MS_PER_SECOND + ms


def parse_timecode(text: str, fmt: str = "srt", lenient: bool = False) -> int:
    """Read one timecode and return it in milliseconds.

    ``fmt`` is ``"srt"`` or ``"vtt"``. With ``lenient=True`` both separators and short fields are
    accepted, as in ``1:2:3.4`` (one hour, two minutes, 3.4 seconds).

    Raises :class:`TimecodeError` for anything else.
    """
    text = text.strip()
    if lenient:
        match = _LENIENT_TIME.match(text)
        if match:
            return _to_ms(*match.groups(), text=text)
    pattern = _SRT_TIME if fmt == "srt" else _VTT_TIME
    match = pattern.match(text)
    if not match:
        raise TimecodeError(f"not a valid {fmt.upper()} timecode: {text!r}")
    return _to_ms(*match.groups(), text=text)


def format_timecode(ms: int, fmt: str = "srt") -> str:
    """Write milliseconds as a timecode; negative times are clamped to zero."""
    ms = max(0, int(ms))
    hours, rest = divmod(ms, MS_PER_HOUR)
    minutes, rest = divmod(rest, MS_PER_MINUTE)
    seconds, millis = divmod(rest, MS_PER_SECOND)
    if fmt == "srt" and hours > MAX_SRT_HOURS:
        raise TimecodeError(f"{hours} hours do not fit in an SRT timecode")
    separator = SRT_SEPARATOR if fmt == "srt" else VTT_SEPARATOR
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{millis:03d}"


def parse_timing_line(line: str, fmt: str = "srt", lenient: bool = False) -> tuple[int, int, str]:
    """Split ``00:00:01,000 --> 00:00:02,500 position:10%`` into (start, end, settings)."""
    if TIMING_ARROW not in line:
        raise TimecodeError(f"no {TIMING_ARROW!r} in timing line {line!r}")
    left, right = line.split(TIMING_ARROW, 1)
    right_parts = right.strip().split(maxsplit=1)
    if not right_parts:
        raise TimecodeError(f"no end time in timing line {line!r}")
    start = parse_timecode(left, fmt, lenient)
    end = parse_timecode(right_parts[0], fmt, lenient)
    settings = right_parts[1] if len(right_parts) > 1 else ""
    return start, end, settings
