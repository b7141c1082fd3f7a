"""`localagent eval bfcl`: BFCL's AST rules on the real answer key, the scoring of one turn's reply, and
the command line (bad usage fast; the real embedded model in the slow tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from localagent.backends.scripted import ScriptedTurn
from localagent.evaluation.bfcl_checker import (
    ModelCall,
    check_call,
    check_reply,
    expected_function,
    standardize_string,
)
from localagent.evaluation.bfcl_data import BfclCase, BfclDataError, load_cases
from localagent.evaluation.bfcl_functions import (
    BfclCall,
    BfclFunction,
    BfclQuestion,
    load_answers,
    load_questions,
)
from localagent.evaluation.bfcl_functions import representative_arguments as representative
from localagent.evaluation.bfcl_run import run_column

BFCL = Path(__file__).parent / "external" / "bfcl"
ANSWERED = ("simple", "multiple", "parallel", "parallel_multiple")


@cache
def questions(category: str) -> dict[str, BfclQuestion]:
    return {q.id: q for q in load_questions(BFCL / f"BFCL_v3_{category}.json")}


@cache
def answers(category: str) -> dict[str, list[BfclCall]]:
    return load_answers(BFCL / "possible_answer" / f"BFCL_v3_{category}.json")


def answer_calls(question: BfclQuestion, expected: list[BfclCall]) -> list[ModelCall]:
    """The answer key's own calls, as a model would write them (function names as offered)."""
    calls = []
    for name, accepted in expected:
        function = expected_function(question.functions, name)
        assert function is not None, (question.id, name)
        calls.append((function.name, representative(function.spec().parameters, accepted)))
    return calls


def score(category: str, question_id: str, calls: list[ModelCall]) -> tuple[bool, str]:
    question = questions(category)[question_id]
    expected = answers(category)[question_id] if category != "irrelevance" else []
    verdict = check_reply(category, question.functions, expected, calls)
    return verdict.correct, verdict.reason


def key_calls(category: str, question_id: str) -> list[ModelCall]:
    return answer_calls(questions(category)[question_id], answers(category)[question_id])


# --- the AST rules on the real answer key -------------------------------------------------------------


@pytest.mark.parametrize("category", ANSWERED)
def test_the_answer_key_scores_as_correct_for_every_question(category: str) -> None:
    wrong = {}
    for question_id, question in questions(category).items():
        correct, reason = score(category, question_id, answer_calls(question, answers(category)[question_id]))
        if not correct:
            wrong[question_id] = reason
    assert wrong == {}
    assert len(questions(category)) == len(answers(category))


@pytest.mark.parametrize("category", ["parallel", "parallel_multiple"])
def test_parallel_answers_match_in_any_order(category: str) -> None:
    for question_id, question in questions(category).items():
        calls = answer_calls(question, answers(category)[question_id])
        assert score(category, question_id, calls[::-1]) == (True, ""), question_id


def test_simple_0_is_right_as_given_and_with_the_optional_argument_left_out() -> None:
    assert key_calls("simple", "simple_0") == [
        ("calculate_triangle_area", {"base": 10, "height": 5, "unit": "units"})
    ]
    assert score("simple", "simple_0", [("calculate_triangle_area", {"base": 10, "height": 5})]) == (True, "")


@pytest.mark.parametrize(
    ("calls", "reason"),
    [
        ([("calculate_circle_area", {"base": 10, "height": 5})], "called calculate_circle_area"),
        ([("calculate_triangle_area", {"height": 5})], "missing required argument 'base'"),
        ([("calculate_triangle_area", {"base": 11, "height": 5})], "argument 'base': 11 is not among"),
        (
            [("calculate_triangle_area", {"base": 10, "height": 5, "color": "red"})],
            "unexpected argument 'color'",
        ),
        (
            [("calculate_triangle_area", {"base": "10", "height": 5})],
            "argument 'base': expected integer, got str",
        ),
        ([("calculate_triangle_area", {"base": 10, "height": 5, "unit": "cm"})], "argument 'unit'"),
        ([], "expected 1 call(s), got 0"),
        ([("calculate_triangle_area", {"base": 10, "height": 5})] * 2, "expected 1 call(s), got 2"),
    ],
)
def test_targeted_wrong_replies_to_simple_0_are_wrong(calls: list[ModelCall], reason: str) -> None:
    correct, why = score("simple", "simple_0", calls)
    assert not correct
    assert reason in why


def test_multiple_calling_another_offered_function_is_wrong() -> None:
    question = questions("multiple")["multiple_0"]
    (right,) = key_calls("multiple", "multiple_0")
    other = next(f.name for f in question.functions if f.name != right[0])
    assert score("multiple", "multiple_0", [right]) == (True, "")
    assert score("multiple", "multiple_0", [(other, right[1])])[1].startswith(f"called {other}")


