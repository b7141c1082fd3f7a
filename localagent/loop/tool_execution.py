"""Running the tool requests of one step: one tool message per request, in request order.

Every problem becomes a `Tool error: ...` message the model can read and act on; nothing raises.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from localagent.core.cancel import Cancelled, CancelToken
from localagent.core.events import EventSink, ToolFinished, ToolStarted
from localagent.core.messages import NamedToolChoice, ToolChoice, ToolMessage, ToolRequest
from localagent.tools.base import InvalidArguments, Tool, ToolError
from localagent.turn import prompts

Approver = Callable[[Tool, ToolRequest], bool]


def deny_all(tool: Tool, request: ToolRequest) -> bool:
    return False


def choice_refusal(request: ToolRequest, tool_choice: ToolChoice) -> str | None:
    """The tool message for a request the tool choice does not allow, or None when it allows it."""
    if tool_choice == "none":
        return prompts.WRAP_UP_RETRY
    if isinstance(tool_choice, NamedToolChoice) and request.name != tool_choice.name:
        return prompts.other_tool_required(tool_choice.name)
    return None


def too_many_requests(index: int, max_requests: int) -> str | None:
    """The tool message for a request past the per-step limit (`index` counts from 0), or None."""
    return prompts.too_many_calls(max_requests) if index >= max_requests else None


def request_problem(request: ToolRequest, tools: Mapping[str, Tool]) -> str | None:
    """The tool message for a request that cannot run as written, or None when it may run.

    An unknown tool, a reply the parser could not read, arguments that fail the tool's schema or its
    own check: all are found before the tool runs and before anyone is asked to approve it.
    """
    tool = tools.get(request.name)
    # A call without a name has its own parse error, which says more than "unknown tool ''".
    if tool is None and (request.name or not request.parse_error):
        return prompts.unknown_tool(request.name, sorted(tools))
    if request.parse_error:
        return prompts.tool_error(request.parse_error)
    assert tool is not None
    try:
        tool.validate(request.arguments or {})
    except InvalidArguments as error:
        return prompts.invalid_arguments(request.name, str(error))
    return None


def approve_all(tool: Tool, request: ToolRequest) -> bool:
    return True


@dataclass
class _Outcome:
    content: str
    is_error: bool
    counts_as_failure: bool = False
    repeated: bool = False
    ran: bool = False
    announced: bool = False  # its call was shown (ToolStarted) before the outcome was known


@dataclass
class ToolExecutor:
    """Keeps what must outlive a step: earlier results for the repeat guard and failure streaks."""

    tools: dict[str, Tool]
    on_event: EventSink
    approve: Approver = deny_all
    max_requests: int = 8
    parallel: bool = True
    failure_streaks: dict[str, int] = field(default_factory=dict)
    # Whether the last step's every call repeated an earlier one: the model had nothing new to try.
    only_repeated: bool = False
    _earlier_results: dict[tuple[str, str], str] = field(default_factory=dict)
    _declined: set[tuple[str, str]] = field(default_factory=set)  # changes the user said no to
    # What the run changed, in order: the path of each change a tool made, or the tool's name when
    # its arguments name no path (a tool of an MCP server that is not read-only).
    changed: list[str] = field(default_factory=list)

    def run_step(self, requests: Sequence[ToolRequest], cancel: CancelToken) -> list[ToolMessage]:
        outcomes: list[_Outcome | None] = [None] * len(requests)
        batch: list[int] = []  # indexes of read-only calls waiting to run together

        def flush_batch() -> None:
            if not batch:
                return
            if self.parallel and len(batch) > 1:
                with ThreadPoolExecutor(max_workers=min(4, len(batch))) as pool:
                    results = list(pool.map(lambda i: self._call(requests[i], cancel), batch))
            else:
                results = [self._call(requests[i], cancel) for i in batch]
            for index, outcome in zip(batch, results, strict=True):
                outcomes[index] = outcome
            batch.clear()

        first_of_key: dict[tuple[str, str], int] = {}
        repeats: list[tuple[int, int]] = []
        for index, request in enumerate(requests):
            early = self._check(request, index)
            if early is not None:
                outcomes[index] = early
                continue
            tool = self.tools[request.name]
            key = _call_key(request)
            if key in first_of_key and not tool.changes_files:
                repeats.append((index, first_of_key[key]))
                continue
            first_of_key[key] = index
            if tool.changes_files:
                flush_batch()
                outcomes[index] = self._call_changing(tool, request, cancel)
            else:
                batch.append(index)
        flush_batch()
        for index, first in repeats:
            outcomes[index] = _repeat_of(outcomes[first])
        self.only_repeated = bool(outcomes) and all(outcome and outcome.repeated for outcome in outcomes)
        return [self._finish(request, outcome) for request, outcome in zip(requests, outcomes, strict=True)]

    def tool_with_failure_streak(self, limit: int) -> str | None:
        return next((name for name, streak in self.failure_streaks.items() if streak >= limit), None)

    def _check(self, request: ToolRequest, index: int) -> _Outcome | None:
        """An outcome decided without running the tool, or None when it should run."""
        over = too_many_requests(index, self.max_requests)
        if over is not None:
            return _Outcome(over, True)
        problem = request_problem(request, self.tools)
        if problem is not None:
            return _Outcome(problem, True, counts_as_failure=True)
        tool = self.tools[request.name]
        key = _call_key(request)
        if key in self._earlier_results and not tool.changes_files:
            # Its result is already above, so it is not shown again: only what the tool adds on a
            # repeat. Nearly every small model that repeats a call repeats it again when told to try
            # something else, so the next reply is the answer (tools_off).
            more = _more_on_repeat(tool, request, self._earlier_results[key])
            return _Outcome(f"{prompts.REPEATED_CALL}{more}", False, repeated=True)
        return None

    @property
    def tools_off(self) -> bool:
        """Whether the model must answer now: its last step only repeated earlier calls."""
        return self.only_repeated

    def _call_changing(self, tool: Tool, request: ToolRequest, cancel: CancelToken) -> _Outcome:
        """Shown first; refused without asking when it cannot apply or was declined; then asked."""
        self._announce(request)
        key = _call_key(request)
        try:
            if tool.dry_run is not None:
                tool.dry_run(request.arguments or {})
        except ToolError as error:
            return _Outcome(prompts.tool_error(str(error)), True, counts_as_failure=True, announced=True)
        if key in self._declined or not self.approve(tool, request):
            self._declined.add(key)
            return _Outcome(prompts.not_approved(tool.name), True, announced=True)
        outcome = self._call(request, cancel, announced=True)
        # A change can make any earlier read stale.
        self._earlier_results.clear()
        if not outcome.is_error:
            target = (request.arguments or {}).get("path")
            target = target if isinstance(target, str) and target else tool.name
            if target not in self.changed:
                self.changed.append(target)
        return outcome

    def _announce(self, request: ToolRequest) -> None:
        self.on_event(
            ToolStarted(
                request_id=request.id,
                name=request.name,
                arguments=request.arguments,
                raw_arguments=request.raw_arguments,
            )
        )

    def _call(self, request: ToolRequest, cancel: CancelToken, announced: bool = False) -> _Outcome:
        if cancel.cancelled:
            return _Outcome(prompts.CANCELLED_BEFORE, True, announced=announced)
        tool = self.tools[request.name]
        if not announced:
            self._announce(request)
        started = time.monotonic()
        try:
            content = tool.run(request.arguments or {}, cancel)
            outcome = _Outcome(content, False)
            if not tool.changes_files:
                self._earlier_results[_call_key(request)] = content
        except Cancelled:
            outcome = _Outcome(prompts.CANCELLED_WHILE, True)
        except ToolError as error:
            outcome = _Outcome(prompts.tool_error(str(error)), True, counts_as_failure=True)
        except InvalidArguments as error:
            outcome = _Outcome(prompts.invalid_arguments(tool.name, str(error)), True, True)
        except Exception as error:  # noqa: BLE001 - any tool bug becomes a message to the model
            outcome = _Outcome(prompts.tool_crashed(tool.name, _one_line(error)), True, True)
        outcome.ran = outcome.announced = True
        self.on_event(_finished(request, outcome, time.monotonic() - started))
        return outcome

    def _finish(self, request: ToolRequest, outcome: _Outcome | None) -> ToolMessage:
        assert outcome is not None
        if outcome.counts_as_failure:
            self.failure_streaks[request.name] = self.failure_streaks.get(request.name, 0) + 1
        elif not outcome.is_error:
            self.failure_streaks[request.name] = 0
        if not outcome.ran:
            if not outcome.announced:
                self._announce(request)  # a repeat or a refusal is shown like any call
            self.on_event(_finished(request, outcome, 0.0))
        return ToolMessage(
            request_id=request.id, name=request.name, content=outcome.content, is_error=outcome.is_error
        )


def _finished(request: ToolRequest, outcome: _Outcome, seconds: float) -> ToolFinished:
    return ToolFinished(
        request_id=request.id,
        name=request.name,
        content=outcome.content,
        is_error=outcome.is_error,
        seconds=round(seconds, 4),
        repeated=outcome.repeated,
    )


def _more_on_repeat(tool: Tool, request: ToolRequest, earlier: str) -> str:
    if tool.on_repeat is None:
        return ""
    try:
        more = tool.on_repeat(request.arguments or {}, earlier)
    except Exception:  # noqa: BLE001 - a repeat gets its note whatever happens
        return ""
    return f"\n{more}" if more else ""


def _repeat_of(first: _Outcome | None) -> _Outcome:
    assert first is not None
    if first.is_error:
        return _Outcome(prompts.REPEATED_FAILED_CALL, True)
    return _Outcome(prompts.REPEATED_CALL, False, repeated=True)


def _call_key(request: ToolRequest) -> tuple[str, str]:
    return request.name, json.dumps(request.arguments or {}, sort_keys=True, ensure_ascii=False)


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    detail = text[0] if text else ""
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__
