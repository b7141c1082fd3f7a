"""The JSONL transcript: one line per message and per event, flushed as the run goes.

A transcript that cannot be written at all (a full disk, /dev/full) stops the command before the
run starts. One that fails later stops being written, and `failure` says why: a run is not thrown
away because its record could not be kept, but the command reports it and exits 1.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from localagent.core.events import ContentDelta, Event, ReasoningDelta, TokensGenerated
from localagent.core.messages import HISTORY, MESSAGE, Message
from localagent.errors import LocalagentError


class TranscriptError(LocalagentError):
    """The transcript cannot be written (a full disk): a failure, not a mistake in the command."""

    exit_code = 1


class TranscriptPathError(TranscriptError):
    """The transcript's file cannot be created where the command asked for it."""

    exit_code = 2


class Transcript:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8")
        self._messages: list[Message] = []
        self._written = 0
        self.failure: str | None = None

    def write_message(self, message: Message) -> None:
        self._messages.append(message)
        self._write(
            {"type": "message", "at": time.time(), "message": MESSAGE.dump_python(message, mode="json")}
        )

    def write_new_messages(self, history: Sequence[Message]) -> None:
        """Write what of `history` this transcript does not hold yet: a chat session resends its
        whole history with each task, and only the new messages are written."""
        held = len(self._messages) if list(history[: len(self._messages)]) == self._messages else 0
        del self._messages[held:]
        for message in history[held:]:
            self.write_message(message)

    def write_event(self, event: Event) -> None:
        if isinstance(event, ReasoningDelta | ContentDelta | TokensGenerated):
            return  # the messages hold the same text, whole; the usage counts the tokens
        self._write(event.model_dump(mode="json"))

    def write_note(self, kind: str, **fields: Any) -> None:
        self._write({"type": kind, "at": time.time(), **fields})

    def close(self) -> None:
        if not self._file.closed:
            try:
                self._file.close()
            except OSError as error:
                self._failed(error)

    def _write(self, record: dict[str, Any]) -> None:
        if self._file.closed:
            return
        try:
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()
        except OSError as error:
            self._failed(error)
            if not self._written:
                raise TranscriptError(self.failure) from None
            return
        self._written += 1

    def _failed(self, error: OSError) -> None:
        reason = error.strerror or str(error)
        self.failure = self.failure or f"cannot write the transcript to {self.path}: {reason}"
        with contextlib.suppress(OSError):
            self._file.close()  # what is still buffered cannot be written either


def read_messages(path: Path) -> list[Message]:
    """The history kept in a transcript, in order."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return HISTORY.validate_python([r["message"] for r in records if r.get("type") == "message"])


def default_transcript_path(directory: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return directory / f"run-{stamp}-{time.monotonic_ns() % 100000:05d}.jsonl"
