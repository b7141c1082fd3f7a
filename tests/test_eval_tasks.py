"""`localagent eval tasks` and `run_suite`: a scripted model through the real command, crashes and
cancellation counted, and (slow) the embedded model end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from localagent.backends.scripted import ScriptedTurn
from localagent.cli import cli
from localagent.core.cancel import CancelToken
from localagent.core.messages import (
    Final,
    Message,
    SystemMessage,
    ToolChoice,
    ToolRequest,
    ToolRequests,
    UserMessage,
)
from localagent.evaluation.task_run import run_suite
from localagent.evaluation.tasks import load_suite
from localagent.tools.spec import ToolSpec

SUITE = load_suite()
TASKS = {task.id: task for task in SUITE.tasks}


def opening(question: str, root: Path) -> list[Message]:
    return [SystemMessage(content="You are a careful assistant."), UserMessage(content=question)]


def script_file(tmp_path: Path, items: list[str]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return f"script:{path}"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["eval", "tasks", *args], catch_exceptions=False)


def test_json_reports_every_task_with_its_figures_and_transcript(tmp_path: Path) -> None:
    # read-flour is solved; edit-threshold's edit is right but its reply repeats a read twice.
    flour, edit = TASKS["read-flour"], TASKS["edit-threshold"]
    doubled = (
        'Thought: look twice\nAction: read_file\nAction Input: {"path": "shelfwise/settings.py"}\n'
        'Action: read_file\nAction Input: {"path": "shelfwise/settings.py"}\n'
    )
    model = script_file(tmp_path, [*flour.solution, doubled, *edit.solution[1:]])
    folder = tmp_path / "transcripts"
    result = invoke(
        "--model",
        model,
        "--task",
        "edit-threshold",
        "--task",
        "read-flour",
        "--json",
        "--transcripts",
        str(folder),
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["backend"] == "script:script.json"
    assert payload["settings"]["model"] == model
    assert payload["transcripts"] == str(folder)
    assert payload["cancelled"] is False
    assert [t["id"] for t in payload["tasks"]] == ["read-flour", "edit-threshold"]  # suite order
    first, second = payload["tasks"]
    assert first | {"seconds": 0} == {
        "id": "read-flour",
        "category": "read",
        "split": TASKS["read-flour"].split,
        "workspace": "notes",
        "success": True,
        "status": "final",
        "steps": 2,
        "turns": 2,
        "tool_calls": 1,
        "tool_errors": 0,
        "format_errors": 0,
        "identical_calls": 0,
        "repeated_calls": 0,
        "seconds": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "answer": "250 g of flour.",
        "error": None,
        "problems": [],
        "transcript": str(folder / "read-flour.jsonl"),
    }
    assert (second["success"], second["steps"], second["identical_calls"], second["tool_calls"]) == (
        True,
        3,
        1,
        3,
    )
    assert payload["overall"] | {"median_seconds": 0, "p90_seconds": 0} == {
        "tasks": 2,
        "successes": 2,
        "success_rate": 1.0,
        "median_seconds": 0,
        "p90_seconds": 0,
        "turns_per_task": 2.5,
        "generated_tokens_per_task": 0.0,
        "tool_calls": 4,
        "tool_errors": 0,
        "format_errors": 0,
        "identical_calls": 1,
        "repeated_calls": 0,
        "tool_failure_runs": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "statuses": {"final": 2},
    }
    assert set(payload["categories"]) == {"read", "edit"}
    records = [json.loads(line) for line in (folder / "edit-threshold.jsonl").read_text().splitlines()]
    assert records[0]["type"] == "task" and records[0]["id"] == "edit-threshold"
    assert records[-1] == {"type": "verdict", "at": records[-1]["at"], "success": True, "problems": []}


def test_the_table_shows_each_task_why_it_failed_and_the_totals(tmp_path: Path) -> None:
    gold, leap = TASKS["no_tool-gold-symbol"], TASKS["no_tool-leap-year"]
    model = script_file(tmp_path, [*gold.solution, *leap.wrong])
    result = invoke(
        "--model",
        model,
        "--task",
        "no_tool-gold-symbol",
        "--task",
        "no_tool-leap-year",
        "--transcripts",
        str(tmp_path),
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "task",
        "split",
        "ok",
        "steps",
        "turns",
        "tool",
        "err",
        "fmt",
        "err",
        "identical",
        "seconds",
        "tokens",
        "in/out",
    ]
    gold_split, leap_split = gold.split, leap.split
    assert lines[1].split()[:8] == ["no_tool-gold-symbol", gold_split, "✓", "1", "1", "0", "0", "0"]
    assert lines[2].split()[:3] == ["no_tool-leap-year", leap_split, "✗"]
    assert any(line.split()[:2] == ["dev", str([gold_split, leap_split].count("dev"))] for line in lines)
    assert any(
        line.split()[:2] == ["held_out", str([gold_split, leap_split].count("held_out"))] for line in lines
    )
    assert "  no_tool-leap-year: the answer holds no number equal to 366" in lines
    assert any(line.split()[:3] == ["no_tool", "2", "50.0%"] for line in lines)
    assert any(
        line.startswith("overall: 1/2 tasks succeeded (50.0%), median ") and " p90 " in line for line in lines
    )
    assert (
        "0 identical calls in one reply, 0 repeated calls across steps, 0 runs ended in tool_failures"
        in lines
    )
    assert f"transcripts: {tmp_path}" in lines
    assert "2 tasks on script:script.json" in result.stderr


def test_transcripts_go_to_a_new_folder_under_the_state_dir_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    model = script_file(tmp_path, list(TASKS["no_tool-python-def"].solution))
    result = invoke("--model", model, "--task", "no_tool-python-def", "--json")
    assert result.exit_code == 0, result.output
    folder = Path(json.loads(result.stdout)["transcripts"])
    assert folder.parent == tmp_path / "state" / "localagent" / "transcripts"
    assert folder.name.startswith("tasks-")
    assert [p.name for p in folder.iterdir()] == ["no_tool-python-def.jsonl"]


@dataclass
class FunctionTurn:
    """A turn whose replies a test function gives: reply(messages, tools, tool_choice, cancel)."""

    reply: Callable[..., Final | ToolRequests]
    name: str = "function"

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_delta: Any = None,
    ) -> Final | ToolRequests:
        return self.reply(messages, tools, tool_choice, cancel)


def test_a_task_that_crashes_the_agent_is_a_failure_and_the_suite_goes_on() -> None:
    tasks = [TASKS["no_tool-closest-planet"], TASKS["no_tool-japan-capital"]]
    script = ScriptedTurn(list(tasks[1].solution))

    failures = iter([RuntimeError("the backend broke")])

    def crash_once(*turn: Any) -> Final | ToolRequests:
        failure = next(failures, None)
        if failure:
            raise failure
        return script(*turn)

    outcome = run_suite(tasks, FunctionTurn(crash_once), workspaces=SUITE.workspaces, opening=opening)
    crashed, solved = outcome.results
    assert (crashed.success, crashed.status) == (False, "error")
    assert crashed.error == "internal error: RuntimeError: the backend broke"
    assert solved.success
    assert outcome.summary()["overall"]["successes"] == 1


def test_a_crash_outside_the_runner_is_counted_too() -> None:
    def broken(question: str, root: Path) -> list[Message]:
        raise OSError("no prompt")

    tasks = [TASKS["no_tool-closest-planet"]]
    outcome = run_suite(tasks, ScriptedTurn([]), workspaces=SUITE.workspaces, opening=broken)
    (result,) = outcome.results
    assert (result.success, result.status, result.error) == (False, "error", "crashed: OSError: no prompt")


def test_tasks_run_in_threads_and_come_back_in_suite_order(tmp_path: Path) -> None:
    tasks = SUITE.select(["read", "list"])
    # The first four tasks wait for each other: a suite that ran them one by one would break the barrier.
    together = threading.Barrier(4, timeout=10)
    first_turns = iter(range(len(tasks)))

    def list_then_answer(messages: Sequence[Message], *rest: Any) -> Final | ToolRequests:
        if len(messages) > 2:
            return Final(content="nothing")
        if next(first_turns) < 4:
            together.wait()
        return ToolRequests(requests=[ToolRequest(id="c1", name="list_dir", arguments={"path": "."})])

    seen: list[str] = []
    outcome = run_suite(
        tasks,
        FunctionTurn(list_then_answer),
        workspaces=SUITE.workspaces,
        concurrency=4,
        transcripts=tmp_path,
        opening=opening,
        on_result=lambda r: seen.append(r.id),
    )
    assert [r.id for r in outcome.results] == [t.id for t in tasks]
    assert sorted(seen) == sorted(t.id for t in tasks)
    assert all(r.status == "final" and not r.success and r.tool_calls == 1 for r in outcome.results)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{t.id}.jsonl" for t in tasks)


def test_cancelling_keeps_the_finished_tasks_and_drops_the_interrupted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tasks = SUITE.select(["no_tool"])[:3]
    cancel = CancelToken()
    answers = iter(["Au", "cancel"])

    def cancel_in_the_second_task(messages: Sequence[Message], *rest: Any) -> Final | ToolRequests:
        if next(answers) == "cancel":
            cancel.cancel()
            cancel.raise_if_cancelled()
        return Final(content="Au")

    outcome = run_suite(
        tasks,
        FunctionTurn(cancel_in_the_second_task),
        workspaces=SUITE.workspaces,
        cancel=cancel,
        opening=opening,
    )
    assert outcome.cancelled
    assert [r.id for r in outcome.results] == [tasks[0].id]
    assert list(tmp_path.iterdir()) == []


def test_a_second_ctrl_c_ends_the_suite_at_once_and_leaves_no_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def interrupt(*turn: Any) -> Final | ToolRequests:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(SUITE.tasks[:2], FunctionTurn(interrupt), workspaces=SUITE.workspaces, opening=opening)
    assert list(tmp_path.iterdir()) == []


def test_the_command_refuses_concurrency_for_a_local_model() -> None:
    result = invoke("--concurrency", "2")
    assert result.exit_code == 2
    assert result.stderr == (
        "localagent: error: --concurrency 2 needs --api-base: a local model runs one task at a time\n"
    )


@pytest.mark.slow
def test_a_few_tasks_on_the_embedded_model_end_to_end(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "localagent",
            "eval",
            "tasks",
            "--json",
            "--transcripts",
            str(folder),
            "--task",
            "read-flour",
            "--task",
            "edit-dentist-done",
            "--task",
            "no_tool-leap-year",
            # Short runs: on a busy 2-core machine a full-length reply of this model takes minutes.
            "--max-steps",
            "2",
            "--max-tokens",
            "96",
        ],
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    payload = json.loads(result.stdout)
    print(json.dumps(payload["tasks"], indent=1))  # shown when an assertion below fails
    tasks, overall = payload["tasks"], payload["overall"]
    assert payload["backend"].startswith("local")
    assert (payload["settings"]["max_steps"], payload["settings"]["max_tokens"]) == (2, 96)
    assert [t["id"] for t in tasks] == ["read-flour", "edit-dentist-done", "no_tool-leap-year"]
    assert overall["tasks"] == 3 == sum(c["tasks"] for c in payload["categories"].values())
    assert overall["successes"] == sum(t["success"] for t in tasks)
    assert overall["success_rate"] == round(overall["successes"] / 3, 4)
    for key in ("tool_calls", "tool_errors", "format_errors", "identical_calls", "repeated_calls"):
        assert overall[key] == sum(t[key] for t in tasks)
    assert overall["tool_failure_runs"] == sum(t["status"] == "tool_failures" for t in tasks)
    assert sum(overall["statuses"].values()) == 3
    for task in tasks:
        assert 1 <= task["steps"] <= 3  # the last step may be tried twice (the wrap-up retry)
        assert task["format_errors"] <= task["steps"]
        if task["format_errors"] < task["steps"]:  # only well-formed replies report their tokens
            assert task["prompt_tokens"] > 0 and task["completion_tokens"] > 0
        assert task["seconds"] > 0
        assert task["success"] == (task["status"] == "final" and task["problems"] == [])
        assert task["identical_calls"] + task["repeated_calls"] <= task["tool_calls"]
        records = [json.loads(line) for line in Path(task["transcript"]).read_text().splitlines()]
        assert records[-1]["type"] == "verdict" and records[-1]["success"] == task["success"]


def test_added_tools_join_every_task_s_own(tmp_path: Path) -> None:
    task = TASKS["read-flour"]
    model = script_file(tmp_path, [*task.solution])
    result = invoke("--model", model, "--task", "read-flour", "--add-tools", "run_python", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["added_tools"] == "run_python"
    records = [json.loads(line) for line in Path(payload["tasks"][0]["transcript"]).read_text().splitlines()]
    started = next(r for r in records if r["type"] == "run_started")
    assert "run_python" in started["tools"] and "read_file" in started["tools"]
