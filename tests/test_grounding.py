"""The grounding check after the worked answer, driven by scripted turns; the real model's checks
are measured by `localagent eval tasks` (README)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from test_worked_answer import CONFIG, LOOKED_UP, QUESTION, answer, call, run

from localagent import prompts
from localagent.cli.display import REVIEW_HEADINGS, RunDisplay
from localagent.events import TurnStarted
from localagent.grounding import says_no
from localagent.messages import AssistantMessage

# The worked answer's reply: it agrees with the first answer, so that stands.
WORKED = ["The pool size is 12.\nAnswer: 12 connections."]
NOT_FOUND = prompts.not_found_answer(QUESTION)


def checked(items: list, checks: list[str], tmp_path: Path | None = None, worked: list = WORKED, **settings):
    """A run whose checks the run's own turn answers, in its own format, after `items`."""
    script = items + [answer(reply) for reply in checks]
    return run(script, worked, tmp_path, **{"grounding_check": True, **settings})


def check_calls(turn, items: list = LOOKED_UP) -> list:
    return turn.calls[len(items) :]


def test_two_no_and_another_answer_without_files_say_the_files_do_not_hold_it(tmp_path: Path) -> None:
    result, turn, _ = checked(LOOKED_UP, ["No.", "**No**, it does not.", "About 40."], tmp_path)
    assert (result.status, result.answer) == ("final", NOT_FOUND)
    assert result.messages[-1] == AssistantMessage(content=NOT_FOUND, reasoning="done")
    holds, supports, bare = (call.messages[-1].content for call in check_calls(turn))
    assert holds.startswith(CONFIG) and QUESTION in holds and "hold what is needed" in holds
    assert "Proposed answer: 12 connections." in supports and supports.startswith(CONFIG)
    assert bare == prompts.bare_request(QUESTION) and CONFIG not in bare
    assert all(call.tool_names == [] and call.tool_choice == "none" for call in check_calls(turn))
    events = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    (note,) = [event for event in events if event["type"] == "grounding"]
    assert (note["draft"], note["answer"], note["bare"]) == ("12 connections.", NOT_FOUND, "About 40.")


def test_an_answer_the_model_gives_without_files_too_stands() -> None:
    result, turn, _ = checked(LOOKED_UP, ["No", "No", "There are 12 connections."])
    assert result.answer == "12 connections." and len(check_calls(turn)) == 3


def test_a_yes_or_anything_but_no_ends_the_check() -> None:
    for reply in ("Yes.", "12 connections"):
        result, turn, _ = checked(LOOKED_UP, [reply])
        assert result.answer == "12 connections." and len(check_calls(turn)) == 1, reply
    result, turn, _ = checked(LOOKED_UP, ["No", "Yes, 12."])
    assert result.answer == "12 connections." and len(check_calls(turn)) == 2


def test_a_failed_check_keeps_the_answer(tmp_path: Path) -> None:
    result, _, _ = checked(LOOKED_UP, ["No"], tmp_path)  # the backend fails at the second check
    assert (result.status, result.answer) == ("final", "12 connections.")
    events = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    failed = [event for event in events if event["type"] == "grounding" and "error" in event]
    assert [event["draft"] for event in failed] == ["12 connections."]
    assert "the script has no output left" in failed[0]["error"]


def test_no_check_for_an_answer_that_something_is_not_there_a_change_or_when_off() -> None:
    absent = [call("read_config", '{"path": "app.toml"}'), answer("The file does not say.")]
    result, turn, _ = checked(absent, ["No"], worked=["Answer: The file does not say."])
    assert result.answer == "The file does not say." and check_calls(turn, absent) == []
    edited = [call("save", '{"path": "a", "text": "b"}'), answer("Saved 1 file.")]
    result, turn, _ = checked(edited, ["No", "No", "Other."])
    assert result.answer == "Saved 1 file." and check_calls(turn, edited) == []
    result, turn, _ = checked(LOOKED_UP, ["No", "No", "Other."], worked_answer=False, grounding_check=False)
    assert result.answer == "12 connections." and check_calls(turn) == [] and turn.plain.calls == []


def test_the_check_runs_without_the_worked_answer() -> None:
    result, turn, _ = checked(LOOKED_UP, ["No", "No", "Other."], worked=[], worked_answer=False)
    assert result.answer == NOT_FOUND and len(check_calls(turn)) == 3 and turn.plain.calls == []


def test_says_no() -> None:
    assert all(says_no(reply) for reply in ("No", "No.", "no, the text is about pools", "**No**", '"No"'))
    assert not any(says_no(reply) for reply in ("Yes", "", "None of it", "Not sure", "deploy/nginx.conf"))


def test_each_check_is_shown_under_a_heading_that_says_what_it_checks() -> None:
    result, _, events = checked(LOOKED_UP, ["No", "No", "About 40."])
    assert result.answer == NOT_FOUND
    reviews = [event.review for event in events if isinstance(event, TurnStarted) and event.review]
    assert reviews == ["worked_answer", "grounding", "grounding", "grounding"]
    shown = io.StringIO()
    display = RunDisplay(shown, color=False)
    for event in events:
        display(event)
    lines = shown.getvalue().splitlines()
    assert lines.count(f"── step 2: {REVIEW_HEADINGS['grounding']}") == 3, lines
    assert f"── step 2: {REVIEW_HEADINGS['worked_answer']}" in lines


def test_no_check_when_the_tools_only_computed() -> None:
    computed = [call("calculator", '{"expression": "3 * 12"}'), answer("36 connections.")]
    result, turn, _ = checked(computed, ["No", "No", "Other."], worked=["Answer: 36 connections."])
    assert result.answer == "36 connections." and check_calls(turn, computed) == []
    assert len(turn.plain.calls) == 1  # the worked answer still runs
    result, turn, _ = checked([*computed[:1], *LOOKED_UP], ["No", "No", "Other."])
    assert result.answer == NOT_FOUND and len(check_calls(turn, [*computed[:1], *LOOKED_UP])) == 3
