"""The CPU variant loaded in a llama.cpp build that carries one library per CPU generation."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import llama_cpp
import pytest

from localagent.backends.cpu_backend import (
    PORTABLE_CODE_NOTICE,
    PORTABLE_VARIANT,
    SKIPPED_VARIANTS,
    best_variant,
    ensure_cpu_backend,
    variant_files,
    variant_name,
    variant_score,
)

variants_built = pytest.mark.skipif(
    not variant_files(), reason="llama.cpp built with its CPU code inside (no GGML_BACKEND_DL variants)"
)


def test_no_variants_means_nothing_to_choose() -> None:
    assert best_variant([]) is None


@variants_built
def test_the_loaded_variant_is_the_best_this_cpu_runs_but_never_a_skipped_one() -> None:
    loaded = ensure_cpu_backend()
    assert loaded is not None
    assert loaded not in SKIPPED_VARIANTS
    scores = {variant_name(path): variant_score(path) for path in variant_files()}
    assert scores[loaded] > 0
    assert scores[loaded] == max(score for name, score in scores.items() if name not in SKIPPED_VARIANTS)
    assert "x64" in scores and scores["x64"] > 0  # the baseline every x86-64 CPU runs


@variants_built
def test_the_loaded_variant_is_the_code_llama_cpp_runs() -> None:
    loaded = ensure_cpu_backend()
    features = llama_cpp.llama_print_system_info().decode()
    if loaded in {"haswell", "skylakex", "icelake", "cooperlake", "zen4", "alderlake"}:
        assert "AVX2 = 1" in features
    if loaded in {"skylakex", "icelake", "cooperlake", "zen4"}:
        assert "AVX512 = 1" in features
    assert "AMX" not in features


@variants_built
def test_a_build_without_its_variants_says_what_is_missing(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        from pathlib import Path
        from localagent.backends import cpu_backend
        from localagent.errors import BackendError
        cpu_backend.variant_directories = lambda: [Path({str(tmp_path)!r})]
        try:
            cpu_backend.ensure_cpu_backend()
        except BackendError as error:
            print(error)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "llama.cpp has no CPU code for this machine" in result.stdout
    assert str(tmp_path) in result.stdout


def test_a_module_runs_with_its_arguments_after_the_cpu_code_is_loaded() -> None:
    command = [sys.executable, "-m", "localagent.backends.cpu_backend", "calendar", "2026", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "February 2026" in result.stdout


def test_no_module_named_is_one_usage_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "localagent.backends.cpu_backend"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "usage: python -m localagent.backends.cpu_backend MODULE [ARGS...]"


BUILD_FILE = Path(__file__).parents[1] / "localagent" / "data" / "llama_cpp_build.cmake"
X86_VARIANTS = (  # ggml's names, as its CMake file lists them
    *("x64", "sse42", "sandybridge", "ivybridge", "piledriver", "haswell", "skylakex", "cannonlake"),
    *("cascadelake", "icelake", "cooperlake", "zen4", "alderlake", "sapphirerapids"),
)


def has_code(path: Path) -> bool:
    return hasattr(ctypes.CDLL(str(path)), "ggml_backend_init")


@variants_built
def test_the_variants_left_out_of_a_build_are_never_chosen() -> None:
    """README's install compiles the portable code and this CPU's; a wheel pip built earlier without
    its CMake file (pip's cache does not tell builds apart) has every variant's code."""
    with_code = {variant_name(path) for path in variant_files() if has_code(path)}
    assert PORTABLE_VARIANT in with_code
    assert ensure_cpu_backend() in with_code
    assert all(variant_score(path) == 0 for path in variant_files() if variant_name(path) not in with_code)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake program to configure a project with")
@variants_built
def test_the_build_file_keeps_the_portable_code_and_the_variant_ggml_rates_best_here(tmp_path: Path) -> None:
    """The CMake file, run on a project with ggml's variant targets, leaves every target empty but
    x64 and the one this CPU runs best, by ggml's own rating of the installed variants."""
    targets = "\n".join(f"add_library(ggml-cpu-{name} MODULE code.c)" for name in X86_VARIANTS)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(probe C)\n"
        f"{targets}\nadd_library(llama-common SHARED code.c)\n"
    )
    (tmp_path / "code.c").write_text("int ggml_backend_init(void) { return 1; }\n")
    build = tmp_path / "build"
    for command in (
        ["cmake", "-S", str(tmp_path), "-B", str(build), f"-DCMAKE_PROJECT_INCLUDE={BUILD_FILE}"],
        ["cmake", "--build", str(build)],
    ):
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
    kept = {
        path.name.removeprefix("libggml-cpu-").removesuffix(".so")
        for path in build.glob("libggml-cpu-*.so")
        if has_code(path)
    }
    assert kept == {PORTABLE_VARIANT, ensure_cpu_backend()}
    assert not has_code(next(build.glob("libllama-common.so*")))


@pytest.mark.slow
@variants_built
def test_a_cpu_no_compiled_variant_covers_runs_the_portable_code_and_says_so_once(tmp_path: Path) -> None:
    portable = next(path for path in variant_files() if variant_name(path) == PORTABLE_VARIANT)
    (tmp_path / portable.name).symlink_to(portable)
    script = textwrap.dedent(f"""
        from pathlib import Path
        from localagent.backends import cpu_backend
        from localagent.backends.local_turn import open_local_turn
        from localagent.models.registry import EMBEDDED_MODEL, resolve_model
        cpu_backend.variant_directories = lambda: [Path({str(tmp_path)!r})]
        model = resolve_model(EMBEDDED_MODEL)
        open_local_turn(model, notice=lambda text: print("notice:", text))
        print("loaded:", cpu_backend.cpu_code_name())
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"notice: {PORTABLE_CODE_NOTICE}", f"loaded: {PORTABLE_VARIANT}"]
