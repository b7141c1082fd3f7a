"""Finding and loading the BFCL questions of one category with their answer keys."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from localagent.errors import LocalagentError
from localagent.evaluation.bfcl_functions import (
    BfclCall,
    BfclFunction,
    BfclQuestion,
    load_answers,
    load_questions,
)
from localagent.tools.spec import describe_spec_error, schema_problem

CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")


class BfclDataError(LocalagentError):
    """A missing or unreadable BFCL folder, or a category it does not hold."""


@dataclass(frozen=True)
class BfclCase:
    question: BfclQuestion
    expected: list[BfclCall]  # empty for irrelevance: the right reply calls nothing


def check_category(category: str) -> str:
    if category not in CATEGORIES:
        raise BfclDataError(f"unknown BFCL category {category!r}; choose one of {', '.join(CATEGORIES)}")
    return category


def load_cases(data_dir: Path, category: str, limit: int | None = None) -> list[BfclCase]:
    """The first `limit` questions of a category, each with its expected calls."""
    check_category(category)
    questions_file = data_dir / f"BFCL_v3_{category}.json"
    answers_file = data_dir / "possible_answer" / f"BFCL_v3_{category}.json"
    if not questions_file.is_file():
        raise BfclDataError(
            f"no BFCL questions for {category} in {data_dir} (expected {questions_file.name})"
        )
    if category != "irrelevance" and not answers_file.is_file():
        raise BfclDataError(
            f"no BFCL answers for {category} in {data_dir} (expected possible_answer/{answers_file.name})"
        )
    try:
        questions = load_questions(questions_file)[:limit]
        answers = load_answers(answers_file) if category != "irrelevance" else {}
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise BfclDataError(f"cannot read the BFCL data in {data_dir}: {error}") from None
    missing = [q.id for q in questions if category != "irrelevance" and q.id not in answers]
    if missing:
        raise BfclDataError(f"the answer key in {data_dir} has no entry for {missing[0]}")
    for question in questions:
        for function in question.functions:
            problem = _function_problem(function)
            if problem:
                raise BfclDataError(f"{questions_file}: question {question.id}: {problem}")
    return [BfclCase(question, answers.get(question.id, [])) for question in questions]


def _function_problem(function: BfclFunction) -> str | None:
    """Why a function cannot be offered as a tool (a bad name, a schema that cannot serve), or None."""
    try:
        spec = function.spec()
    except ValidationError as error:
        return f"function {function.name!r}: {describe_spec_error(error)}"
    problem = schema_problem(spec)
    return f"tool {spec.name!r}: {problem}" if problem else None
