"""Moving cues in time: a fixed offset, a linear stretch, or a frame-rate conversion.

All functions return new lists and leave the cues they were given alone. Times never go below
zero: a cue pushed before the start of the video is clamped to 00:00:00,000, and one that ends up
with no duration at all is dropped (pass ``keep_empty=True`` to keep it).
"""

from __future__ import annotations

from collections.abc import Sequence

from cuewright.parser import Cue

# Frame rates that subtitle files are commonly authored for, with the exact NTSC fractions.
COMMON_FRAME_RATES = {
    "23.976": 24000 / 1001,
    "24": 24.0,
    "25": 25.0,
    "29.97": 30000 / 1001,
    "30": 30.0,
}
MAX_SCALE_FACTOR = 2.0  # larger stretches are almost always a wrong unit


def _kept(cues: Sequence[Cue], keep_empty: bool) -> list[Cue]:
    return [cue for cue in cues if keep_empty or cue.end > cue.start]


def shift_cues(cues: Sequence[Cue], offset_ms: int, keep_empty: bool = False) -> list[Cue]:
    """Move every cue by ``offset_ms`` milliseconds; negative offsets move them earlier.

    >>> [c.start for c in shift_cues([Cue(1000, 2000, "Hi")], -250)]
    [750]
    """
    return _kept([cue.moved(offset_ms) for cue in cues], keep_empty)


def scale_cues(
    cues: Sequence[Cue], factor: float, anchor_ms: int = 0, keep_empty: bool = False
) -> list[Cue]:
    """Stretch times around ``anchor_ms``: ``new = anchor + (old - anchor) * factor``.

    Raises ValueError for a factor that is not positive or above MAX_SCALE_FACTOR.
    """
    if not 0 < factor <= MAX_SCALE_FACTOR:
        raise ValueError(f"factor must be above 0 and at most {MAX_SCALE_FACTOR}, not {factor}")

    def move(ms: int) -> int:
        return max(0, round(anchor_ms + (ms - anchor_ms) * factor))

    scaled = [
        Cue(move(c.start), move(c.end), c.text, c.identifier, c.settings, c.source_line)
        for c in cues
    ]
    return _kept(scaled, keep_empty)


def convert_framerate(
    cues: Sequence[Cue], from_fps: float | str, to_fps: float | str, keep_empty: bool = False
) -> list[Cue]:
    """Retime cues authored for one frame rate to play in sync at another (e.g. 25 -> 23.976).

    Rates may be given as numbers or as the keys of COMMON_FRAME_RATES.
    """
    source = COMMON_FRAME_RATES.get(str(from_fps), from_fps)
    target = COMMON_FRAME_RATES.get(str(to_fps), to_fps)
    return scale_cues(cues, float(source) / float(target), keep_empty=keep_empty)
