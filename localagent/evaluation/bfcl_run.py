"""Asking BFCL questions through a model turn, one reply each, and scoring the replies.

Each question is one turn with the question's functions as tools and tool choice `auto`. A reply has a
valid structure when it is a final answer, or tool calls whose names exist and whose arguments are a JSON
object that validates against the function's schema; an unusable reply (RecoverableTurnError) has not.
The calls are then scored by BFCL's AST rules (bfcl_checker).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from localagent.core.cancel import CancelToken
from localagent.core.messages import Final, Message, SystemMessage, ToolRequests, UserMessage
from localagent.errors import RecoverableTurnError
from localagent.evaluation.bfcl_checker import ModelCall, check_reply
from localagent.evaluation.bfcl_data import BfclCase
from localagent.tools.base import InvalidArguments, jsonschema_validator
from localagent.tools.spec import ToolSpec
from localagent.turn.model_turn import ModelTurn

SYSTEM_PROMPT = (
    "Call the functions that do what the user asks, with the values the user gives. "
    "If no function fits, answer without calling one."
)
# (column, question number from 1, question count, result)
Progress = Callable[[str, int, int, "QuestionResult"], None]


@dataclass(frozen=True)
class QuestionResult:
    id: str
    valid_structure: bool
    correct: bool
    seconds: float
    calls: list[dict[str, Any]]
    problem: str = ""  # why the structure is invalid, else why the calls are wrong

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "valid_structure": self.valid_structure,
            "correct": self.correct,
            "seconds": round(self.seconds, 3),
            "calls": self.calls,
            "problem": self.problem,
        }


@dataclass
class ColumnResult:
    name: str
    results: list[QuestionResult] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        count = len(self.results)
        return {
            "questions": count,
            "valid_structure_rate": _share(sum(r.valid_structure for r in self.results), count),
            "ast_accuracy": _share(sum(r.correct for r in self.results), count),
            "seconds_per_question": round(sum(r.seconds for r in self.results) / count, 3) if count else 0.0,
            # The median resists the odd question slowed by other work on the machine.
            "median_seconds": round(statistics.median(r.seconds for r in self.results), 3) if count else 0.0,
        }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def run_column(
    name: str, turn: ModelTurn, category: str, cases: Sequence[BfclCase], progress: Progress | None = None
) -> ColumnResult:
    column = ColumnResult(name)
    for number, case in enumerate(cases, start=1):
        result = ask(turn, category, case)
        column.results.append(result)
        if progress:
            progress(name, number, len(cases), result)
    return column


def question_messages(case: BfclCase) -> list[Message]:
    users = [m["content"] for turn in case.question.turns[:1] for m in turn if m.get("role") == "user"]
    return [SystemMessage(content=SYSTEM_PROMPT), *(UserMessage(content=text) for text in users)]


def ask(turn: ModelTurn, category: str, case: BfclCase) -> QuestionResult:
    """One turn on one question, timed, with its structure checked and its calls scored."""
    specs = [function.spec() for function in case.question.functions]
    started = time.perf_counter()
    try:
        reply: Final | ToolRequests | RecoverableTurnError = turn(
            question_messages(case), specs, "auto", CancelToken()
        )
    except RecoverableTurnError as error:
        reply = error
    seconds = time.perf_counter() - started
    if isinstance(reply, RecoverableTurnError):
        calls, structure_problem = None, f"unusable reply ({reply.problem}): {reply.raw[:200]!r}"
    else:
        calls, structure_problem = decoded_calls(reply), structure_problem_of(reply, specs)
    if calls is None and category != "irrelevance":
        correct, problem = False, "the reply holds no readable calls"
    else:
        # As in BFCL, a reply that does not decode into calls made none: right for irrelevance.
        verdict = check_reply(category, case.question.functions, case.expected, calls or [])
        correct, problem = verdict.correct, verdict.reason
    return QuestionResult(
        id=case.question.id,
        valid_structure=structure_problem is None,
        correct=correct,
        seconds=seconds,
        calls=[{"name": name, "arguments": arguments} for name, arguments in calls or []],
        problem=structure_problem or problem,
    )


def decoded_calls(reply: Final | ToolRequests) -> list[ModelCall] | None:
    """The calls a reply makes; None when one of them has unreadable arguments (BFCL: decoding fails)."""
    if isinstance(reply, Final):
        return []
    if any(request.arguments is None for request in reply.requests):
        return None
    return [(request.name, dict(request.arguments or {})) for request in reply.requests]


def structure_problem_of(reply: Final | ToolRequests, specs: Sequence[ToolSpec]) -> str | None:
    """Why the reply's calls do not fit the offered functions, or None when they do."""
    if isinstance(reply, Final):
        return None
    by_name = {spec.name: spec for spec in specs}
    for request in reply.requests:
        spec = by_name.get(request.name)
        if spec is None:
            return f"called {request.name!r}, which is not among the functions"
        if request.parse_error or request.arguments is None:
            return request.parse_error or f"unreadable arguments for {request.name}"
        try:
            jsonschema_validator(spec.parameters)(request.arguments)
        except InvalidArguments as error:
            return f"arguments of {request.name} do not fit its schema: {error}"
    return None