@pytest.mark.parametrize("category", ["parallel", "parallel_multiple"])
def test_a_missing_or_an_extra_parallel_call_is_wrong(category: str) -> None:
    question_id = f"{category}_0"
    calls = key_calls(category, question_id)
    assert len(calls) >= 2
    assert score(category, question_id, calls[:-1])[0] is False
    assert score(category, question_id, [*calls, calls[0]])[0] is False
    assert score(category, question_id, [calls[0]] * len(calls))[0] is False  # one-to-one, not any-to-one
    changed = (calls[-1][0], {**calls[-1][1], "unknown_argument": 1})
    correct, reason = score(category, question_id, [*calls[:-1], changed])
    assert not correct
    assert "no call matches expected call" in reason


def test_irrelevance_is_right_only_without_a_call() -> None:
    question = questions("irrelevance")["irrelevance_0"]
    function = question.functions[0]
    assert score("irrelevance", "irrelevance_0", []) == (True, "")
    correct, reason = score("irrelevance", "irrelevance_0", [(function.name, {})])
    assert not correct
    assert reason == f"called {function.name} although no function fits"


# --- the value rules ------------------------------------------------------------------------------------

MEASURE = BfclFunction(
    "measure",
    "",
    {
        "type": "dict",
        "properties": {
            "city": {"type": "string"},
            "ratio": {"type": "float"},
            "count": {"type": "integer"},
            "points": {"type": "array", "items": {"type": "float"}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "place": {"type": "dict", "properties": {"lat": {"type": "float"}, "name": {"type": "string"}}},
            "stops": {"type": "array", "items": {"type": "dict"}},
        },
        "required": ["city"],
    },
)


def check(arguments: dict[str, Any], accepted: dict[str, list[Any]]) -> bool:
    return check_call(
        MEASURE, {"city": ["Paris"], **accepted}, ("measure", {"city": "Paris", **arguments})
    ).correct


def test_strings_are_standardized_as_bfcl_does() -> None:
    assert standardize_string("April 1, 2024") == standardize_string("april 1 2024") == "april12024"
    assert standardize_string("New-York_City./*^") == "newyorkcity"
    assert standardize_string("it's") == 'it"s'
    assert check({"city": "  PARIS. "}, {})
    assert check({"city": "paris, france"}, {"city": ["Paris, France"]})
    assert not check({"city": "Pariss"}, {})


def test_an_int_passes_for_a_float_but_a_bool_not_for_an_int() -> None:
    assert check({"ratio": 2}, {"ratio": [2.0]})
    assert check({"ratio": 2.0}, {"ratio": [2.0, ""]})
    assert not check({"ratio": 2.5}, {"ratio": [2.0]})
    assert not check({"ratio": "2.0"}, {"ratio": [2.0]})
    assert check({"count": 1}, {"count": [1]})
    assert not check({"count": True}, {"count": [1]})
    assert not check({"count": 1.0}, {"count": [1]})


def test_lists_are_compared_element_wise_with_strings_standardized() -> None:
    assert check({"tags": ["New York", "LA"]}, {"tags": [["new york", "la"]]})
    assert not check({"tags": ["la", "new york"]}, {"tags": [["new york", "la"]]})
    assert not check({"tags": ["new york"]}, {"tags": [["new york", "la"]]})
    assert check({"points": [1.5, 2.0]}, {"points": [[1.5, 2.0], [3.0]]})
    # BFCL checks array items one level deep and converts no int there: ints fail against floats.
    assert not check({"points": [1, 2]}, {"points": [[1.0, 2.0]]})


def test_nested_dicts_are_compared_key_by_key() -> None:
    accepted = {"place": [{"lat": [48.85], "name": ["Paris", "paris city"], "zip": ["", "75001"]}]}
    assert check({"place": {"lat": 48.85, "name": "PARIS"}}, accepted)
    assert check({"place": {"lat": 48.85, "name": "Paris City", "zip": "75001"}}, accepted)
    assert not check({"place": {"lat": 48.86, "name": "Paris"}}, accepted)
    assert not check({"place": {"name": "Paris"}}, accepted)
    assert not check({"place": {"lat": 48.85, "name": "Paris", "extra": 1}}, accepted)
    stops = {"stops": [[{"name": ["A"]}, {"name": ["B"]}]]}
    assert check({"stops": [{"name": "a"}, {"name": "b"}]}, stops)
    assert not check({"stops": [{"name": "b"}, {"name": "a"}]}, stops)


def test_a_dotted_function_name_the_key_shortens_is_found() -> None:
    question = questions("simple")["simple_363"]
    assert answers("simple")["simple_363"][0][0] == "find_closest"
    assert expected_function(question.functions, "find_closest") is question.functions[0]


# --- one turn per question: structure and score ----------------------------------------------------


def simple_case(question_id: str = "simple_0") -> BfclCase:
    return BfclCase(questions("simple")[question_id], answers("simple")[question_id])


def call(name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_replies_are_checked_for_structure_and_scored() -> None:
    script = ScriptedTurn(
        [
            call("calculate_triangle_area", {"base": 10, "height": 5}),
            call("calculate_triangle_area", {"base": 12, "height": 5}),
            call("calculate_triangle_area", {"base": "ten", "height": 5}),
            call("area", {"base": 10}),
            call("calculate_triangle_area", '{"base": 10,'),
            {"content": "The area is 25."},
            "",
        ]
    )
    column = run_column("test", script, "simple", [simple_case()] * 7)
    outcome = [(r.valid_structure, r.correct) for r in column.results]
    assert outcome == [(True, True), (True, False), (False, False), (False, False), (False, False),
                       (True, False), (False, False)]  # fmt: skip
    problems = [r.problem for r in column.results]
    assert "base: 'ten' is not of type 'integer'" in problems[2]
    assert problems[3] == "called 'area', which is not among the functions"
    assert problems[4].startswith("Invalid JSON arguments for tool calculate_triangle_area")
    assert problems[6].startswith("unusable reply (empty)")
    assert column.summary() == {
        "questions": 7,
        "valid_structure_rate": round(3 / 7, 4),
        "ast_accuracy": round(1 / 7, 4),
        "seconds_per_question": column.summary()["seconds_per_question"],
        "median_seconds": column.summary()["median_seconds"],
    }
    sent = script.calls[0]
    assert [m.role for m in sent.messages] == ["system", "user"]
    assert sent.messages[1].content == questions("simple")["simple_0"].turns[0][0]["content"]
    assert sent.tool_names == ["calculate_triangle_area"] and sent.tool_choice == "auto"


def test_irrelevance_counts_an_answer_and_an_unusable_reply_as_no_call() -> None:
    question = questions("irrelevance")["irrelevance_0"]
    case = BfclCase(question, [])
    name = question.functions[0].name
    script = ScriptedTurn([{"content": "No function fits."}, "", call(name, {})])
    results = run_column("test", script, "irrelevance", [case] * 3).results
    assert [(r.valid_structure, r.correct) for r in results] == [(True, True), (False, True), (False, False)]


def test_cases_load_by_category_and_limit(tmp_path: Path) -> None:
    cases = load_cases(BFCL, "parallel", 5)
    assert [c.question.id for c in cases] == [f"parallel_{i}" for i in range(5)]
    assert all(len(c.expected) >= 2 for c in cases)
    assert all(c.expected == [] for c in load_cases(BFCL, "irrelevance", 3))
    with pytest.raises(BfclDataError, match="unknown BFCL category 'simpel'"):
        load_cases(BFCL, "simpel")
    with pytest.raises(BfclDataError, match="no BFCL questions for simple"):
        load_cases(tmp_path, "simple")


# --- the command line ------------------------------------------------------------------------------------


def localagent(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "localagent", *arguments], capture_output=True, text=True, timeout=900
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--category", "everything", "--data", str(BFCL)],
            "unknown BFCL category 'everything'; choose one of simple, multiple",
        ),
        (["--data", "/nonexistent/bfcl"], "BFCL data folder not found: /nonexistent/bfcl"),
    ],
)
def test_bad_usage_is_one_line_and_exit_status_2(arguments: list[str], message: str) -> None:
    done = localagent("eval", "bfcl", *arguments)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("localagent: error: ") and message in done.stderr


