"""The worked answer: the runner's extra turn without tools, driven by scripted turns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from localagent import prompts
from localagent.backends.scripted import ScriptedTurn
from localagent.cancel import CancelToken
from localagent.events import Event, TurnStarted
from localagent.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from localagent.runner import Runner, RunnerSettings
from localagent.tools.base import Tool
from localagent.tools.calculator import calculator_tool
from localagent.transcript import Transcript
from localagent.turn import plain_turn
from localagent.worked_answer import (
    agree,
    answer_in,
    answer_of,
    findings,
    outvoted,
    request,
    says_absent,
    works_out,
)

CONFIG = "workers = 3\npool_size = 12"


def read_config(path: str) -> str:
    """Read a file."""
    return CONFIG


def save(path: str, text: str) -> str:
    """Write a file."""
    return f"Wrote {path}."


TOOLS = [
    Tool.from_function(read_config),
    Tool(**{**vars(Tool.from_function(save)), "changes_files": True}),
    calculator_tool(),
]
QUESTION = "Each worker opens its own pool. How many connections can all the workers hold?"


@dataclass
class PlainScripted(ScriptedTurn):
    """A scripted turn with a plain turn of its own, as the local, /completions and chat turns have."""

    plain_items: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.plain = ScriptedTurn(self.plain_items, name="plain")


def call(name: str, arguments: str) -> str:
    return f"Thought: go\nAction: {name}\nAction Input: {arguments}\n"


def answer(text: str) -> str:
    return f"Thought: done\nFinal Answer: {text}"


def run(items: list, plain_items: list, tmp_path: Path | None = None, **settings) -> tuple:
    turn = PlainScripted(items, plain_items=plain_items)
    settings.setdefault("grounding_check", False)  # test_grounding.py sets it
    events: list[Event] = []
    transcript = Transcript(tmp_path / "run.jsonl") if tmp_path else None
    runner = Runner(turn, TOOLS, RunnerSettings(**settings), on_event=events.append, transcript=transcript)
    history = [
        SystemMessage(content="system"),
        UserMessage(content=prompts.first_task(QUESTION, "app.toml: x")),
    ]
    result = runner.run(history, CancelToken())
    if transcript:
        transcript.close()
    return result, turn, events


LOOKED_UP = [call("read_config", '{"path": "app.toml"}'), answer("12 connections.")]


def test_a_worked_out_number_replaces_the_first_answer() -> None:
    worked = "Each of the 3 workers holds 12.\n3 × 12 = 36.\n**Answer:** 36 connections."
    result, turn, events = run(LOOKED_UP, [worked])
    assert (result.status, result.answer) == ("final", "36 connections.")
    assert result.messages[-1] == AssistantMessage(content="36 connections.", reasoning="done")
    (asked,) = turn.plain.calls
    assert (asked.tool_names, asked.tool_choice) == ([], "none")
    text = asked.messages[-1].content
    assert text.startswith(CONFIG) and QUESTION in text and "app.toml: x" not in text
    started = [event for event in events if isinstance(event, TurnStarted)]
    assert [event.review for event in started] == [None, None, "worked_answer"]


def test_an_answer_without_a_new_number_leaves_the_first_one(tmp_path: Path) -> None:
    worked = "The pool size is 12.\nAnswer: 12 connections, 3 workers."
    result, turn, _ = run(LOOKED_UP, [worked, "12 connections"], tmp_path)
    assert result.answer == "12 connections."
    assert len(turn.plain.calls) == 2  # they differ, and the tie-breaker sides with the first
    assert '"type": "worked_answer"' in (tmp_path / "run.jsonl").read_text()


def test_a_reply_without_an_answer_line_counts_only_when_it_is_one_line() -> None:
    result, _, _ = run(LOOKED_UP, ["36"])
    assert result.answer == "36"
    steps = "1. The pool holds 12.\n2. There are 3 workers.\n3. I cannot tell."
    result, _, _ = run(LOOKED_UP, [steps])
    assert result.answer == "12 connections."


def test_no_worked_answer_without_tool_results_after_a_change_or_when_off() -> None:
    plain_reply = ["Answer: 99"]
    direct, turn, _ = run([answer("Paris.")], plain_reply)
    assert direct.answer == "Paris." and turn.plain.calls == []
    edited, turn, _ = run([call("save", '{"path": "a", "text": "b"}'), answer("Saved 1 file.")], plain_reply)
    assert edited.answer == "Saved 1 file." and turn.plain.calls == []
    off, turn, _ = run(LOOKED_UP, plain_reply, worked_answer=False)
    assert off.answer == "12 connections." and turn.plain.calls == []


def test_a_failed_worked_answer_keeps_the_first_one(tmp_path: Path) -> None:
    exhausted, _, events = run(LOOKED_UP, [], tmp_path)  # the backend fails
    assert (exhausted.status, exhausted.answer) == ("final", "12 connections.")
    assert "the script has no output left" in (tmp_path / "run.jsonl").read_text()
    assert [event.type for event in events][-2:] == ["turn_finished", "run_finished"]


def test_a_turn_without_a_plain_turn_gets_no_worked_answer() -> None:
    turn = ScriptedTurn(LOOKED_UP)
    result = Runner(turn, TOOLS).run([UserMessage(content=QUESTION)])
    assert plain_turn(turn) is None
    assert (result.answer, len(turn.calls)) == ("12 connections.", 2)


def test_answer_lines() -> None:
    assert answer_in("x = 3\nAnswer: 36 in all\nsince 3 × 12") == "36 in all\nsince 3 × 12"
    assert answer_in("Answer: first\n## Answer: second") == "second"
    assert answer_in("**Answer:**\n140 euros") == "140 euros"
    assert answer_in("The answer is 36.") is None
    assert answer_in("so 12 * 3 = 36. Answer: 36") == "36"
    assert answer_in("The Answer: 36 is wrong") is None  # not after a sentence's end
    assert answer_in("Answer:   ") is None
    assert answer_of("140 euros.") == "140 euros." and answer_of("  ") is None
    assert answer_of("1. a\n2. b") is None and answer_of("1. a\nAnswer: 36") == "36"


def test_a_worked_out_number_is_new_and_one_arithmetic_step_from_the_known_ones() -> None:
    found = ["price,stock\n5.50,120"]
    assert works_out("660 euros", "5.50 each", found)  # 5.50 × 120
    assert works_out("125.5", "5.50", found) and works_out("about 4.6%", "5.50", found)  # +, /
    assert works_out("140 euros", "35 euros", ["up to 35 euros a day"], "a four-day trip")
    assert works_out("44%", "4 are open", ["4 of 9 items are open"])  # 4 / 9 within 1%
    assert works_out("57%", "4 are open", ["7 items"]) and works_out("3 left", "4 are open", ["7 items"])
    assert not works_out("$5.5 each, 120 in stock", "", found)  # nothing new
    assert not works_out("It is in version 0.7.3.", "", found)
    assert not works_out("Call 0877 777 777.", "Olu", ["Olu will print 40 flyers."])  # made up
    assert not works_out("210 days", "21 days", ["a lead time of 21 days"])  # 21 × an assumed 10
    assert not works_out("11 euros", "5.50", found)  # 5.50 + 5.50: a number with itself
    # A step between two numbers of the findings alone: 4 of 9 is 44%, but the answer was 21 days.
    assert not works_out("44 days", "21 days", ["lead_time_days: 21\nP-104,4\n9 items"])
    # A first answer without a number took no step: the worked one may start from any known number.
    assert works_out("36", "app.toml holds the pool", ["workers = 3\npool_size = 12"])


def test_findings_and_request() -> None:
    messages: list[Message] = [
        UserMessage(content="q"),
        ToolMessage(request_id="1", name="read_config", content="a = 1"),
        ToolMessage(request_id="2", name="read_config", content="Tool error: no such file", is_error=True),
    ]
    assert findings(messages) == ["a = 1", "Tool error: no such file"]
    system, user = request("How much?", ["a = 1", "b = 2"])
    assert isinstance(system, SystemMessage) and "step by step" in system.content
    assert user.content.startswith("a = 1\n\nb = 2\n\n") and "How much?" in user.content
    assert prompts.question_of(prompts.first_task("How much?", "a.txt: x")) == "How much?"
    assert prompts.question_of("How much?") == "How much?"


LISTED = [call("read_config", '{"path": "app.toml"}'), answer("There are 3 settings.")]


def test_a_worked_answer_outvotes_the_first_when_a_direct_answer_agrees(tmp_path: Path) -> None:
    worked = "1. workers\n2. pool_size\nAnswer: There are 2 settings."
    result, turn, _ = run(LISTED, [worked, "2"], tmp_path)
    assert result.answer == "There are 2 settings."
    first, second = turn.plain.calls
    assert "Think step by step" in first.messages[-1].content
    assert second.messages[-1].content.endswith("Answer in one sentence.")
    assert CONFIG in second.messages[-1].content and (second.tool_names, second.tool_choice) == ([], "none")
    assert '"direct": "2"' in (tmp_path / "run.jsonl").read_text()


def test_the_first_answer_stands_when_the_direct_answer_sides_with_it_or_with_neither() -> None:
    worked = "Answer: There are 2 settings."
    with_first, turn, _ = run(LISTED, [worked, "3 settings"])
    assert with_first.answer == "There are 3 settings." and len(turn.plain.calls) == 2
    neither, _, _ = run(LISTED, [worked, "5"])
    assert neither.answer == "There are 3 settings."
    failed, _, _ = run(LISTED, [worked])  # the tie-breaker's turn fails: the first answer stands
    assert (failed.status, failed.answer) == ("final", "There are 3 settings.")


def test_no_tie_breaker_when_the_two_answers_agree() -> None:
    result, turn, _ = run(LISTED, ["Answer: 3 settings, as the file says."])
    assert result.answer == "There are 3 settings." and len(turn.plain.calls) == 1


def test_answers_agree_on_their_numbers_and_words_beyond_the_question() -> None:
    question = "How much does the wool blanket cost?"
    assert agree("The wool blanket costs 64.00.", "$64.00", question)
    assert not agree("The wool blanket costs 256.00.", "$64.00", question)
    asked = "Who is printing the flyers?"
    assert agree("Olu", "Olu is printing the flyers for the plant sale.", asked)
    assert agree("Aiko Tanaka, Finance", "Finance", asked)  # one holds the other's words
    assert not agree("Sanna in IT support", "B2.14", "In which room do I pick up my laptop?")


def test_a_first_answer_that_something_is_not_there_is_never_outvoted() -> None:
    question = "How much does the ceramic teapot cost?"
    assert says_absent("There is no ceramic teapot in the catalogue.", question)
    assert not says_absent("It costs 27.00.", question)
    # The question's own negation says nothing about the answer.
    assert not says_absent("3 files, not counting the tests", "How many files, not counting the tests?")
    assert not outvoted("There is no teapot.", "It costs 12.00.", "12.00", question)
    assert outvoted("It costs 27.00.", "It costs 12.00.", "It costs 12.00 now.", question)
    assert not outvoted("It costs 27.00.", "It costs 12.00.", "27.00", question)
