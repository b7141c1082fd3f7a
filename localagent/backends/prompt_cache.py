"""KV-cache snapshots of the instructions on disk, so a new process does not evaluate them again.

Every run starts with the same few hundred tokens of instructions and tool schemas; evaluating them
is most of a cold start on a laptop. The snapshot is keyed by everything that shapes it: the model
file, the context size, the llama-cpp-python version and the exact tokens.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from localagent.backends.decoding import KvSnapshot, LlamaSession
from localagent.backends.llama_runtime import model_identity

_KEEP = 8  # snapshots kept; the oldest go first
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
        path = self.directory / (self.key(session, tokens) + _SUFFIX)
        try:
            data = path.read_bytes()
            path.touch()
        except OSError:
            return None
        return KvSnapshot(tuple(tokens), data)

    def write(self, session: LlamaSession, snapshot: KvSnapshot) -> None:
        """Save the snapshot; a failure to write is not an error."""
        target = self.directory / (self.key(session, snapshot.tokens) + _SUFFIX)
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
        for old in snapshots[_KEEP:]:
            old.unlink(missing_ok=True)
