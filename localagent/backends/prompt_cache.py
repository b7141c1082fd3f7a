"""KV-cache snapshots of the instructions on disk, so a new process does not evaluate them again.

Every run starts with the same few hundred tokens of instructions and tool schemas; evaluating them
is most of a cold start on a laptop. The snapshot is keyed by everything that shapes it: the model
file, the context size, the llama-cpp-python version and the exact tokens.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import llama_cpp
import numpy as np

from localagent.backends.decoding import LlamaSession
from localagent.backends.llama_runtime import model_identity

_KEEP = 8  # snapshots kept; the oldest go first
_SUFFIX = ".kv"


class PromptCache:
    def __init__(self, directory: Path, model_path: Path) -> None:
        self.directory = directory
        self._model_identity = model_identity(model_path)

    def key(self, session: LlamaSession, tokens: Sequence[int]) -> str:
        digest = hashlib.sha256(f"{self._model_identity}|{session.n_ctx}".encode())
        digest.update(np.asarray(tokens, dtype=np.int32).tobytes())
        return digest.hexdigest()[:32]

    def restore(self, session: LlamaSession, tokens: Sequence[int]) -> bool:
        """Load the snapshot for `tokens` into an empty KV cache; False when there is none or it fails."""
        path = self.directory / (self.key(session, tokens) + _SUFFIX)
        try:
            data = path.read_bytes()
        except OSError:
            return False
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        llama = session.llama
        llama.n_tokens = 0
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # start from an empty cache
        if llama_cpp.llama_state_seq_set_data(llama.ctx, buffer, len(data), 0) != len(data):
            llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # a partial load is no load
            return False
        llama.input_ids[: len(tokens)] = tokens
        llama.n_tokens = len(tokens)
        path.touch()
        return True

    def store(self, session: LlamaSession, tokens: Sequence[int]) -> None:
        """Save the KV cache, which must hold exactly `tokens`; a failure to write is not an error."""
        llama = session.llama
        if list(llama.input_ids[: llama.n_tokens]) != list(tokens):
            return
        size = llama_cpp.llama_state_seq_get_size(llama.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llama.ctx, buffer, size, 0)
        if written == 0:
            return
        target = self.directory / (self.key(session, tokens) + _SUFFIX)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            partial.write_bytes(bytes(buffer)[:written])
            partial.replace(target)
            self._prune()
        except OSError:
            partial.unlink(missing_ok=True)

    def _prune(self) -> None:
        snapshots = sorted(self.directory.glob(f"*{_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in snapshots[_KEEP:]:
            old.unlink(missing_ok=True)
