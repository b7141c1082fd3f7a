"""The SQL grammar of query_tables, compiled by the engines that run it: llguidance (local models, vLLM)
and llama.cpp's GBNF. It takes the queries a question needs and refuses the names and values the
tables do not hold, so a model under it cannot write them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from conftest_grammar import gbnf_accepts, llguidance_accepts

from localagent.core.cancel import CancelToken
from localagent.formats.base import ReplyGrammar
from localagent.formats.react.grammar import build_grammar
from localagent.grammar_checks.engines import check_gbnf, check_llguidance
from localagent.tools.sql_focus import question_focus
from localagent.tools.table_catalog import workspace_tables
from localagent.tools.tables import TableQuery
from localagent.tools.workspace import Workspace

HARVESTS = """day,plot,picker,crop,kg
2024-06-02,P1,Orla,beans,1.5
2024-06-09,P2,Bram,kale,0.75
2024-06-23,P1,Orla,beans,2.25
2024-07-01,P3,Yusra,squash,4.25
2024-07-14,P2,Bram,beans,2.0
2024-08-03,P3,Yusra,kale,1.0
2024-05-26,P1,Orla,kale,0.5
"""
PLOTS = """plot,holder,area,soil
P1,Orla,12.5,loam
P2,Bram,20,clay
P3,Yusra,8,loam
"""
NO_QUESTION = ""  # as `grammar show` builds it: no question, so any value of a column may be written


@pytest.fixture(scope="module")
def garden(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("garden")
    (root / "harvests.csv").write_text(HARVESTS)
    (root / "plots.csv").write_text(PLOTS)
    return Workspace(root)


@cache
def grammar(root: Path, question: str) -> ReplyGrammar:
    """The reply grammar a local model writes under, with query_tables narrowed to the question."""
    spec = TableQuery(Workspace(root)).tool().turn_spec(question)
    return build_grammar([spec], "auto")


def reply(sql: str) -> str:
    return f'Thought: A query adds it up.\nAction: query_tables\nAction Input: {{"sql": "{sql}"}}\n'


def accepted(workspace: Workspace, question: str, sql: str) -> bool:
    """Whether both engines take the query; they must agree. The GBNF export, which llama.cpp compiles,
    is run through llguidance's reader of GBNF, as in test_gbnf_export.py."""
    compiled = grammar(workspace.root, question)
    by_llguidance = llguidance_accepts(compiled.lark, reply(sql))
    by_gbnf = gbnf_accepts(compiled.gbnf, reply(sql))
    assert by_llguidance is by_gbnf, sql
    return by_llguidance


def test_the_tool_schema_carries_the_grammar_and_both_engines_compile_it(garden: Workspace) -> None:
    spec = TableQuery(garden).tool().turn_spec(NO_QUESTION)
    sql = spec.grammar_parameters["properties"]["sql"]
    assert sql["type"] == "string" and sql["x-lark"]["start"] == "SQL"
    assert spec.parameters["properties"]["sql"].get("x-lark") is None  # the model's view of the tool
    compiled = grammar(garden.root, NO_QUESTION)
    assert [p for p in check_llguidance(compiled.lark) if not p.message.startswith("warning")] == []
    assert check_gbnf(compiled.gbnf) == []


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT SUM(kg) FROM harvests",
        "SELECT AVG(kg) FROM harvests WHERE crop = 'beans' AND picker = 'Orla'",
        "SELECT ROUND(AVG(area), 1) FROM plots WHERE soil != 'clay'",
        "SELECT SUM(kg) FROM harvests WHERE day LIKE '2024-06%'",
        "SELECT COUNT(*) FROM harvests WHERE day BETWEEN '2024-06-01' AND '2024-06-30'",
        "SELECT crop, SUM(kg) AS total FROM harvests GROUP BY crop ORDER BY SUM(kg) DESC LIMIT 1",
        "SELECT picker, COUNT(*) FROM harvests GROUP BY picker HAVING COUNT(*) > 1",
        "SELECT DISTINCT crop FROM harvests WHERE crop IN ('beans', 'kale') ORDER BY crop",
        "SELECT * FROM plots WHERE holder IN ('Orla', 'Yusra')",
        "SELECT plots.soil, SUM(harvests.kg) FROM harvests JOIN plots ON harvests.plot = plots.plot "
        "GROUP BY plots.soil",
    ],
)
def test_it_takes_the_queries_a_question_needs(garden: Workspace, sql: str) -> None:
    assert accepted(garden, NO_QUESTION, sql)
    # and each one runs
    assert TableQuery(garden).tool().run({"sql": sql}, CancelToken()) != "No rows."


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        ("SELECT SUM(weight) FROM harvests", "a column no table has"),
        ("SELECT SUM(area) FROM harvests", "a column of another table"),
        ("SELECT kg FROM harvests WHERE soil = 'loam'", "a column of another table in WHERE"),
        ("SELECT AVG(kg) FROM harvests WHERE crop = 'peas'", "a value the column lacks"),
        ("SELECT AVG(kg) FROM harvests WHERE crop = 'Beans'", "a value written in another case"),
        ("SELECT area FROM plots WHERE soil IN ('loam', 'sand')", "a value the column lacks, in a list"),
        ("SELECT SUM(kg) FROM crops", "a table that is not there"),
        ('SELECT SUM(kg) FROM \\"harvests.csv\\"', "a file's path for a table"),
        ("SELECT SUM(kg) FROM harvests JOIN plots ON harvests.kg = plots.area", "a join on no key"),
        ("DELETE FROM harvests", "a statement other than SELECT"),
    ],
)
def test_it_refuses_what_the_tables_do_not_hold(garden: Workspace, sql: str, what: str) -> None:
    assert not accepted(garden, NO_QUESTION, sql), what


