"""The CPU variant loaded in a llama.cpp build that carries one library per CPU generation."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import llama_cpp
import pytest

from localagent.backends.cpu_backend import (
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
def test_a_build_without_its_variants_says_what_is_missing(tmp_path) -> None:
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
