"""The llguidance tokenizer for a llama.cpp vocabulary, with the token bytes kept on disk.

Reading 262,144 token pieces through ctypes takes about half a second, a quarter of the tokenizer
build and so of a cold start; the pieces only change with the model file.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path

import llama_cpp
import numpy as np
from llguidance import LLTokenizer

from localagent.backends.llama_runtime import model_identity

_PIECE_ROOM = 1024
# Part of the cache key: bump it when the way pieces are read changes.
_LAYOUT = "2"
# llguidance's marker for a special token, as in llguidance.llamacpp.lltokenizer_from_vocab.
_SPECIAL = b"\xff"


def build_tokenizer(
    vocab: llama_cpp.llama_vocab_p, model_path: Path | None = None, cache: Path | None = None
) -> LLTokenizer:
    """Every end-of-generation token counts as EOS, so a chat model may end its turn with its own.

    With `model_path` and `cache`, the token bytes are read from (or written to) the cache.
    """
    stored = _cached(cache, model_path) if cache and model_path else None
    if stored is None:
        stored = _read(vocab), end_of_generation_tokens(vocab)
        if cache and model_path:
            _store(cache, model_path, *stored)
    pieces, ends = stored
    tokenize = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
    return LLTokenizer.from_llamacpp(
        tokens=pieces, vocab_ptr=vocab, tokenize_fptr=tokenize, eos_token=ends, slices=None
    )


def end_of_generation_tokens(vocab: llama_cpp.llama_vocab_p) -> list[int]:
    """EOS and every other token that ends a turn (a chat model's <end_of_turn>, <|eot_id|>, ...)."""
    return [t for t in range(llama_cpp.llama_vocab_n_tokens(vocab)) if llama_cpp.llama_vocab_is_eog(vocab, t)]


def _read(vocab: llama_cpp.llama_vocab_p) -> list[bytes]:
    buffer = ctypes.create_string_buffer(_PIECE_ROOM)
    pieces = []
    for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
        size = llama_cpp.llama_token_to_piece(vocab, token, buffer, _PIECE_ROOM, 0, True)
        piece = buffer[: max(size, 0)]
        attributes = llama_cpp.llama_vocab_get_attr(vocab, token)
        # User-defined tokens (Qwen's <tool_call>, Gemma's <table>) are text: llama.cpp's tokenizer
        # produces them from plain text, so a grammar's literal text may use them.
        control = attributes & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
        pieces.append(_SPECIAL + piece if control else piece)
    return pieces


def _path(cache: Path, model_path: Path) -> Path:
    key = f"{_LAYOUT}|{model_identity(model_path)}"
    return cache / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".npz")


def _cached(cache: Path, model_path: Path) -> tuple[list[bytes], list[int]] | None:
    try:
        with np.load(_path(cache, model_path), allow_pickle=False) as stored:
            lengths, blob, ends = stored["lengths"], stored["blob"].tobytes(), stored["ends"].tolist()
    except (OSError, KeyError, ValueError):
        return None
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return [blob[offsets[i] : offsets[i + 1]] for i in range(len(lengths))], ends


def _store(cache: Path, model_path: Path, pieces: list[bytes], ends: list[int]) -> None:
    target = _path(cache, model_path)
    partial = target.with_name(f"{target.stem}.{os.getpid()}.partial.npz")
    try:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(
            partial,
            lengths=np.array([len(p) for p in pieces], dtype=np.int32),
            blob=np.frombuffer(b"".join(pieces), dtype=np.uint8),
            ends=np.array(ends, dtype=np.int64),
        )
        partial.replace(target)
    except OSError:
        partial.unlink(missing_ok=True)
