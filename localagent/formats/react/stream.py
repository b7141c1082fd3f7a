"""Live display of a text-tag reply as it is generated: the Thought as reasoning, the answer as content."""

from __future__ import annotations

import re

from localagent.core.events import ContentDelta, DeltaSink, ReasoningDelta

_THOUGHT = re.compile(r"(?:^|\n)Thought: ([^\n]*)")
_ANSWER = re.compile(r"(?:^|\n)Final Answer: ")


class ReplyStream:
    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._on_delta = on_delta
        self._text = ""
        self._reasoning_sent = 0
        self._content_sent = 0

    def feed(self, piece: str) -> None:
        if self._on_delta is None:
            return
        self._text += piece
        thought = _THOUGHT.search(self._text)
        if thought:
            start = max(thought.start(1), self._reasoning_sent)
            if thought.end(1) > start:
                self._on_delta(ReasoningDelta(text=self._text[start : thought.end(1)]))
                self._reasoning_sent = thought.end(1)
        answer = _ANSWER.search(self._text)
        if answer:
            start = max(answer.end(), self._content_sent)
            # Hold back trailing newlines: they may be the blank line that ends the answer.
            end = len(self._text.rstrip("\n"))
            if end > start:
                self._on_delta(ContentDelta(text=self._text[start:end]))
                self._content_sent = end
