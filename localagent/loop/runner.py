"""The ReAct loop: ask the model, run the tools it requests, feed the results back, until it answers.

It knows nothing of models or HTTP: a `ModelTurn` does one turn, `ToolExecutor` runs the requests;
the runner owns the step limit, the wrap-up, the breakers and the transcript."""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import (
    Event,
    EventSink,
    FormatError,
    RunFinished,
    RunStarted,
    RunStatus,
    TurnFinished,
    TurnKind,
    TurnStarted,
    ignore_event,
)
from localagent.core.messages import (
    AssistantMessage,
    Final,
    Message,
    ToolChoice,
    ToolMessage,
    ToolRequest,
    ToolRequests,
    Usage,
    UserMessage,
    assistant_message_for,
    describe_tool_choice,
    last_answer,
    refused_call,
)
from localagent.errors import BackendError, RecoverableTurnError
from localagent.loop.tool_execution import Approver, ToolExecutor, deny_all
from localagent.loop.transcript import Transcript
from localagent.tools.base import Tool
from localagent.turn import prompts
from localagent.turn.model_turn import ModelTurn


@dataclass(frozen=True)
class RunnerSettings:
    max_steps: int = 12
    max_requests_per_step: int = 8
    max_tool_failures: int = 3
    max_format_errors: int = 3
    parallel_tools: bool = True

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if self.max_requests_per_step < 1:
            raise ValueError("max_requests_per_step must be at least 1")


@dataclass(frozen=True)
class RunResult:
    status: RunStatus
    answer: str
    steps: int
    messages: list[Message]
    usage: Usage
    error: str | None = None
    changed: tuple[str, ...] = ()  # what the run's tools changed, in order: paths (or a pathless tool's name)
    sources: tuple[str, ...] = ()  # the places shown to the model that hold the answer's values


@dataclass
class _RunState:
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    format_errors: int = 0
    wrap_up_retried: bool = False
    task: str = ""  # the user's message the run answers

    def stop(self, status: RunStatus, error: str) -> _Stop:
        """The end of the run, with the newest answer the model gave."""
        return _Stop(status, last_answer(self.messages), error)


class _Stop(Exception):
    def __init__(self, status: RunStatus, answer: str = "", error: str | None = None) -> None:
        super().__init__(error or status)
        self.status: RunStatus
        self.status, self.answer, self.error = status, answer, error


