"""The README's first command: `localagent run` on the default model, offline, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localagent.backends.cpu_backend import cpu_code_name
from localagent.models.registry import DEFAULT_MODEL

pytestmark = pytest.mark.slow


def _run_json(
    arguments: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`localagent run TASK --json ...` in a fresh process, as a user starts it."""
    return subprocess.run(
        [sys.executable, "-m", "localagent", "run", arguments[0], "--json", *arguments[1:]],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=False,
    )


def test_first_run_on_the_default_model_answers_with_a_tool_call(tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"  # nothing assembled yet: the run assembles the model itself
    env = {
        **os.environ,
        "LOCALAGENT_HOME": str(home),
        # No network: any attempt to reach the internet through a proxy fails at once.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HF_HUB_OFFLINE": "1",
    }
    transcript = tmp_path / "first.jsonl"
    folder = tmp_path / "empty-folder"  # the workspace: as a user's, apart from localagent's home
    folder.mkdir()
    result = _run_json(["What is 17 * 23?", "--transcript", str(transcript)], cwd=folder, env=env)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["status"] == "final"
    calls = [r for m in payload["messages"] if m["role"] == "assistant" for r in m["tool_requests"]]
    assert calls and calls[0]["name"] == "calculator"
    observation = next(m for m in payload["messages"] if m["role"] == "tool")
    assert observation["content"].startswith("391")
    assert "391" in payload["answer"]
    assert payload["usage"]["prompt_tokens"] > 0 and payload["usage"]["cached_prompt_tokens"] > 0
    assert (home / "models" / f"{DEFAULT_MODEL}.gguf").is_file()
    assert "Traceback" not in result.stderr


def test_bench_prints_every_figure_the_issue_names_as_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "localagent", "bench", "--runs", "1", "--max-tokens", "16", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["cpu_code"] == cpu_code_name()
    assert set(figures["paths"]) == {"unconstrained", "stock_gbnf", "llguidance", "llguidance_no_drafts"}
    for path in figures["paths"].values():
        assert (
            path["ms_per_token"]["median"] > 0
            and path["ms_per_token"]["p90"] >= path["ms_per_token"]["median"]
        )
        assert path["first_token_ms"]["median"] > 0
    llguidance = figures["paths"]["llguidance"]
    assert 0 < llguidance["fast_forwarded_share"] < 1
    assert llguidance["mask_ms_per_token"]["n"] > 0
    assert figures["paths"]["llguidance_no_drafts"]["kept_draft_share"] == 0
    assert all(figures["ratios"][name] > 0 for name in ("llguidance_vs_unconstrained", "stock_vs_llguidance"))
    assert figures["ratios"]["drafts_vs_no_drafts"] > 0
    assert figures["grammar_compile_ms"]["tools"] == 10
    assert len(figures["kv_reuse"]["steps"]) >= 2
    assert figures["kv_reuse"]["max_extra_tokens_per_step"] <= 1
    assert figures["cold_start_s"] > 0 and figures["cold_start_without_disk_cache_s"] > 0


def test_a_real_run_names_the_lines_its_answer_rests_on(tmp_path: Path) -> None:
    (tmp_path / "boats.md").write_text(
        "# Jetty timetable\n\nThe first boat leaves at 06:40.\nThe last boat leaves at 22:15.\n"
    )
    result = _run_json(["When does the last boat leave?"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert "22:15" in payload["answer"]
    assert payload["sources"] == ["boats.md:4"]
    shown = subprocess.run(
        [sys.executable, "-m", "localagent", "run", "When does the last boat leave?"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "22:15" in shown.stdout
    assert "Sources: boats.md:4" in shown.stderr.splitlines()  # the line a user sees, after the answer
