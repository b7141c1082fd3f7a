"""A reply split into its sections, before any tool argument is read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OBSERVATION = re.compile(r"(^|\n)[ \t]*Observation\s*:", re.IGNORECASE)


class Unparsable(Exception):
    """The reply has no readable structure; `detail` says where it went wrong."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class RawAction:
    name: str
    input_text: str | None  # what followed "Action Input:", or None when there was none
    inline_argument: str | None = None  # the `arg` of `Action: tool[arg]`


@dataclass
class ReplyParts:
    thought: str | None
    actions: list[RawAction]
    answer: str | None
    labelled: bool = True
    # Read by the tolerant reader: arguments may be repaired and bare strings accepted.
    tolerant: bool = False
    notes: list[str] = field(default_factory=list)


def cut_at_observation(text: str) -> tuple[str, str | None]:
    """The reply up to an Observation the model wrote itself, and a note when something was cut."""
    match = _OBSERVATION.search(text)
    if match is None:
        return text, None
    kept = text[: match.start()] + match.group(1)
    rest = text[match.end() :].strip()
    return kept, ("dropped an Observation the model wrote itself" if rest else None)
