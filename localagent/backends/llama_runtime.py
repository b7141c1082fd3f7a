"""Loading GGUF models with llama-cpp-python, with llama.cpp's own logging kept off the terminal."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from localagent.backends.cpu_backend import cpu_code_name, ensure_cpu_backend
from localagent.backends.gguf_header import GGUFHeaderError, context_length
from localagent.backends.llama_logs import clear_log_lines, recent_log_lines
from localagent.errors import BackendError, ModelNotFound

DEFAULT_CONTEXT_CAP = 8192


@dataclass(frozen=True)
class LoadSettings:
    n_ctx: int | None = None  # None: the model's trained context, capped at DEFAULT_CONTEXT_CAP
    n_threads: int | None = None
    n_batch: int = 512
    seed: int = 0


def model_identity(model_path: Path) -> str:
    """What a cached artifact of this model depends on: the file as it is, and the llama.cpp build
    with the CPU code it runs (a KV cache is the arithmetic of one build)."""
    status = model_path.stat()
    cpu_code = cpu_code_name()
    return f"{model_path.resolve()}|{status.st_size}|{status.st_mtime_ns}|{llama_cpp.__version__}|{cpu_code}"


def trained_context(path: Path) -> int | None:
    """The context length the GGUF was trained with, from its header."""
    try:
        return context_length(path)
    except (OSError, GGUFHeaderError):
        return None  # llama.cpp will say what is wrong with the file when it loads it


def _check_gguf(path: Path) -> None:
    """A file that does not start as a GGUF file does is a mistake in the command, not a load failure."""
    try:
        with path.open("rb") as file:
            magic = file.read(4)
    except OSError as error:
        raise BackendError(f"cannot read model {path}: {error.strerror}") from None
    if magic != b"GGUF":
        raise ModelNotFound(f"{path} is not a GGUF model file")


def load_llama(path: Path, settings: LoadSettings | None = None) -> llama_cpp.Llama:
    settings = settings or LoadSettings()
    if not path.is_file():
        raise ModelNotFound(f"model file not found: {path}")
    _check_gguf(path)
    ensure_cpu_backend()
    n_ctx = settings.n_ctx or min(trained_context(path) or DEFAULT_CONTEXT_CAP, DEFAULT_CONTEXT_CAP)
    threads = settings.n_threads or max(1, os.cpu_count() or 1)
    clear_log_lines()
    try:
        return llama_cpp.Llama(
            str(path),
            n_ctx=n_ctx,
            n_batch=min(settings.n_batch, n_ctx),
            n_threads=threads,
            n_threads_batch=threads,
            seed=settings.seed,
            verbose=False,
        )
    except (ValueError, RuntimeError) as error:
        detail = "; ".join(recent_log_lines(3)) or str(error)
        raise BackendError(f"cannot load model {path}: {detail}") from None
