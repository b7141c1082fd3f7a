"""KV-cache snapshots of the starts prompts share, on disk, so a new process does not evaluate them again.

Every run starts with the same few hundred tokens of instructions and tool schemas, and every run in
a folder with the same listing of its files; evaluating them is most of a short task on a laptop.
A snapshot is keyed by everything that shapes it: the model
file, the context size, the llama-cpp-python version and the exact tokens.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from localagent.backends.decoding import KvSnapshot, LlamaSession
from localagent.backends.llama_runtime import model_identity

# A snapshot is 20 to 60 MB on a 1.5B model; the least recently used go first past this size.
_KEPT_BYTES = 512 * 1024 * 1024
_SUFFIX = ".kv"
# Part of every key. Version 1 saved the prefix as the cache held it, which could have been evaluated
# after another conversation, so its numbers differed slightly from the prefix's own.
_VERSION = 2


class PromptCache:
    def __init__(self, directory: Path, model_path: Path) -> None:
        self.directory = directory
        self._model_identity = model_identity(model_path)

    def key(self, session: LlamaSession, tokens: Sequence[int]) -> str:
        digest = hashlib.sha256(f"{_VERSION}|{self._model_identity}|{session.n_ctx}".encode())
        digest.update(np.asarray(tokens, dtype=np.int32).tobytes())
        return digest.hexdigest()[:32]

    def read(self, session: LlamaSession, tokens: Sequence[int]) -> KvSnapshot | None:
        path = self._path(session, tokens)
        try:
            data = path.read_bytes()
            path.touch()
        except OSError:
            return None
        return KvSnapshot(tuple(tokens), data)

    def mark_used(self, session: LlamaSession, snapshot: KvSnapshot) -> KvSnapshot:
        """Note a use of a snapshot this process holds in memory, so pruning keeps its file longer."""
        with contextlib.suppress(OSError):
            os.utime(self._path(session, snapshot.tokens))  # unlike touch(), never makes an empty file
        return snapshot

    def _path(self, session: LlamaSession, tokens: Sequence[int]) -> Path:
        return self.directory / (self.key(session, tokens) + _SUFFIX)

    def write(self, session: LlamaSession, snapshot: KvSnapshot) -> None:
        """Save the snapshot; a failure to write is not an error."""
        target = self._path(session, snapshot.tokens)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(snapshot.data)
            partial.replace(target)
            self._prune()
        except OSError:
            partial.unlink(missing_ok=True)

    def _prune(self) -> None:
        snapshots = sorted(self.directory.glob(f"*{_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
        total = 0
        for position, snapshot in enumerate(snapshots):
            total += snapshot.stat().st_size
            if position > 0 and total > _KEPT_BYTES:
                snapshot.unlink(missing_ok=True)
