"""Running suite tasks through the real agent and tools, one fresh copy of a workspace each.

`run_suite` takes an Agent (its model loaded once, its MCP servers started once, for every task) or
a ready ModelTurn, so any backend (a local model, a server, a script) is judged the same way, from
the CLI or from Python. Each task runs on a copy of the agent with the task's own tools and workspace.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from queue import Queue
from typing import Any

from localagent.agent import Agent
from localagent.core.cancel import CancelToken
from localagent.core.events import Event, FormatError, ToolFinished, TurnFinished
from localagent.core.messages import AssistantMessage, Message, ToolMessage, UserMessage
from localagent.evaluation.task_checks import Verdict, check_run, snapshot
from localagent.evaluation.tasks import CATEGORIES, SPLITS, FixtureWorkspace, Task
from localagent.loop.runner import RunResult
from localagent.loop.tool_execution import Approver, approve_all
from localagent.loop.transcript import Transcript
from localagent.turn.model_turn import ModelTurn

# A run's first messages, from the task's question and its workspace; by default those of
# `localagent run` (the instructions, then the question after a view of the workspace).
Opening = Callable[[str, Path], list[Message]]
OnResult = Callable[["TaskResult"], None]


@dataclass(frozen=True)
class TaskResult:
    id: str
    category: str
    split: str
    workspace: str
    success: bool
    status: str
    steps: int
    turns: int  # model turns, malformed replies included
    tool_calls: int
    tool_errors: int
    format_errors: int
    identical_calls: int  # requests repeating an earlier request of the same reply
    repeated_calls: int  # requests repeating a call of an earlier step (answered from the repeat guard)
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    answer: str
    error: str | None
    problems: tuple[str, ...]
    transcript: Path | None

    @classmethod
    def judged(cls, task: Task, verdict: Verdict, **figures: Any) -> TaskResult:
        """The result of a run of `task` that `verdict` judged; `figures` are what the run measured."""
        return cls(
            id=task.id,
            category=task.category,
            split=task.split,
            workspace=task.workspace,
            success=verdict.success,
            problems=verdict.problems,
            **figures,
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {
            "seconds": round(self.seconds, 3),
            "problems": list(self.problems),
            "transcript": str(self.transcript) if self.transcript else None,
        }


@dataclass(frozen=True)
class SuiteRun:
    results: list[TaskResult]  # the tasks that finished, in suite order
    cancelled: bool

    def summary(self) -> dict[str, Any]:
        results = self.results
        splits = {name: _totals([r for r in results if r.split == name]) for name in SPLITS}
        categories = {
            name: _totals([r for r in results if r.category == name])
            for name in CATEGORIES
            if any(r.category == name for r in results)
        }
        overall = {
            **_totals(results),
            "tool_calls": sum(r.tool_calls for r in results),
            "tool_errors": sum(r.tool_errors for r in results),
            "format_errors": sum(r.format_errors for r in results),
            "identical_calls": sum(r.identical_calls for r in results),
            "repeated_calls": sum(r.repeated_calls for r in results),
            "tool_failure_runs": sum(r.status == "tool_failures" for r in results),
            "prompt_tokens": sum(r.prompt_tokens for r in results),
            "completion_tokens": sum(r.completion_tokens for r in results),
            "statuses": {
                status: sum(r.status == status for r in results)
                for status in sorted({r.status for r in results})
            },
        }
        return {"overall": overall, "splits": splits, "categories": categories}


def _totals(results: Sequence[TaskResult]) -> dict[str, Any]:
    count = len(results)
    successes = sum(r.success for r in results)
    seconds = [r.seconds for r in results]
    return {
        "tasks": count,
        "successes": successes,
        "success_rate": round(successes / count, 4) if count else 0.0,
        # The median resists the odd task slowed by other work on the machine; p90 shows the slow tail.
        "median_seconds": round(statistics.median(seconds), 3) if count else 0.0,
        "p90_seconds": round(_percentile(seconds, 90), 3) if count else 0.0,
        "turns_per_task": round(sum(r.turns for r in results) / count, 2) if count else 0.0,
        "generated_tokens_per_task": round(sum(r.completion_tokens for r in results) / count, 1)
        if count
        else 0.0,
    }


def _percentile(values: Sequence[float], percent: float) -> float:
    """The value below which `percent` of `values` lie, interpolated between neighbours."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * percent / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def run_suite(
    tasks: Sequence[Task],
    agent: Agent | ModelTurn,
    *,
    workspaces: Mapping[str, FixtureWorkspace],
    transcripts: Path | None = None,
    concurrency: int = 1,
    cancel: CancelToken | None = None,
    on_result: OnResult | None = None,
    opening: Opening | None = None,
    extra_tools: str = "",
) -> SuiteRun:
    """Run each task; `concurrency` > 1 runs tasks in threads, so the model must then be thread-safe.
    `extra_tools` (a --tools value) joins every task's own tools, to measure a candidate default.

    A cancelled suite stops starting tasks; the tasks it interrupted are left out of the results.
    """
    agent = agent if isinstance(agent, Agent) else Agent(model=agent)
    cancel = cancel or CancelToken()
    base = Path(tempfile.mkdtemp(prefix="localagent-tasks-"))
    places: Queue[Path] = Queue()  # one folder per worker, reused task after task
    for number in range(max(1, concurrency)):
        places.put(base / f"run{number}")

    def one(task: Task) -> TaskResult:
        place = places.get()
        try:
            return run_task(
                task,
                workspaces[task.workspace],
                agent,
                transcript=transcripts / f"{task.id}.jsonl" if transcripts else None,
                cancel=cancel,
                opening=opening,
                parent=place,
                extra_tools=extra_tools,
            )
        finally:
            places.put(place)

    finished: dict[str, TaskResult] = {}

    def keep(result: TaskResult) -> None:
        if result.status == "cancelled" and cancel.cancelled:
            return
        finished[result.id] = result
        if on_result:
            on_result(result)

    try:
        if concurrency <= 1:
            for task in tasks:
                if cancel.cancelled:
                    break
                keep(one(task))
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                pending: set[Future[TaskResult]] = {pool.submit(one, task) for task in tasks}
                while pending:
                    done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                    for future in done:
                        if not future.cancelled():
                            keep(future.result())
                    if cancel.cancelled:
                        for future in pending:
                            future.cancel()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return SuiteRun([finished[t.id] for t in tasks if t.id in finished], cancel.cancelled)


