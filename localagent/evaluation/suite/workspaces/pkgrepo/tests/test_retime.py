"""Tests of cuewright.retime."""

from __future__ import annotations

import pytest

from cuewright import Cue, convert_framerate, scale_cues, shift_cues

CUES = [Cue(1000, 2500, "First"), Cue(3000, 4200, "Second"), Cue(6000, 8000, "Third")]


def starts(cues):
    return [c.start for c in cues]


def test_shift_later():
    assert starts(shift_cues(CUES, 1500)) == [2500, 4500, 7500]


def test_shift_earlier_clamps_at_zero_and_drops_empty_cues():
    shifted = shift_cues(CUES, -2600)
    assert [(c.start, c.end) for c in shifted] == [(400, 1600), (3400, 5400)]


def test_shift_can_keep_empty_cues():
    assert len(shift_cues(CUES, -2600, keep_empty=True)) == 3


def test_shift_does_not_change_the_input():
    shift_cues(CUES, 500)
    assert starts(CUES) == [1000, 3000, 6000]


def test_scale_around_an_anchor():
    assert starts(scale_cues(CUES, 2.0, anchor_ms=1000)) == [1000, 5000, 11000]


@pytest.mark.parametrize("factor", [0, -1, 2.5])
def test_scale_refuses_odd_factors(factor):
    with pytest.raises(ValueError):
        scale_cues(CUES, factor)


def test_pal_to_film():
    converted = convert_framerate([Cue(23976, 47952, "x")], "25", "23.976")
    assert (converted[0].start, converted[0].end) == (25000, 50000)