def test_a_data_folder_without_the_category_is_one_line(tmp_path: Path) -> None:
    done = localagent("eval", "bfcl", "--category", "parallel", "--data", str(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == (
        f"localagent: error: no BFCL questions for parallel in {tmp_path} (expected BFCL_v3_parallel.json)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("category", ["simple", "parallel", "irrelevance"])
def test_the_embedded_model_with_the_grammar_always_replies_in_structure(category: str) -> None:
    done = localagent("eval", "bfcl", "--category", category, "--limit", "3", "--json", "--data", str(BFCL))
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert {k: figures[k] for k in ("benchmark", "category", "questions", "max_tokens")} == {
        "benchmark": "bfcl",
        "category": category,
        "questions": 3,
        "max_tokens": 384,
    }
    assert set(figures["columns"]) == set(figures["results"]) == {"grammar", "no_grammar"}
    for name, column in figures["columns"].items():
        assert set(column) == {
            "questions",
            "valid_structure_rate",
            "ast_accuracy",
            "seconds_per_question",
            "median_seconds",
        }
        assert column["questions"] == 3 and 0 <= column["ast_accuracy"] <= 1
        results = figures["results"][name]
        assert [r["id"] for r in results] == [f"{category}_{i}" for i in range(3)]
        assert all(
            set(r) == {"id", "valid_structure", "correct", "seconds", "calls", "problem"} for r in results
        )
    assert figures["columns"]["grammar"]["valid_structure_rate"] == 1.0, figures["results"]["grammar"]


@pytest.mark.slow
def test_the_table_has_one_column_without_the_grammar_and_progress_on_stderr() -> None:
    done = localagent(
        "eval", "bfcl", "--limit", "2", "--no-grammar", "--max-tokens", "32", "--data", str(BFCL)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("BFCL simple: 2 questions")
    assert "no grammar" in done.stdout and "valid structure" in done.stdout
    assert "[no grammar] question 2/2 simple_1:" in done.stderr
    assert "[grammar]" not in done.stderr
