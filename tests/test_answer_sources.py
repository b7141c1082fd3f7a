"""The sources of an answer: the lines shown to the model that hold the answer's numbers, codes or
names, found by matching text, never by asking the model."""

from __future__ import annotations

from localagent.core.messages import AssistantMessage, ToolMessage, ToolRequest, UserMessage
from localagent.loop.sources import SOURCES_SHOWN, answer_sources

READ = ToolMessage(
    request_id="r1",
    name="read_file",
    content=(
        "tides.md, lines 1-4 of 4:\n1: # Estuary\n2: High water at 06:12.\n3: Low water at 12:30.\n"
        "4: Pilot: Ines Varga"
    ),
)
SEARCH = ToolMessage(
    request_id="r2",
    name="search_text",
    content=(
        "Matches for 'buoy' in . (2 matching lines):\n"
        "buoys.csv:3: B-17,red,1,240.50\nbuoys.csv:5: B-22,green,2,99"
    ),
)


def test_a_line_holding_a_number_of_the_answer_is_a_source() -> None:
    assert answer_sources([READ], "Low water is at 12:30.") == ("tides.md:3",)


def test_numbers_match_as_numbers_and_codes_and_names_as_words() -> None:
    assert answer_sources([SEARCH], "B-17 costs 240.5 a year.") == ("buoys.csv:3",)
    assert answer_sources([READ], "The pilot is Ines Varga.") == ("tides.md:4",)
    assert answer_sources([SEARCH], "It costs 340.50.") == ()
    assert answer_sources([READ], "High water at 6:12.") == ()  # a time is one value: 06:12 is not 6:12


def test_the_evidence_before_the_question_counts_and_feedback_does_not() -> None:
    heading = "Lines of the files that hold what the question names:\n"
    evidence = UserMessage(content=f"{heading}log.md, line 9:\n9: Moored at 17:45")
    feedback = UserMessage(content="log.md, line 9:\n9: Moored at 17:45", feedback=True)
    assert answer_sources([evidence], "At 17:45.") == ("log.md:9",)
    assert answer_sources([feedback], "At 17:45.") == ()


def test_an_answer_with_no_value_or_a_failed_call_has_no_source() -> None:
    failed = READ.model_copy(update={"is_error": True})
    assert answer_sources([READ], "it is not in the files.") == ()
    assert answer_sources([failed], "Low water is at 12:30.") == ()


def test_a_query_names_the_file_of_its_table() -> None:
    query = ToolRequest(id="q1", name="query_tables", arguments={"sql": "SELECT SUM(fee) FROM buoys"})
    call = AssistantMessage(tool_requests=[query])
    result = ToolMessage(request_id="q1", name="query_tables", content="SUM(fee) = 339.5")
    files = {"buoys": "buoys.csv"}
    assert answer_sources([call, result], "The fees come to 339.5.", files.get) == ("buoys.csv",)


def test_at_most_a_few_sources_are_named() -> None:
    many = ToolMessage(
        request_id="r3",
        name="read_file",
        content="n.md, lines 1-9 of 9:\n" + "".join(f"{i}: 7 knots\n" for i in range(1, 10)),
    )
    assert len(answer_sources([many], "7 knots.")) == SOURCES_SHOWN