def run_task(
    task: Task,
    fixture: FixtureWorkspace,
    agent: Agent | ModelTurn,
    *,
    transcript: Path | None = None,
    cancel: CancelToken | None = None,
    opening: Opening | None = None,
    approve: Approver = approve_all,
    parent: Path | None = None,
    extra_tools: str = "",
) -> TaskResult:
    """One task in a fresh copy of its workspace, `parent`/workspace (a new temporary folder when
    `parent` is None), removed afterwards. Any crash is a failed result, not an error."""
    with workspace_copy(fixture, parent) as root:
        before = snapshot(root)
        record = _open_transcript(transcript, task)
        events: list[Event] = []
        messages: list[Message] = []
        status, answer, steps, error = "error", "", 0, None
        prompt_tokens = completion_tokens = 0
        started = time.monotonic()
        try:
            base = agent if isinstance(agent, Agent) else Agent(model=agent)
            task_agent = base.copy(
                workspace=root,
                tools=",".join(filter(None, (task.tools, extra_tools))),
                approve=approve,
                transcript=record,
                on_event=events.append,
            )
            try:
                result = _run_opening(task_agent, task.question, root, opening, cancel)
            finally:
                task_agent.close()
            status, answer, steps, error = result.status, result.answer, result.steps, result.error
            messages = result.messages
            prompt_tokens, completion_tokens = result.usage.prompt_tokens, result.usage.completion_tokens
        except Exception as crash:  # noqa: BLE001 - a task that crashes the agent is a failure, not the end
            error = f"crashed: {type(crash).__name__}: {crash}"
        seconds = time.monotonic() - started
        verdict = check_run(task, status, answer, before, snapshot(root))
        if record:
            record.write_note("verdict", success=verdict.success, problems=list(verdict.problems))
            record.close()
    identical = _identical_call_ids(messages)
    return TaskResult.judged(
        task,
        verdict,
        status=status,
        steps=steps,
        turns=sum(isinstance(e, TurnFinished) for e in events),
        tool_calls=sum(isinstance(m, ToolMessage) for m in messages),
        tool_errors=sum(isinstance(m, ToolMessage) and m.is_error for m in messages),
        format_errors=sum(isinstance(e, FormatError) for e in events),
        identical_calls=len(identical),
        repeated_calls=sum(
            isinstance(e, ToolFinished) and e.repeated and e.request_id not in identical for e in events
        ),
        seconds=seconds,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        answer=answer,
        error=error,
        transcript=transcript,
    )


def _run_opening(
    agent: Agent, question: str, root: Path, opening: Opening | None, cancel: CancelToken | None
) -> RunResult:
    if opening is None:
        return agent.run(question, cancel=cancel)
    *history, last = opening(question, root)
    if not isinstance(last, UserMessage):
        raise ValueError("an opening must end with the user's task")
    return agent.run(last.content, history=history, cancel=cancel)


@contextmanager
def workspace_copy(fixture: FixtureWorkspace, parent: Path | None = None) -> Iterator[Path]:
    """A fresh copy of the workspace at `parent`/workspace (in a new temporary folder when `parent`
    is None), removed afterwards."""
    with ExitStack() as stack:
        if parent is None:
            parent = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="localagent-task-")))
        root = parent / "workspace"
        shutil.rmtree(root, ignore_errors=True)
        fixture.write_to(root)
        try:
            yield root
        finally:
            shutil.rmtree(root, ignore_errors=True)


def _open_transcript(path: Path | None, task: Task) -> Transcript | None:
    if path is None:
        return None
    path.unlink(missing_ok=True)  # one transcript per task: a rerun into the same folder replaces it
    record = Transcript(path)
    record.write_note("task", id=task.id, category=task.category, workspace=task.workspace, tools=task.tools)
    return record


def _identical_call_ids(messages: Sequence[Message]) -> set[str]:
    """Ids of requests that repeat an earlier request of the same reply, same name and arguments."""
    repeats: set[str] = set()
    for message in messages:
        if not isinstance(message, AssistantMessage):
            continue
        seen: set[tuple[str, str]] = set()
        for request in message.tool_requests:
            arguments = (
                json.dumps(request.arguments, sort_keys=True)
                if request.arguments is not None
                else request.raw_arguments
            )
            key = (request.name, arguments)
            if key in seen:
                repeats.add(request.id)
            seen.add(key)
    return repeats
