"""Reading and writing SRT and WebVTT files.

The readers are deliberately forgiving about whitespace (trailing spaces, Windows line endings, a
byte order mark, several blank lines between cues) and strict about timing lines. Everything they
return is a list of :class:`Cue`, whatever the input format, so a file can be read as SRT and
written as WebVTT.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from charset_normalizer import from_bytes

from cuewright.exceptions import (
    EncodingError,
    MissingHeaderError,
    ParseError,
    UnsupportedBlockError,
)
from cuewright.timecode import TIMING_ARROW, format_timecode, parse_timing_line

DEFAULT_ENCODING = "utf-8"
# Tried in this order when the default fails and detection is switched off.
FALLBACK_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")
DETECTION_MIN_CONFIDENCE = 0.6  # charset-normalizer's "chaos" below 1 - this is accepted
VTT_SIGNATURE = "WEBVTT"
VTT_BLOCKS = ("NOTE", "STYLE", "REGION")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")


@dataclass(frozen=True)
class Cue:
    """One subtitle: when it shows, what it says, and any WebVTT settings."""

    start: int  # milliseconds
    end: int  # milliseconds
    text: str
    identifier: str = ""
    settings: str = ""
    source_line: int | None = field(default=None, compare=False)

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def plain_text(self) -> str:
        """The text without formatting tags such as <i> or <c.yellow>."""
        return _TAG.sub("", self.text)

    def moved(self, offset_ms: int) -> Cue:
        return replace(self, start=max(0, self.start + offset_ms), end=max(0, self.end + offset_ms))


def _blocks(text: str) -> Iterator[tuple[int, list[str]]]:
    """Blank-line separated blocks with the line number of their first line."""
    block: list[str] = []
    first = 1
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not block:
                first = number
            block.append(line.rstrip())
        elif block:
            yield first, block
            block = []
    if block:
        yield first, block


def parse_srt(text: str, lenient: bool = False) -> list[Cue]:
    """Parse the text of an SRT file. Cue numbers are read but not trusted: cues are renumbered."""
    cues: list[Cue] = []
    for first, block in _blocks(text.lstrip("\ufeff")):
        lines = block[1:] if block[0].strip().isdigit() else block
        if not lines or TIMING_ARROW not in lines[0]:
            raise ParseError("expected a timing line", line=first, index=len(cues) + 1)
        start, end, _ = parse_timing_line(lines[0], "srt", lenient)
        cues.append(Cue(start, end, "\n".join(lines[1:]), source_line=first))
    return cues


def parse_vtt(text: str, strict: bool = False) -> list[Cue]:
    """Parse the text of a WebVTT file. NOTE, STYLE and REGION blocks are skipped."""
    text = text.lstrip("\ufeff")
    if not text.startswith(VTT_SIGNATURE):
        raise MissingHeaderError("a WebVTT file must start with WEBVTT", line=1)
    cues: list[Cue] = []
    blocks = _blocks(text)
    next(blocks, None)  # the header block
    for first, block in blocks:
        if block[0].split(maxsplit=1)[0] in VTT_BLOCKS:
            continue
        timing = 0 if TIMING_ARROW in block[0] else 1
        if timing >= len(block) or TIMING_ARROW not in block[timing]:
            if strict:
                raise UnsupportedBlockError("not a cue or a known block", line=first)
            continue
        start, end, settings = parse_timing_line(block[timing], "vtt")
        identifier = block[0] if timing else ""
        cues.append(Cue(start, end, "\n".join(block[timing + 1 :]), identifier, settings, first))
    return cues


def decode(data: bytes, encoding: str | None = None, detect: bool = True) -> str:
    """Bytes to text: the given encoding, else detection, else the fallback encodings."""
    if encoding:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as error:
            raise EncodingError(f"cannot decode as {encoding}: {error.reason}") from None
    try:
        return data.decode(DEFAULT_ENCODING)
    except UnicodeDecodeError:
        pass
    if detect:
        best = from_bytes(data).best()
        if best is not None and best.chaos <= 1 - DETECTION_MIN_CONFIDENCE:
            return str(best)
    for candidate in FALLBACK_ENCODINGS:
        try:
            return data.decode(candidate)
        except UnicodeDecodeError:
            continue
    raise EncodingError("no encoding could decode the file")


def load(path: str | Path, encoding: str | None = None, lenient: bool = False) -> list[Cue]:
    """Read an .srt or .vtt file; the format is chosen by the file's suffix."""
    path = Path(path)
    text = decode(path.read_bytes(), encoding)
    if path.suffix.lower() == ".vtt":
        return parse_vtt(text)
    return parse_srt(text, lenient=lenient)


def _srt(cues: Iterable[Cue]) -> str:
    parts = []
    for number, cue in enumerate(cues, start=1):
        timing = f"{format_timecode(cue.start)} {TIMING_ARROW} {format_timecode(cue.end)}"
        parts.append(f"{number}\n{timing}\n{cue.text}\n")
    return "\n".join(parts)


def _vtt(cues: Iterable[Cue]) -> str:
    parts = [f"{VTT_SIGNATURE}\n"]
    for cue in cues:
        timing = (
            f"{format_timecode(cue.start, 'vtt')} {TIMING_ARROW} {format_timecode(cue.end, 'vtt')}"
        )
        if cue.settings:
            timing += f" {cue.settings}"
        head = f"{cue.identifier}\n" if cue.identifier else ""
        parts.append(f"{head}{timing}\n{cue.text}\n")
    return "\n".join(parts)


def dump(cues: Iterable[Cue], path: str | Path, encoding: str = DEFAULT_ENCODING) -> None:
    """Write cues to an .srt or .vtt file, chosen by the suffix. SRT cues are renumbered from 1."""
    path = Path(path)
    text = _vtt(cues) if path.suffix.lower() == ".vtt" else _srt(cues)
    path.write_text(text, encoding=encoding, newline="\n")