def test_a_value_the_question_names_is_a_condition_the_query_must_have(garden: Workspace) -> None:
    question = "How many kg did Bram pick?"
    assert accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE picker = 'Bram'")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE picker = 'Orla'")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE crop = 'kale'")
    # the other table holds Bram too, and its queries need the condition as well
    assert accepted(garden, question, "SELECT area FROM plots WHERE holder = 'Bram'")
    assert not accepted(garden, question, "SELECT area FROM plots")


def test_two_named_values_are_required_in_either_order(garden: Workspace) -> None:
    question = "How many kg of beans did Orla pick on plot P1?"
    both = "SELECT SUM(kg) FROM harvests WHERE plot = 'P1' AND picker = 'Orla'"
    assert accepted(garden, question, both)
    assert accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE picker = 'Orla' AND plot = 'P1'")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE plot = 'P1'")


def test_an_average_question_refuses_a_sum(garden: Workspace) -> None:
    question = "What is the average harvest in kg?"
    assert accepted(garden, question, "SELECT AVG(kg) FROM harvests")
    assert accepted(garden, question, "SELECT ROUND(AVG(kg), 2) AS mean, crop FROM harvests GROUP BY crop")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests")
    assert not accepted(garden, question, "SELECT SUM(kg) / COUNT(*) FROM harvests")
    assert accepted(garden, NO_QUESTION, "SELECT SUM(kg) / COUNT(*) FROM harvests")


def test_a_month_named_as_a_period_is_a_required_date_condition(garden: Workspace) -> None:
    question = "How many kg were picked in June?"
    assert accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE day LIKE '2024-06%'")
    assert accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE strftime('%m', day) = '06'")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE day LIKE '2024-07%'")


def test_a_day_date_forces_no_month(garden: Workspace) -> None:
    question = "What was picked on 9 June?"
    assert accepted(garden, question, "SELECT crop FROM harvests WHERE day = '2024-06-09'")
    assert accepted(garden, question, "SELECT crop, day FROM harvests")


def test_a_most_question_takes_the_top_row_or_the_maximum(garden: Workspace) -> None:
    question = "Which crop gave the most kg?"
    top = "SELECT crop, SUM(kg) FROM harvests GROUP BY crop ORDER BY SUM(kg) DESC LIMIT 1"
    assert accepted(garden, question, top)
    assert accepted(garden, question, "SELECT crop, MAX(kg) FROM harvests")
    assert not accepted(garden, question, "SELECT crop, SUM(kg) FROM harvests GROUP BY crop")
    assert not accepted(garden, question, top.replace("DESC", "ASC"))


def test_a_percentage_question_takes_a_share_times_100(garden: Workspace) -> None:
    question = "What percentage of the harvests were kale?"
    share = "SUM(crop = 'kale') / COUNT(*) FROM harvests"
    assert accepted(garden, question, f"SELECT 100.0 * {share}")
    assert not accepted(garden, question, f"SELECT {share}")


def test_the_verb_may_names_no_month(garden: Workspace) -> None:
    question = "How many kg in all, if I may ask?"
    assert question_focus(question, workspace_tables(garden)).months == {}
    assert accepted(garden, question, "SELECT SUM(kg) FROM harvests")


def test_with_a_question_a_condition_compares_only_with_what_the_question_speaks_of(
    garden: Workspace,
) -> None:
    question = "How many kg of beans did Bram pick in 2024, not counting plot P1?"
    named = "SELECT SUM(kg) FROM harvests WHERE picker = 'Bram' AND plot != 'P1'"  # both named: required
    assert accepted(garden, question, named)
    assert accepted(garden, question, f"{named} AND crop = 'beans'")
    assert accepted(garden, question, f"{named} AND day LIKE '2024%'")
    assert accepted(garden, question, f"{named} AND kg > 0")
    # a column of few values is compared with one of them, not matched by a pattern
    assert not accepted(garden, question, f"{named} AND crop LIKE '%bean%'")
    # a filter the question never speaks of cannot be invented
    assert not accepted(garden, question, f"{named} AND crop = 'kale'")
    assert not accepted(garden, question, f"{named} AND kg > 2")
    assert not accepted(garden, question, f"{named} AND day LIKE '2024-06%'")
    assert not accepted(garden, question, f"{named} AND crop LIKE '%kal%'")
    assert not accepted(garden, question, "SELECT SUM(kg) FROM harvests WHERE picker = 'Bram'")  # P1 is named
