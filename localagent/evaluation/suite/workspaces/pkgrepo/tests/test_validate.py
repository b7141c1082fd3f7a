"""Tests of cuewright.validate: every rule, its code, and strict mode."""

from __future__ import annotations

import pytest

from cuewright import (
    Cue,
    CueTimingError,
    CueTooLongError,
    EmptyCueError,
    OverlapError,
    ValidationRules,
    validate,
)
from cuewright.validate import reading_speed


def cue(start: int, end: int, text: str = "Hello there.") -> Cue:
    return Cue(start, end, text)


def codes(cues: list[Cue], **rules: object) -> list[str]:
    return [problem.code for problem in validate(cues, ValidationRules(**rules))]


def test_a_well_timed_file_has_no_problems():
    assert validate([cue(0, 2000), cue(2100, 4000), cue(4500, 6000)]) == []


def test_a_cue_that_ends_before_it_starts():
    assert codes([cue(3000, 2000)]) == ["CW201"]


def test_a_cue_without_duration_is_a_timing_error():
    assert "CW201" in codes([cue(3000, 3000)])


def test_overlapping_cues():
    problems = validate([cue(0, 2000), cue(1500, 3000)])
    assert [p.code for p in problems] == ["CW202"]
    assert "500 ms" in problems[0].message


def test_a_small_gap_only_warns():
    problems = validate([cue(0, 2000), cue(2040, 4000)])
    assert [(p.code, p.severity) for p in problems] == [("CW202", "warning")]


def test_a_cue_longer_than_seven_seconds():
    assert codes([cue(0, 7001)]) == ["CW203"]


def test_an_empty_cue_and_one_with_only_tags():
    assert codes([cue(0, 1500, ""), cue(2000, 3500, "<i> </i>")]) == ["CW204", "CW204"]


def test_empty_cues_may_be_allowed():
    assert codes([cue(0, 1500, "")], allow_empty=True) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A" * 42, []),
        ("A" * 43, ["CW211"]),
        ("one\ntwo\nthree", ["CW212"]),
    ],
)
def test_line_rules(text, expected):
    assert codes([cue(0, 6000, text)], max_cps=None) == expected


def test_reading_speed_ignores_tags_and_counts_line_breaks_as_spaces():
    assert reading_speed(cue(0, 1000, "<b>ab</b>\ncd")) == pytest.approx(5.0)


def test_too_fast_to_read():
    assert codes([cue(0, 1000, "This is far too much text for one second.")]) == ["CW213"]


def test_rules_can_be_switched_off():
    assert codes([cue(0, 500, "Quick!")], min_duration_ms=None) == []


def test_children_rules_are_stricter():
    rules = ValidationRules.for_children()
    assert rules.max_cps == 13.0 and rules.min_duration_ms == 1500


@pytest.mark.parametrize(
    ("cues", "error"),
    [
        ([cue(2000, 1000)], CueTimingError),
        ([cue(0, 2000), cue(1000, 3000)], OverlapError),
        ([cue(0, 9000)], CueTooLongError),
        ([cue(0, 1000, "")], EmptyCueError),
    ],
)
def test_strict_mode_raises_the_first_error(cues, error):
    with pytest.raises(error) as raised:
        validate(cues, strict=True)
    assert raised.value.index is not None


def test_strict_mode_does_not_raise_for_warnings():
    assert [p.severity for p in validate([cue(0, 500, "Go")], strict=True)] == ["warning"]
