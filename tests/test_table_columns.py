"""The calculator given a table file's column: the column's numbers, read from the file by code."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.core.cancel import CancelToken
from localagent.tools.base import Tool, ToolError
from localagent.tools.calculator import calculator_tool
from localagent.tools.loading import select_tools
from localagent.tools.table_columns import MAX_VALUES
from localagent.tools.workspace import Workspace

RAINFALL = (
    "gauge,day,mm,checked_by\n"
    "hilltop,2024-05-01,12.5,Oksana\n"
    "hilltop,2024-05-02,0.0,Oksana\n"
    "meadow,2024-05-01,7.25,Wendeline\n"
    "meadow,2024-05-02,3.0,Oksana\n"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "gauges").mkdir()
    (tmp_path / "gauges" / "may.csv").write_text(RAINFALL)
    (tmp_path / "gauges" / "may.tsv").write_text(RAINFALL.replace(",", "\t"))
    (tmp_path / "gauges" / "june.csv").write_text("gauge,mm\nhilltop,4\nmeadow,6\n")
    return tmp_path


@pytest.fixture
def calculator(workspace: Path) -> Tool:
    return calculator_tool(workspace=Workspace(workspace))


def calculate(tool: Tool, expression: str) -> str:
    return tool.run({"expression": expression}, CancelToken())


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("sum(gauges/may.csv['mm'])", "22.75 (from the 4 values of mm in gauges/may.csv)"),
        ('sum(gauges/may.csv["mm"])', "22.75 (from the 4 values of mm in gauges/may.csv)"),
        ("sum(gauges/may.csv, 'mm')", "22.75 (from the 4 values of mm in gauges/may.csv)"),
        ("mean('gauges/may.csv'['MM'])", "5.6875 (from the 4 values of MM in gauges/may.csv)"),
        ("(max(gauges/may.tsv[mm]))", "12.5 (from the 4 values of mm in gauges/may.tsv)"),
        ("len(gauges/may.csv['mm']) * 2", "8 (from the 4 values of mm in gauges/may.csv)"),
        (
            "sum(gauges/may.csv['mm']) + sum(gauges/june.csv['mm'])",
            "32.75 (from the 4 values of mm in gauges/may.csv and the 2 values of mm in gauges/june.csv)",
        ),
    ],
)
def test_a_table_column_named_as_code_a_model_writes_is_its_numbers(
    calculator: Tool, expression: str, result: str
) -> None:
    assert calculate(calculator, expression) == result


def test_plain_arithmetic_is_unchanged(calculator: Tool) -> None:
    assert calculate(calculator, "(2 + 3) * 4") == "20"


def test_a_column_that_is_not_there_names_the_file_s_columns(calculator: Tool) -> None:
    with pytest.raises(ToolError) as error:
        calculate(calculator, "sum(gauges/may.csv['rain'])")
    assert str(error.value) == (
        "gauges/may.csv has no column 'rain'; its columns are gauge, day, mm, checked_by."
    )


def test_a_column_of_words_is_refused_with_the_first_field_that_is_no_number(calculator: Tool) -> None:
    with pytest.raises(ToolError) as error:
        calculate(calculator, "sum(gauges/may.csv['checked_by'])")
    assert str(error.value) == "Column 'checked_by' of gauges/may.csv holds 'Oksana', not a number, in row 2."


@pytest.mark.parametrize(
    "expression",
    ["sum(gauges/april.csv['mm'])", "sum(../outside.csv['mm'])", "sum(/etc/hosts.csv['mm'])"],
)
def test_a_file_that_is_not_in_the_workspace_is_read_as_the_code_it_is(
    calculator: Tool, expression: str, tmp_path: Path
) -> None:
    (tmp_path.parent / "outside.csv").write_text("mm\n1\n2\n")
    with pytest.raises(ToolError) as plain_error:
        calculate(calculator_tool(), expression)
    with pytest.raises(ToolError) as error:
        calculate(calculator, expression)
    assert str(error.value) == str(plain_error.value)


def test_the_default_tools_calculator_reads_the_workspace_s_tables(workspace: Path) -> None:
    tools = {tool.name: tool for tool in select_tools(None, Workspace(workspace))}
    assert calculate(tools["calculator"], "sum(gauges/june.csv['mm'])") == (
        "10 (from the 2 values of mm in gauges/june.csv)"
    )
    with_code_tool = {tool.name: tool for tool in select_tools("default,run_python", Workspace(workspace))}
    assert calculate(with_code_tool["calculator"], "sum(gauges/june.csv['mm'])").startswith("10 ")


def test_an_expression_too_long_as_written_is_refused_before_any_file_is_read(calculator: Tool) -> None:
    with pytest.raises(ToolError, match="longer than 500"):
        calculate(calculator, "sum(gauges/may.csv['mm']) + " + " + ".join(["1"] * 300))


def test_a_column_longer_than_the_calculator_reads_is_refused_in_one_line(tmp_path: Path) -> None:
    rows = "".join(f"{index}\n" for index in range(MAX_VALUES + 1))
    (tmp_path / "long.csv").write_text("n\n" + rows)
    with pytest.raises(ToolError) as error:
        calculate(calculator_tool(workspace=Workspace(tmp_path)), "sum(long.csv['n'])")
    assert (
        str(error.value)
        == f"long.csv has {MAX_VALUES + 1} rows; the calculator reads a column of at most {MAX_VALUES}."
    )


def test_a_link_that_leads_out_of_the_workspace_is_not_followed(tmp_path: Path) -> None:
    inside = tmp_path / "ws"
    inside.mkdir()
    (tmp_path / "secret.csv").write_text("pin\n1234\n5678\n")
    (inside / "link.csv").symlink_to(tmp_path / "secret.csv")
    with pytest.raises(ToolError) as error:
        calculate(calculator_tool(workspace=Workspace(inside)), "sum(link.csv['pin'])")
    assert "1234" not in str(error.value)
    with pytest.raises(ToolError) as plain_error:
        calculate(calculator_tool(), "sum(link.csv['pin'])")
    assert str(error.value) == str(plain_error.value)


def test_an_error_after_a_column_is_read_quotes_what_was_written_not_the_numbers(calculator: Tool) -> None:
    with pytest.raises(ToolError) as error:
        calculate(calculator, "sum(gauges/may.csv['mm'] if wet)")
    assert str(error.value).startswith("Cannot parse \"sum(gauges/may.csv['mm'] if wet)\"")