class Runner:
    def __init__(
        self,
        turn: ModelTurn,
        tools: Sequence[Tool],
        settings: RunnerSettings | None = None,
        on_event: EventSink = ignore_event,
        approve: Approver = deny_all,
        transcript: Transcript | None = None,
    ) -> None:
        self.turn = turn
        self.tools = {tool.name: tool for tool in tools}
        self.settings = settings or RunnerSettings()
        self.on_event = on_event
        self.approve = approve
        self.transcript = transcript

    def run(self, history: Sequence[Message], cancel: CancelToken | None = None) -> RunResult:
        """Run until a final answer or a stop; `history` ends with the user's task."""
        cancel = cancel or CancelToken()
        state = _RunState(messages=list(history))
        limits = self.settings
        executor = ToolExecutor(
            self.tools, self._emit, self.approve, limits.max_requests_per_step, limits.parallel_tools
        )
        state.task = next((m.content for m in reversed(history) if isinstance(m, UserMessage)), "")
        self._emit(RunStarted(task=state.task, tools=sorted(self.tools), max_steps=self.settings.max_steps))
        if self.transcript:
            self.transcript.write_new_messages(history)
        outcome = _Stop("error", error="the run ended without a result")
        try:
            outcome = self._loop(state, executor, cancel)
        except _Stop as stop:
            outcome = stop
        except (Cancelled, KeyboardInterrupt) as interrupt:
            outcome = state.stop("cancelled", "cancelled by the user")
            if isinstance(interrupt, KeyboardInterrupt):
                raise
        except Exception as error:  # noqa: BLE001 - a bug must still leave a transcript
            outcome = self._failure(error, state)
        finally:
            status, answer, error = outcome.status, outcome.answer, outcome.error
            self._emit(
                RunFinished(status=status, answer=answer, steps=state.steps, usage=state.usage, error=error)
            )
        changed = tuple(executor.changed)
        return RunResult(status, answer, state.steps, state.messages, state.usage, error, changed)

    def _loop(self, state: _RunState, executor: ToolExecutor, cancel: CancelToken) -> _Stop:
        max_steps = self.settings.max_steps
        while True:
            cancel.raise_if_cancelled()
            state.steps += 1
            last = state.steps >= max_steps
            choice: ToolChoice = "none" if last or executor.tools_off else "auto"
            result = self._take_turn(state, choice, cancel)
            if result is None:  # a malformed reply, already answered with feedback
                if last:
                    self._use_wrap_up_retry(state)
                continue
            if isinstance(result, Final):
                return _Stop("final", result.content)
            if last:
                for request in result.requests:  # made when tools were already off
                    self._append(state, refused_call(request, prompts.WRAP_UP_RETRY))
                self._use_wrap_up_retry(state)
                continue
            self._run_tools(state, executor, result.requests, cancel)
            cancel.raise_if_cancelled()
            self._stop_on_failure_streak(state, executor)

    def _run_tools(
        self, state: _RunState, executor: ToolExecutor, requests: list[ToolRequest], cancel: CancelToken
    ) -> None:
        """The step's results, the last one noting the steps left near the end, and before a reply
        with tools off the question again, which a long run of results buried."""
        tool_messages = executor.run_step(requests, cancel)
        steps_left = self.settings.max_steps - state.steps
        if tool_messages:
            tool_messages[-1] = _with_note(tool_messages[-1], prompts.steps_left(steps_left))
            if executor.tools_off or steps_left == 1:
                note = prompts.answer_now(prompts.question_of(state.task))
                tool_messages[-1] = _with_note(tool_messages[-1], note)
        for message in tool_messages:
            self._append(state, message)

    def _stop_on_failure_streak(self, state: _RunState, executor: ToolExecutor) -> None:
        """The breaker: a tool that failed this many times in a row ends the run."""
        limit = self.settings.max_tool_failures
        broken = executor.tool_with_failure_streak(limit)
        if broken:
            raise state.stop("tool_failures", f"{broken} failed {limit} times in a row")

    def _take_turn(
        self, state: _RunState, choice: ToolChoice, cancel: CancelToken
    ) -> Final | ToolRequests | None:
        """The model's reply, already in the history; None when it was malformed and got feedback."""
        steps_left = self.settings.max_steps - state.steps
        self._emit(
            TurnStarted(step=state.steps, tool_choice=describe_tool_choice(choice), steps_left=steps_left)
        )
        started = time.monotonic()
        try:
            result = self.turn(
                state.messages,
                [tool.turn_spec(prompts.question_of(state.task)) for tool in self.tools.values()],
                choice,
                cancel,
                self._emit,
            )
        except RecoverableTurnError as error:
            state.format_errors += 1
            self._emit(FormatError(step=state.steps, problem=error.problem, feedback=error.feedback))
            self._count_turn(state, "format_error", started, error.usage)
            self._append(state, AssistantMessage(content=error.raw))
            self._append(state, UserMessage(content=error.feedback, feedback=True))
            if (count := state.format_errors) >= self.settings.max_format_errors:
                detail = f"the model gave {count} malformed replies in a row; last: {error.feedback}"
                raise state.stop("error", detail) from None
            return None
        state.format_errors = 0
        self._count_turn(state, result.kind, started, result.usage)
        self._append(state, assistant_message_for(result))
        return result

    def _count_turn(self, state: _RunState, kind: TurnKind, started: float, usage: Usage | None) -> None:
        state.usage += usage or Usage()
        self._emit(
            TurnFinished(
                step=state.steps, kind=kind, seconds=round(time.monotonic() - started, 4), usage=usage
            )
        )

    def _use_wrap_up_retry(self, state: _RunState) -> None:
        if state.wrap_up_retried:
            raise state.stop("max_steps", f"no final answer within {self.settings.max_steps} steps")
        state.wrap_up_retried = True

    def _failure(self, error: Exception, state: _RunState) -> _Stop:
        if isinstance(error, BackendError):
            return state.stop("error", str(error))
        if self.transcript:
            self.transcript.write_note("crash", traceback=traceback.format_exc())
        return state.stop("error", f"internal error: {type(error).__name__}: {error}")

    def _append(self, state: _RunState, message: Message) -> None:
        state.messages.append(message)
        if self.transcript:
            self.transcript.write_message(message)

    def _emit(self, event: Event) -> None:
        if self.transcript:
            self.transcript.write_event(event)
        self.on_event(event)


def _with_note(message: ToolMessage, note: str | None) -> ToolMessage:
    return message if note is None else message.model_copy(update={"content": f"{message.content}\n{note}"})
