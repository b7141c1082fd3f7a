"""Tool calls read from a reply while it is generated: a call's name as soon as it is written, then
its arguments piece by piece, so a server can stream them as OpenAI-style `tool_calls` deltas.

Each format has a reader (`ReplyFormat.calls`). The reader only reports; the parsed reply stays the
authority on what the calls were (under a grammar the two agree).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CallStarted:
    index: int
    name: str


@dataclass(frozen=True)
class ArgumentsDelta:
    index: int
    text: str


CallEvent = CallStarted | ArgumentsDelta
CallSink = Callable[[CallEvent], None]

_REACT_ACTION = re.compile(r"(?:^|\n)Action: ([^\n]*)\nAction Input: ")
_REACT_ANSWER = re.compile(r"(?:^|\n)Final Answer: ")


class _CallReader(ABC):
    """Calls one after another: each opens, then its arguments go out as they come, until the reply
    turns out to be an answer."""

    def __init__(self, on_call: CallSink) -> None:
        self._on_call = on_call
        self._text = ""
        self._scan = 0  # where the next call may start
        self._calls = 0
        self._answering = False

    def feed(self, piece: str) -> None:
        self._text += piece
        while not self._answering:
            if not self._in_call() and not self._open_call():
                return
            if not self._send_arguments():
                return

    @abstractmethod
    def _in_call(self) -> bool: ...

    @abstractmethod
    def _open_call(self) -> bool:
        """Report the next call's start; False until one has started."""

    @abstractmethod
    def _send_arguments(self) -> bool:
        """Send what is new of the open call's arguments; True when they are complete."""


class ReactCallReader(_CallReader):
    """`Action: NAME` then `Action Input: {...}` up to the end of its line, for each action."""

    def __init__(self, on_call: CallSink) -> None:
        super().__init__(on_call)
        self._arguments: tuple[int, int] | None = None  # (start, sent up to) of the open call's input

    def _in_call(self) -> bool:
        return self._arguments is not None

    def _open_call(self) -> bool:
        action = _REACT_ACTION.search(self._text, self._scan)
        answer = _REACT_ANSWER.search(self._text, self._scan)
        if answer is not None and (action is None or answer.start() < action.start()):
            self._answering = True  # an answer may run over lines that look like an action
            return False
        if action is None:
            return False
        self._on_call(CallStarted(self._calls, action[1].strip()))
        self._arguments = (action.end(), action.end())
        return True

    def _send_arguments(self) -> bool:
        assert self._arguments is not None
        start, sent = self._arguments
        end = self._text.find("\n", start)
        upto = len(self._text) if end < 0 else end
        if upto > sent:
            self._on_call(ArgumentsDelta(self._calls, self._text[sent:upto]))
        if end < 0:
            self._arguments = (start, upto)
            return False
        self._arguments = None
        self._calls += 1
        self._scan = end
        return True


_CALL_HEAD = re.compile(r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*')


class WrappedCallReader(_CallReader):
    """Calls written as `<open>{"name": NAME, "arguments": VALUE}<close>`; VALUE streams as it comes.

    `opener` is what starts a call (the wrapper's opening tag, or `{` for bare JSON); like the
    parser, a call counts only at the start of the reply or after a line break.
    """

    def __init__(self, on_call: CallSink, opener: str) -> None:
        super().__init__(on_call)
        self._opener = opener
        self._body_offset = 0 if opener == "{" else len(opener)
        self._value: _JsonValueScanner | None = None

    def _in_call(self) -> bool:
        return self._value is not None

    def _open_call(self) -> bool:
        start = self._text.find(self._opener, self._scan)
        if start < 0:
            return False
        if self._calls == 0 and start > 0 and "\n" not in self._text[:start]:
            self._answering = True
            return False
        head = _CALL_HEAD.match(self._text, start + self._body_offset)
        if head is None:
            return False
        self._on_call(CallStarted(self._calls, head[1]))
        self._value = _JsonValueScanner(head.end())
        return True

    def _send_arguments(self) -> bool:
        assert self._value is not None
        value = self._value
        sent = value.position
        done = value.advance(self._text)
        if value.start is not None:  # the spaces before the value are not part of it
            start = max(sent, value.start)
            if value.position > start:
                self._on_call(ArgumentsDelta(self._calls, self._text[start : value.position]))
        if not done:
            return False
        self._scan = self._value.position
        self._value = None
        self._calls += 1
        return True


class _JsonValueScanner:
    """Finds where one JSON value ends, reading text as it grows."""

    def __init__(self, position: int) -> None:
        self.position = position
        self.start: int | None = None  # where the value begins, once its first character came
        self._depth = 0
        self._in_string = False
        self._escaped = False

    def advance(self, text: str) -> bool:
        """Read up to the end of the value (True) or of `text` (False)."""
        while self.position < len(text):
            character = text[self.position]
            if self.start is None:
                if character.isspace():
                    self.position += 1
                    continue
                self.start = self.position
            self.position += 1
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif character == "\\":
                    self._escaped = True
                elif character == '"':
                    self._in_string = False
                    if self._depth == 0:
                        return True
            elif character == '"':
                self._in_string = True
            elif character in "{[":
                self._depth += 1
            elif character in "}]":
                if self._depth == 0:  # closes the call around a bare number or literal
                    self.position -= 1
                    return True
                self._depth -= 1
                if self._depth == 0:
                    return True
            elif self._depth == 0 and character in ",\n":
                self.position -= 1  # a bare number or literal ended; the delimiter is not part of it
                return True
        return False
