"""The ReAct loop: ask the model, run the tools it requests, feed the results back, until it answers.

It knows nothing of models or HTTP: a `ModelTurn` does one turn, `ToolExecutor` runs the requests;
the runner owns the step limit, the wrap-up, the breakers and the transcript."""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from localagent import answer_source, grounding, prompts, request_kind, worked_answer
from localagent.cancel import Cancelled, CancelToken
from localagent.errors import BackendError, RecoverableTurnError
from localagent.events import (
    Event,
    EventSink,
    FormatError,
    ReviewKind,
    RunFinished,
    RunStarted,
    RunStatus,
    TurnFinished,
    TurnKind,
    TurnStarted,
    ignore_event,
)
from localagent.messages import (
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
)
from localagent.tool_execution import Approver, ToolExecutor, deny_all
from localagent.tools.base import Tool
from localagent.tools.files import FILE_EDITING_TOOLS
from localagent.transcript import Transcript
from localagent.turn import ModelTurn, plain_turn


@dataclass(frozen=True)
class RunnerSettings:
    max_steps: int = 12
    max_requests_per_step: int = 8
    max_tool_failures: int = 3
    max_format_errors: int = 3
    parallel_tools: bool = True
    worked_answer: bool = True
    grounding_check: bool = True
    change_check: bool = True
    source_check: bool = True

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
    first_new: int = 0  # where this run's messages start, after the history it was given
    task: str = ""  # the user's message the run answers
    change_checked: bool = False
    source_checked: bool = False

    def stop(self, status: RunStatus, error: str) -> _Stop:
        """The end of the run, with the newest answer the model gave."""
        return _Stop(status, _last_answer(self.messages), error)


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
        state = _RunState(messages=list(history), first_new=len(history))
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
        return RunResult(status, answer, state.steps, state.messages, state.usage, error)

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
                if not last and self._change_missing(state, executor):
                    self._tell_change_missing(state, executor)
                    continue
                if not last and (unrelated := self._unrelated_value(state, result.content)):
                    self._tell_unrelated_value(state, executor, unrelated)
                    continue
                return _Stop("final", self._reviewed_answer(state, result.content, cancel))
            if last:
                for request in result.requests:
                    self._append(state, _refused(request))
                self._use_wrap_up_retry(state)
                continue
            tool_messages = executor.run_step(result.requests, cancel)
            if tool_messages:
                tool_messages[-1] = _with_note(tool_messages[-1], prompts.steps_left(max_steps - state.steps))
                if executor.tools_off or max_steps - state.steps == 1:
                    # Before a reply with tools off: the question again, which a long run of results buried.
                    question = prompts.question_of(state.task)
                    tool_messages[-1] = _with_note(tool_messages[-1], prompts.answer_now(question))
            for message in tool_messages:
                self._append(state, message)
            cancel.raise_if_cancelled()
            broken = executor.tool_with_failure_streak(self.settings.max_tool_failures)
            if broken:
                raise state.stop(
                    "tool_failures", f"{broken} failed {self.settings.max_tool_failures} times in a row"
                )

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
                state.messages, [tool.turn_spec() for tool in self.tools.values()], choice, cancel, self._emit
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

    def _change_missing(self, state: _RunState, executor: ToolExecutor) -> bool:
        """Whether an answer comes before the change the request asks for: it reads as an instruction,
        a tool could change files, none has, the user refused none, and the run was not told so yet."""
        if state.change_checked or executor.refused_changes or not self._change_expected(state):
            return False
        return not self._changed_files(state.messages[state.first_new :], succeeded=True)

    def _change_expected(self, state: _RunState) -> bool:
        """Whether the check is on, a loaded tool could edit files, and the task reads as an instruction."""
        return (
            self.settings.change_check
            and bool(self._changing_tools())
            and request_kind.reads_as_instruction(prompts.question_of(state.task))
        )

    def _tell_change_missing(self, state: _RunState, executor: ToolExecutor) -> None:
        """Once per run: the answer is put back with a note that nothing changed, and tools are on again."""
        state.change_checked = True
        executor.turn_tools_on()
        note = prompts.change_missing(prompts.question_of(state.task), self._changing_tools())
        self._note("change_check", draft=_last_answer(state.messages))
        self._append(state, UserMessage(content=note, feedback=True))

    def _unrelated_value(self, state: _RunState, answer: str) -> answer_source.UnrelatedValue | None:
        """A value of the answer that the files hold only in lines unrelated to the question, unless
        the run was told so already (answer_source.py)."""
        if not self.settings.source_check or state.source_checked:
            return None
        question = prompts.question_of(state.task)
        unrelated = answer_source.unrelated_values(
            question, _tool_outputs(state.messages[state.first_new :]), answer
        )
        return unrelated[0] if unrelated else None

    def _tell_unrelated_value(
        self, state: _RunState, executor: ToolExecutor, unrelated: answer_source.UnrelatedValue
    ) -> None:
        """Once per run: the answer is put back with the line its value came from, and tools are on."""
        state.source_checked = True
        executor.turn_tools_on()
        line = unrelated.line
        note = prompts.unrelated_value(
            prompts.question_of(state.task), unrelated.value, line.path, line.number, line.text
        )
        self._note("source_check", draft=_last_answer(state.messages), value=unrelated.value, line=line.text)
        self._append(state, UserMessage(content=note, feedback=True))

    def _changing_tools(self) -> list[str]:
        """The loaded tools that edit the workspace's files."""
        return sorted(
            name for name, tool in self.tools.items() if tool.changes_files and name in FILE_EDITING_TOOLS
        )

    def _reviewed_answer(self, state: _RunState, draft: str, cancel: CancelToken) -> str:
        """The answer after the worked answer and the grounding check, for a run that looked things up
        and changed no file; the model's own answer otherwise."""
        run = state.messages[state.first_new :]
        found = worked_answer.findings(run)
        if plain_turn(self.turn) is None or not found or self._changed_files(run):
            return draft
        question = prompts.question_of(state.task)
        answer = (
            self._worked_answer(state, question, found, draft, cancel)
            if self.settings.worked_answer
            else draft
        )
        if (
            self.settings.grounding_check
            and self._looked_up(run)
            and not worked_answer.says_absent(answer, question)
        ):
            answer = self._grounded_answer(state, question, found, answer, cancel)
        if answer != draft:
            state.messages[-1] = state.messages[-1].model_copy(update={"content": answer})
        return answer

    def _looked_up(self, messages: Sequence[Message]) -> bool:
        """Whether a tool that looks things up (not one that only computes) returned anything."""
        return any(
            isinstance(message, ToolMessage)
            and not ((tool := self.tools.get(message.name)) is not None and tool.computes)
            for message in messages
        )

    def _worked_answer(
        self, state: _RunState, question: str, found: Sequence[str], draft: str, cancel: CancelToken
    ) -> str:
        """The answer worked out again from what the tools found (worked_answer.py); else `draft`."""
        text = self._side_reply(state, "worked_answer", worked_answer.request(question, found), draft, cancel)
        if text is None:
            return draft
        worked = worked_answer.answer_of(text)
        answer, direct = draft, None
        if worked is None:
            pass
        elif self._better_sourced(state, question, worked, draft) or worked_answer.works_out(
            worked, draft, found, question
        ):
            answer = worked
        elif not worked_answer.agree(worked, draft, question):
            request = worked_answer.direct_request(question, found)
            direct = self._side_reply(state, "direct_answer", request, draft, cancel) or None
            if direct is not None and worked_answer.outvoted(draft, worked, direct, question):
                answer = worked
        self._note("worked_answer", draft=draft, reply=text, direct=direct, answer=answer)
        return answer

    def _better_sourced(self, state: _RunState, question: str, worked: str, draft: str) -> bool:
        """Whether the worked answer's values come from lines about the question and the draft's do not."""
        outputs = _tool_outputs(state.messages[state.first_new :])
        return self.settings.source_check and answer_source.better_sourced(question, outputs, worked, draft)

    def _grounded_answer(
        self, state: _RunState, question: str, found: Sequence[str], answer: str, cancel: CancelToken
    ) -> str:
        """`answer`, or that the files do not hold it when the model finds it ungrounded (grounding.py)."""

        def ask(messages: list[Message]) -> str | None:
            return self._side_reply(state, "grounding", messages, answer, cancel, own_format=True)

        grounded, replies = grounding.grounded_answer(question, found, answer, ask)
        self._note("grounding", draft=answer, **replies, answer=grounded)
        return grounded

    def _side_reply(
        self,
        state: _RunState,
        purpose: ReviewKind,
        messages: list[Message],
        draft: str,
        cancel: CancelToken,
        own_format: bool = False,
    ) -> str | None:
        """The model's reply, without tools, in a conversation of its own: plain text, or in the run's
        own format (a text-tag turn writes a thought before its answer); None when the turn failed,
        noted with the `draft` answer it was about (the run has that already: this one is not needed)."""
        turn = self.turn if own_format else plain_turn(self.turn)
        assert turn is not None
        choice = describe_tool_choice("none")
        self._emit(TurnStarted(step=state.steps, tool_choice=choice, steps_left=0, review=purpose))
        started = time.monotonic()
        try:
            reply = turn(messages, [], "none", cancel, self._emit)
        except RecoverableTurnError as error:
            self._count_turn(state, "format_error", started, error.usage)
            self._note(purpose, draft=draft, error=error.feedback)
            return None
        except BackendError as error:
            self._count_turn(state, "format_error", started, None)
            self._note(purpose, draft=draft, error=str(error))
            return None
        self._count_turn(state, "final", started, reply.usage)
        return reply.content.strip() if isinstance(reply, Final) else ""

    def _note(self, kind: str, **fields: object) -> None:
        if self.transcript:
            self.transcript.write_note(kind, **fields)

    def _changed_files(self, messages: Sequence[Message], succeeded: bool = False) -> bool:
        """Whether the model asked to change a file in these messages (the answer reports an edit), or
        with `succeeded`, whether such a call went through."""
        return any(
            isinstance(message, ToolMessage)
            and (tool := self.tools.get(message.name)) is not None
            and tool.changes_files
            and not (succeeded and message.is_error)
            for message in messages
        )

    def _count_turn(self, state: _RunState, kind: TurnKind, started: float, usage: Usage | None) -> None:
        state.usage += usage or Usage()
        self._emit(TurnFinished(step=state.steps, kind=kind, seconds=_since(started), usage=usage))

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


def _refused(request: ToolRequest) -> ToolMessage:
    """The answer to a call made when tools were already off."""
    return ToolMessage(request_id=request.id, name=request.name, content=prompts.WRAP_UP_RETRY, is_error=True)


def _with_note(message: ToolMessage, note: str | None) -> ToolMessage:
    return message if note is None else message.model_copy(update={"content": f"{message.content}\n{note}"})


def _tool_outputs(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """What each tool returned, by tool name."""
    return [(message.name, message.content) for message in messages if isinstance(message, ToolMessage)]


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
