"""The ReAct loop: ask the model, run the tools it requests, feed the results back, until it answers.

It knows nothing of models or HTTP: a `ModelTurn` does one turn, `ToolExecutor` runs the requests.
The runner owns the step limit, the wrap-up, the breakers and the transcript.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from localagent.cancel import Cancelled, CancelToken
from localagent.errors import BackendError, RecoverableTurnError
from localagent.events import (
    Event,
    EventSink,
    FormatError,
    RunFinished,
    RunStarted,
    RunStatus,
    TurnFinished,
    TurnStarted,
    ignore_event,
)
from localagent.messages import (
    AssistantMessage,
    Final,
    Message,
    ToolChoice,
    ToolMessage,
    ToolRequests,
    Usage,
    UserMessage,
    assistant_message_for,
    describe_tool_choice,
)
from localagent.tool_execution import Approver, ToolExecutor, deny_all
from localagent.tools.base import Tool
from localagent.transcript import Transcript
from localagent.turn import ModelTurn

WRAP_UP_RETRY = (
    "Tool error: not run. The step limit is reached and tools are off. "
    "Reply now with your Final Answer, using what you already know."
)


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


@dataclass
class _RunState:
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    format_errors: int = 0
    wrap_up_retried: bool = False


class _Stop(Exception):
    def __init__(self, status: RunStatus, answer: str = "", error: str | None = None) -> None:
        super().__init__(error or status)
        self.status: RunStatus = status
        self.answer = answer
        self.error = error


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
        # What the transcript already holds, so a chat session's next run adds only its new messages.
        self._transcribed: list[Message] = []

    def run(self, history: Sequence[Message], cancel: CancelToken | None = None) -> RunResult:
        """Run until a final answer or a stop; `history` ends with the user's task."""
        cancel = cancel or CancelToken()
        state = _RunState(messages=[])
        executor = ToolExecutor(
            tools=self.tools,
            on_event=self._emit,
            approve=self.approve,
            max_requests=self.settings.max_requests_per_step,
            parallel=self.settings.parallel_tools,
        )
        task = next((m.content for m in reversed(history) if isinstance(m, UserMessage)), "")
        self._emit(RunStarted(task=task, tools=sorted(self.tools), max_steps=self.settings.max_steps))
        already = (
            len(self._transcribed) if list(history[: len(self._transcribed)]) == self._transcribed else 0
        )
        self._transcribed = self._transcribed[:already]
        for index, message in enumerate(history):
            if index < already:
                state.messages.append(message)
            else:
                self._append(state, message)
        outcome = _Stop("error", error="the run ended without a result")
        try:
            outcome = self._loop(state, executor, cancel)
        except _Stop as stop:
            outcome = stop
        except (Cancelled, KeyboardInterrupt) as interrupt:
            outcome = _Stop("cancelled", _last_answer(state.messages), "cancelled by the user")
            if isinstance(interrupt, KeyboardInterrupt):
                raise
        except BackendError as error:
            outcome = _Stop("error", _last_answer(state.messages), str(error))
        except Exception as error:  # noqa: BLE001 - a bug must still leave a transcript
            if self.transcript:
                self.transcript.write_note("crash", traceback=traceback.format_exc())
            outcome = _Stop(
                "error", _last_answer(state.messages), f"internal error: {type(error).__name__}: {error}"
            )
        finally:
            self._emit(
                RunFinished(
                    status=outcome.status,
                    answer=outcome.answer,
                    steps=state.steps,
                    usage=state.usage,
                    error=outcome.error,
                )
            )
        return RunResult(
            outcome.status, outcome.answer, state.steps, state.messages, state.usage, outcome.error
        )

    def _loop(self, state: _RunState, executor: ToolExecutor, cancel: CancelToken) -> _Stop:
        max_steps = self.settings.max_steps
        while True:
            cancel.raise_if_cancelled()
            state.steps += 1
            last = state.steps >= max_steps
            choice: ToolChoice = "none" if last else "auto"
            result = self._take_turn(state, choice, cancel)
            if result is None:  # a malformed reply, already answered with feedback
                if last:
                    self._use_wrap_up_retry(state)
                continue
            if isinstance(result, Final):
                return _Stop("final", result.content)
            if last:
                for request in result.requests:
                    self._append(
                        state,
                        ToolMessage(
                            request_id=request.id, name=request.name, content=WRAP_UP_RETRY, is_error=True
                        ),
                    )
                self._use_wrap_up_retry(state)
                continue
            tool_messages = executor.run_step(result.requests, cancel)
            if tool_messages:
                tool_messages[-1] = _with_steps_left(tool_messages[-1], max_steps - state.steps)
            for message in tool_messages:
                self._append(state, message)
            cancel.raise_if_cancelled()
            broken = executor.tool_with_failure_streak(self.settings.max_tool_failures)
            if broken:
                raise _Stop(
                    "tool_failures",
                    _last_answer(state.messages),
                    f"{broken} failed {self.settings.max_tool_failures} times in a row",
                )

    def _take_turn(
        self, state: _RunState, choice: ToolChoice, cancel: CancelToken
    ) -> Final | ToolRequests | None:
        """The model's reply, already in the history; None when it was malformed and got feedback."""
        steps_left = self.settings.max_steps - state.steps
        self._emit(
            TurnStarted(
                step=state.steps,
                tool_choice=describe_tool_choice(choice),
                steps_left=steps_left,
            )
        )
        started = time.monotonic()
        try:
            result = self.turn(
                state.messages, [tool.spec for tool in self.tools.values()], choice, cancel, self._emit
            )
        except RecoverableTurnError as error:
            state.format_errors += 1
            self._emit(FormatError(step=state.steps, problem=error.problem, feedback=error.feedback))
            self._emit(TurnFinished(step=state.steps, kind="format_error", seconds=_since(started)))
            self._append(state, AssistantMessage(content=error.raw))
            self._append(state, UserMessage(content=error.feedback, feedback=True))
            if state.format_errors >= self.settings.max_format_errors:
                raise _Stop(
                    "error",
                    _last_answer(state.messages),
                    f"the model gave {state.format_errors} malformed replies in a row; "
                    f"last: {error.feedback}",
                ) from None
            return None
        state.format_errors = 0
        if result.usage:
            state.usage = state.usage + result.usage
        self._emit(
            TurnFinished(step=state.steps, kind=result.kind, seconds=_since(started), usage=result.usage)
        )
        self._append(state, assistant_message_for(result))
        return result

    def _use_wrap_up_retry(self, state: _RunState) -> None:
        if state.wrap_up_retried:
            raise _Stop(
                "max_steps",
                _last_answer(state.messages),
                f"no final answer within {self.settings.max_steps} steps",
            )
        state.wrap_up_retried = True

    def _append(self, state: _RunState, message: Message) -> None:
        state.messages.append(message)
        self._transcribed.append(message)
        if self.transcript:
            self.transcript.write_message(message)

    def _emit(self, event: Event) -> None:
        if self.transcript:
            self.transcript.write_event(event)
        self.on_event(event)


def _with_steps_left(message: ToolMessage, steps_left: int) -> ToolMessage:
    if steps_left == 1:
        note = "[1 step left: tools are off for it. Write your Final Answer next.]"
    else:
        note = f"[{steps_left} steps left]"
    return message.model_copy(update={"content": f"{message.content}\n{note}"})


def _last_answer(messages: Sequence[Message]) -> str:
    """The newest text the model wrote for this task, leaving out replies that were malformed."""
    following: Message | None = None
    for message in reversed(messages):
        if isinstance(message, UserMessage) and not message.feedback:
            return ""
        malformed = isinstance(following, UserMessage) and following.feedback
        if isinstance(message, AssistantMessage) and message.content.strip() and not malformed:
            return message.content
        following = message
    return ""


def _since(started: float) -> float:
    return round(time.monotonic() - started, 4)
