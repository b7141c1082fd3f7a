"""Tests of reading and writing files, and of timecodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuewright import (
    Cue,
    EncodingError,
    MissingHeaderError,
    ParseError,
    TimecodeError,
    dump,
    load,
    parse_srt,
    parse_vtt,
)
from cuewright.parser import decode
from cuewright.timecode import format_timecode, parse_timecode

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("text", "fmt", "ms"),
    [
        ("00:00:01,000", "srt", 1000),
        ("01:02:03,456", "srt", 3723456),
        ("02:03.456", "vtt", 123456),
        ("100:00:00.000", "vtt", 360000000),
    ],
)
def test_parse_timecode(text, fmt, ms):
    assert parse_timecode(text, fmt) == ms


@pytest.mark.parametrize("text", ["00:61:00,000", "1:02:03,000", "00:00:01.000"])
def test_bad_srt_timecodes(text):
    with pytest.raises(TimecodeError):
        parse_timecode(text, "srt")


def test_lenient_timecodes():
    assert parse_timecode("1:2:3.4", lenient=True) == 3723400


def test_format_timecode_round_trip():
    assert format_timecode(3723456) == "01:02:03,456"
    assert format_timecode(3723456, "vtt") == "01:02:03.456"


def test_parse_srt_sample():
    cues = load(DATA / "sample.srt")
    assert len(cues) == 6
    assert cues[0] == Cue(1200, 3400, "Where were you last night?")
    assert cues[2].text == "Fine. The station, then.\nAt nine."


def test_parse_srt_needs_a_timing_line():
    with pytest.raises(ParseError, match="CW101"):
        parse_srt("1\nHello\n")


def test_parse_vtt_sample_skips_notes_and_styles():
    cues = load(DATA / "sample.vtt")
    assert [c.identifier for c in cues] == ["intro", "", "door"]
    assert cues[1].settings == "line:0 position:20%"


def test_a_vtt_file_needs_its_header():
    with pytest.raises(MissingHeaderError):
        parse_vtt("00:01.000 --> 00:02.000\nHi\n")


def test_windows_line_endings_and_bom():
    assert parse_srt("\ufeff1\r\n00:00:01,000 --> 00:00:02,000\r\nHi\r\n") == [
        Cue(1000, 2000, "Hi")
    ]


def test_decode_falls_back_to_cp1252():
    assert decode("Café".encode("cp1252"), detect=False) == "Café"


def test_decode_with_a_wrong_encoding():
    with pytest.raises(EncodingError):
        decode(b"\xff\xfe\x00", encoding="ascii")


def test_dump_and_load_as_vtt(tmp_path):
    cues = load(DATA / "sample.srt")
    dump(cues, tmp_path / "out.vtt")
    assert (tmp_path / "out.vtt").read_text().startswith("WEBVTT\n")
    assert load(tmp_path / "out.vtt") == cues
