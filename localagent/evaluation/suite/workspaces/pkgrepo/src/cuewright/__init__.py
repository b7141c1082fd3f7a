"""cuewright: parse, validate and retime SRT and WebVTT subtitle files.

>>> import cuewright
>>> cues = cuewright.load("episode01.srt")
>>> problems = cuewright.validate(cues)
>>> cuewright.dump(cuewright.shift_cues(cues, 1500), "episode01.fixed.srt")
"""

from cuewright.exceptions import (
    CueTimingError,
    CueTooLongError,
    CuewrightError,
    EmptyCueError,
    EncodingError,
    MissingHeaderError,
    OverlapError,
    ParseError,
    TimecodeError,
    ValidationError,
)
from cuewright.parser import Cue, dump, load, parse_srt, parse_vtt
from cuewright.retime import convert_framerate, scale_cues, shift_cues
from cuewright.validate import Problem, ValidationRules, validate

__version__ = "2.3.1"

__all__ = [
    "Cue",
    "CueTimingError",
    "CueTooLongError",
    "CuewrightError",
    "EmptyCueError",
    "EncodingError",
    "MissingHeaderError",
    "OverlapError",
    "ParseError",
    "Problem",
    "TimecodeError",
    "ValidationError",
    "ValidationRules",
    "__version__",
    "convert_framerate",
    "dump",
    "load",
    "parse_srt",
    "parse_vtt",
    "scale_cues",
    "shift_cues",
    "validate",
]
