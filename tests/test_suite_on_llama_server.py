"""Part of the task suite through a real `python -m llama_cpp.server` serving the default instruct
model, in both API modes, as a user points `localagent eval tasks --api-base` at it.

Completions mode sends the reply grammar and renders the model's own chat template, so the model
gets the same prompt as locally and finishes easy tasks. Chat mode relies on the server's native
tool calls, which llama_cpp.server does not stream for `tool_choice: auto`; what matters there is
that every task runs to an end the suite can judge, with no crash.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_local import installed_model
from server_processes import ServerProcess, serving_with_llama_cpp

from localagent.models.registry import DEFAULT_MODEL

pytestmark = pytest.mark.slow

# One read, one search and one no-tool task that the default model finishes in two steps locally.
TASKS = ["read-request-timeout", "search-tomato-day", "no_tool-hours-in-week"]


@pytest.fixture(scope="module")
def instruct_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from serving_with_llama_cpp(installed_model(DEFAULT_MODEL).path, tmp_path_factory)


def eval_tasks(server: ServerProcess, transcripts: Path, *flags: str) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "localagent", "eval", "tasks", "--api-base", server.url,
        "--model", DEFAULT_MODEL, "--max-steps", "4", "--json", "--transcripts", str(transcripts),
        *(option for task in TASKS for option in ("--task", task)), *flags,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, f"{done.stderr}\nserver:\n{server.tail()}"
    return json.loads(done.stdout)


def assert_every_task_judged(report: dict[str, Any]) -> None:
    tasks = report["tasks"]
    assert [task["id"] for task in tasks] == TASKS
    assert all(task["error"] is None for task in tasks), [task["error"] for task in tasks]
    assert all(Path(task["transcript"]).is_file() for task in tasks)
    assert report["overall"]["tasks"] == len(TASKS)


def test_completions_mode_finishes_tasks_under_the_grammar(
    instruct_server: ServerProcess, tmp_path: Path
) -> None:
    report = eval_tasks(instruct_server, tmp_path, "--api-mode", "completions", "--grammar-field", "gbnf")
    assert_every_task_judged(report)
    overall = report["overall"]
    assert overall["format_errors"] == 0, report["tasks"]
    assert overall["successes"] >= 2, [(task["id"], task["problems"]) for task in report["tasks"]]


def test_chat_mode_runs_every_task_to_a_judged_end(instruct_server: ServerProcess, tmp_path: Path) -> None:
    report = eval_tasks(instruct_server, tmp_path, "--api-mode", "chat")
    assert_every_task_judged(report)
    assert {task["status"] for task in report["tasks"]} <= {"final", "max_steps", "tool_failures"}
