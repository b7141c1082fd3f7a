"""A request's `stop` strings applied to text as it streams: the text ends before the first one.

While streaming, the tail that could be the start of a stop string is held back until the next
piece shows whether it is.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopStrings:
    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = tuple(stop for stop in stops if stop)
        self.text = ""
        self.hit = False
        self._sent = 0

    def feed(self, piece: str) -> str:
        """The part of the text so far that can be sent now."""
        if self.hit:
            return ""
        self.text += piece
        if not self.stops:
            return self._send(len(self.text))
        cut = first_stop(self.text, self.stops)
        if cut is not None:
            self.hit = True
            self.text = self.text[:cut]
            return self._send(cut)
        return self._send(len(self.text) - _open_prefix(self.text, self.stops))

    def flush(self) -> str:
        """What was held back, once the text is complete."""
        return self._send(len(self.text))

    def _send(self, upto: int) -> str:
        piece = self.text[self._sent : upto]
        self._sent = max(self._sent, upto)
        return piece


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    found = [index for index in (text.find(stop) for stop in stops if stop) if index >= 0]
    return min(found) if found else None


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    cut = first_stop(text, stops)
    return text if cut is None else text[:cut]


def _open_prefix(text: str, stops: Sequence[str]) -> int:
    """The length of the longest end of `text` that begins some stop string."""
    longest = 0
    for stop in stops:
        for length in range(min(len(stop) - 1, len(text)), longest, -1):
            if stop.startswith(text[-length:]):
                longest = length
                break
    return longest
