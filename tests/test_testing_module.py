"""`localagent.testing`: the scripted model as a pytest fixture, and grammar assertions for a user's tools,
run through the real engines (lark, llguidance on the embedded model's vocabulary, llama.cpp)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import Field

from localagent import Agent
from localagent.backends.scripted import ScriptedTurn
from localagent.core.messages import Final, ToolRequests
from localagent.testing import answer, assert_grammar_accepts, assert_grammar_rejects, call, reply_grammar
from localagent.tools.spec import ToolSpec


def book_table(
    guests: Annotated[int, Field(ge=1, le=12, description="How many people")],
    time: Annotated[str, Field(pattern=r"^\d\d:\d\d$")],
    area: Literal["inside", "terrace"] = "inside",
) -> str:
    """Book a table."""
    return f"booked for {guests} at {time}, {area}"


def test_the_fixture_drives_an_agent_with_the_users_tool(
    scripted_model: Callable[..., ScriptedTurn], tmp_path: Path
) -> None:
    model = scripted_model([call("book_table", {"guests": 2, "time": "19:30"}), answer("Booked.")])
    result = Agent(model=model, tools=[book_table], workspace=tmp_path).run("A table for two at 19:30")
    assert result.answer == "Booked."
    assert result.messages[-2].content.startswith("booked for 2 at 19:30, inside")
    assert model.calls[0].tool_names == ["book_table"]


def test_the_grammar_accepts_a_call_that_fits_the_schema_and_returns_it_read() -> None:
    read = assert_grammar_accepts(
        [book_table], call("book_table", {"guests": 4, "time": "20:00", "area": "terrace"})
    )
    assert isinstance(read, ToolRequests)
    assert read.requests[0].arguments == {"guests": 4, "time": "20:00", "area": "terrace"}
    assert isinstance(assert_grammar_accepts([book_table], answer("No table needed.")), Final)
    assert_grammar_accepts("calculator", call("calculator", {"expression": "1+1"}), engines=("lark", "gbnf"))


@pytest.mark.parametrize(
    ("reply", "tool_choice"),
    [
        (call("book_table", {"guests": 4}), "auto"),  # a required argument missing
        (call("book_table", {"guests": 4, "time": "8pm"}), "auto"),  # the pattern
        (call("book_table", {"guests": 4, "time": "20:00", "area": "roof"}), "auto"),  # the enum
        (call("book_a_table", {"guests": 4, "time": "20:00"}), "auto"),  # an unknown tool
        (call("book_table", {"guests": 4, "time": "20:00"}), "none"),  # tools are off
        (answer("Done."), "required"),  # a call is required
    ],
)
def test_the_grammar_refuses_what_the_schema_or_the_tool_choice_rules_out(
    reply: str, tool_choice: str
) -> None:
    assert_grammar_rejects([book_table], reply, tool_choice=tool_choice)


def test_a_failed_assertion_says_which_engine_refused_and_shows_the_grammar() -> None:
    with pytest.raises(
        AssertionError, match=r"lark, llguidance refused .* under the grammar:\n// localagent"
    ):
        assert_grammar_accepts([book_table], call("book_table", {"guests": 0, "time": "20:00"}))
    with pytest.raises(AssertionError, match="lark accepted"):
        assert_grammar_rejects([book_table], answer("fine"), engines=("lark",))


def test_specs_work_as_well_as_functions() -> None:
    spec = ToolSpec(
        name="lookup",
        description="Look a word up.",
        parameters={"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    )
    assert reply_grammar([spec]).tool_names == ("lookup",)
    assert_grammar_accepts([spec], call("lookup", {"word": "agent"}))


def test_a_users_own_pytest_gets_the_plugin_without_a_conftest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine='''
        from localagent import Agent
        from localagent.testing import answer, assert_grammar_accepts, call

        def shout(text: str) -> str:
            """Shout."""
            return text.upper()

        def test_shout(scripted_model, tmp_path):
            model = scripted_model([call("shout", {"text": "hi"}), answer("HI")])
            result = Agent(model=model, tools=[shout], workspace=tmp_path).run("shout hi")
            assert result.messages[-2].content.startswith("HI")

        def test_grammar():
            assert_grammar_accepts([shout], call("shout", {"text": "hi"}), engines=("lark",))
        '''
    )
    outcome = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    outcome.assert_outcomes(passed=2)
