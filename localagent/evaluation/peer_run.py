"""Peer agents on the task suite, for a baseline on the same model: smolagents' CodeAgent or
ToolCallingAgent, with the model an OpenAI-compatible server runs (`localagent serve`), localagent's
own tools called in-process, each task in a fresh copy of its workspace and judged by the same
checks as localagent's runs (task_run.py, task_checks.py). smolagents is an optional extra.

The peer gets the task's question as it is, as its users would ask it. Its step limit leaves room
for the answer smolagents asks for once the limit is reached, so it makes at most as many model
calls as localagent's runs with the same `max_steps`; that answer is judged like any other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import smolagents
from smolagents.memory import ActionStep
from smolagents.utils import AgentParsingError

from localagent.core.cancel import CancelToken
from localagent.evaluation.peer_tools import PeerTool, ToolLog
from localagent.evaluation.task_checks import check_run, snapshot
from localagent.evaluation.task_run import OnResult, SuiteRun, TaskResult, workspace_copy
from localagent.evaluation.tasks import FixtureWorkspace, Task
from localagent.tools.loading import select_tools
from localagent.tools.workspace import Workspace

PeerAgent = Literal["code", "toolcalling"]
PEER_AGENTS: tuple[str, ...] = get_args(PeerAgent)
AGENT_CLASSES: dict[str, type[smolagents.MultiStepAgent]] = {
    "code": smolagents.CodeAgent,
    "toolcalling": smolagents.ToolCallingAgent,
}
LIMIT_REACHED = "reached its step limit; its answer is the one smolagents asked for then"


@dataclass(frozen=True)
class PeerSettings:
    agent: PeerAgent
    # Model calls a task may take, as `max_steps` counts localagent's.
    max_steps: int = 12


def openai_server_model(api_base: str, model: str, api_key: str, max_tokens: int) -> smolagents.Model:
    """smolagents' model for an OpenAI-compatible server, greedy, as localagent's runs decode."""
    return smolagents.OpenAIServerModel(
        model_id=model,
        api_base=api_base,
        api_key=api_key,
        client_kwargs={"timeout": 900, "max_retries": 0},
        temperature=0,
        max_tokens=max_tokens,
    )


def run_peer_suite(
    tasks: Sequence[Task],
    workspaces: Mapping[str, FixtureWorkspace],
    model: smolagents.Model,
    settings: PeerSettings,
    *,
    transcripts: Path | None = None,
    cancel: CancelToken | None = None,
    on_result: OnResult | None = None,
) -> SuiteRun:
    """Each task in turn (the server runs one request at a time); a cancelled suite starts no more."""
    cancel = cancel or CancelToken()
    results = []
    for task in tasks:
        if cancel.cancelled:
            break
        transcript = transcripts / f"{task.id}.jsonl" if transcripts else None
        result = run_peer_task(task, workspaces[task.workspace], model, settings, transcript, cancel)
        results.append(result)
        if on_result:
            on_result(result)
    return SuiteRun(results, cancel.cancelled)


def run_peer_task(
    task: Task,
    fixture: FixtureWorkspace,
    model: smolagents.Model,
    settings: PeerSettings,
    transcript: Path | None = None,
    cancel: CancelToken | None = None,
) -> TaskResult:
    """One task in a fresh copy of its workspace. Any crash is a failed result, not an error."""
    with workspace_copy(fixture) as root:
        before = snapshot(root)
        log = ToolLog()
        tools = [PeerTool(tool, log, cancel) for tool in select_tools(task.tools, Workspace(root))]
        agent = AGENT_CLASSES[settings.agent](
            tools=tools, model=model, max_steps=max(1, settings.max_steps - 1), verbosity_level=-1
        )
        status, answer, error = "error", "", None
        started = time.monotonic()
        try:
            run = agent.run(task.question, return_full_result=True)
            status, answer = "final", "" if run.output is None else str(run.output)
            error = LIMIT_REACHED if run.state == "max_steps_error" else None
        except Exception as crash:  # noqa: BLE001 - a task that crashes the peer is a failure, not the end
            error = f"crashed: {type(crash).__name__}: {crash}"
        seconds = time.monotonic() - started
        verdict = check_run(task, status, answer, before, snapshot(root))
    steps = [step for step in agent.memory.steps if isinstance(step, ActionStep)]
    if transcript is not None:
        _write_transcript(transcript, task, steps, verdict.success, verdict.problems)
    return TaskResult.judged(
        task,
        verdict,
        status=status,
        steps=len(steps),
        turns=len(steps),  # each step is one model call, the one after the step limit too
        tool_calls=log.calls,
        tool_errors=log.errors,
        format_errors=sum(isinstance(step.error, AgentParsingError) for step in steps),
        identical_calls=0,
        repeated_calls=0,
        seconds=seconds,
        prompt_tokens=_tokens(steps, lambda usage: usage.input_tokens),
        completion_tokens=_tokens(steps, lambda usage: usage.output_tokens),
        answer=answer,
        error=error,
        transcript=transcript,
    )


def _tokens(steps: Sequence[ActionStep], count: Callable[[Any], int]) -> int:
    return sum(count(step.token_usage) for step in steps if step.token_usage is not None)


def _write_transcript(
    path: Path, task: Task, steps: Sequence[ActionStep], success: bool, problems: Sequence[str]
) -> None:
    """One JSON line per step: what the model wrote, the calls, what came back, the error."""
    records: list[dict[str, Any]] = [{"type": "task", "id": task.id, "question": task.question}]
    for step in steps:
        records.append(
            {
                "type": "step",
                "step": step.step_number,
                "model_output": step.model_output,
                "tool_calls": [call.dict() for call in step.tool_calls or []],
                "observations": step.observations,
                "error": str(step.error) if step.error else None,
            }
        )
    records.append({"type": "verdict", "success": success, "problems": list(problems)})
    path.write_text(
        "".join(json.dumps(record, ensure_ascii=False, default=str) + "\n" for record in records),
        encoding="utf-8",
    )
