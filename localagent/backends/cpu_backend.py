"""llama.cpp's CPU code for this machine, in a build that carries one library per CPU generation.

Built with `GGML_BACKEND_DL=ON GGML_CPU_ALL_VARIANTS=ON` (README's install), llama.cpp holds no CPU
code of its own: each `libggml-cpu-VARIANT.so` is compiled for one generation of x86-64, and the one
this CPU runs fastest is loaded before the first model. A build with the CPU code built in (llama.cpp's
default) has its backend registered already, and nothing is loaded.

llama-cpp-python's own programs load no variant; `python -m localagent.backends.cpu_backend MODULE
ARGS...` runs one with the variant loaded first (`... llama_cpp.server --model m.gguf`).
"""

from __future__ import annotations

import ctypes
import runpy
import sys
from functools import cache
from pathlib import Path

import llama_cpp
from llama_cpp import llama_cpp as llama_library

from localagent.backends.llama_logs import quiet_llama_logs
from localagent.errors import BackendError

# Its AMX matrix code crashes (a segmentation fault at the first token of every model, in
# llama-cpp-python 0.3.36); the next best variant runs the same AVX-512 code without it.
SKIPPED_VARIANTS = frozenset({"sapphirerapids"})

_PREFIX = "libggml-cpu-"
PORTABLE_VARIANT = "x64"  # SSE2 only: what a CPU runs that no compiled variant covers
PORTABLE_CODE_NOTICE = (
    "llama.cpp runs its portable x86-64 code on this CPU, slower than code built for it: this "
    "llama-cpp-python was compiled for another CPU (docs/models.md, 'Building llama.cpp', says how to "
    "build it for this one)."
)


def variant_directories() -> list[Path]:
    """Where llama-cpp-python's wheel puts the variants: its `lib` folder, or `bin` beside the package."""
    package = Path(llama_cpp.__file__).parent
    return [package / "lib", package.parent / "bin"]


def variant_files() -> list[Path]:
    found = (sorted(folder.glob(f"{_PREFIX}*.so")) for folder in variant_directories() if folder.is_dir())
    return [path for paths in found for path in paths]


def variant_name(path: Path) -> str:
    return path.name.removeprefix(_PREFIX).removesuffix(".so")


def variant_score(path: Path) -> int:
    """ggml's own rating of a variant on this CPU: 0 when the CPU lacks an instruction it uses."""
    library = ctypes.CDLL(str(path))
    try:
        score = library.ggml_backend_score
    except AttributeError:
        return 0
    score.restype = ctypes.c_int
    return int(score())


def best_variant(paths: list[Path]) -> Path | None:
    rated = [(variant_score(path), path) for path in paths if variant_name(path) not in SKIPPED_VARIANTS]
    runnable = [(score, path) for score, path in rated if score > 0]
    return max(runnable, key=lambda pair: pair[0])[1] if runnable else None


@cache
def ensure_cpu_backend() -> str | None:
    """Load the best CPU variant once per process; the variant's name, or None if none was needed."""
    quiet_llama_logs()
    library = llama_library._lib  # libggml is reached through libllama, so both share one registry
    library.ggml_backend_reg_count.restype = ctypes.c_size_t
    if library.ggml_backend_reg_count() > 0:
        return None
    files = variant_files()
    best = best_variant(files)
    if best is None:
        searched = ", ".join(str(folder) for folder in variant_directories())
        raise BackendError(
            f"llama.cpp has no CPU code for this machine: no {_PREFIX}*.so that this CPU runs "
            f"in {searched} ({len(files)} found). Reinstall llama-cpp-python as README says."
        )
    library.ggml_backend_load.restype = ctypes.c_void_p
    if not library.ggml_backend_load(str(best).encode()):
        raise BackendError(f"llama.cpp could not load its CPU code from {best}")
    return variant_name(best)


def cpu_code_name() -> str:
    """The variant this process runs, or `built-in` for a build with its CPU code inside."""
    return ensure_cpu_backend() or "built-in"


def run_module_with_cpu_code(argv: list[str]) -> None:
    """Run `python -m MODULE ARGS...` in this process, after loading the CPU variant."""
    if not argv:
        sys.exit("usage: python -m localagent.backends.cpu_backend MODULE [ARGS...]")
    try:
        ensure_cpu_backend()
    except BackendError as error:
        sys.exit(f"error: {error}")
    sys.argv = argv
    runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    run_module_with_cpu_code(sys.argv[1:])
