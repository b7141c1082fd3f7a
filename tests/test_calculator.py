"""The calculator: correct arithmetic, and nothing but arithmetic."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from localagent.core.cancel import CancelToken
from localagent.tools.base import ToolError
from localagent.tools.calculator import MAX_EXPRESSION_CHARS, calculator, calculator_tool
from localagent.tools.loading import select_tools
from localagent.tools.workspace import Workspace


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("2 + 2", "4"),
        ("(2 + 3) * 4", "20"),
        ("7 / 2", "3.5"),
        ("7 // 2", "3"),
        ("-7 // 2", "-4"),
        ("7 % 3", "1"),
        ("2 ** 10", "1024"),
        ("2 ** -2", "0.25"),
        ("-3 + +5", "2"),
        ("0.1 + 0.2", "0.3"),
        ("1e3 * 2", "2000.0"),
        ("1_000 + 0x10", "1016"),
        ("sqrt(16)", "4.0"),
        ("abs(-3.5)", "3.5"),
        ("round(2.567, 2)", "2.57"),
        ("round(2.5)", "2"),
        ("min(4, 2, 8)", "2"),
        ("max(4, 2, 8)", "8"),
        ("floor(2.7) + ceil(2.1)", "5"),
        ("log(e)", "1.0"),
        ("log(8, 2)", "3.0"),
        ("round(sin(pi / 2), 6)", "1.0"),
        ("2 × 3 ÷ 4", "1.5"),
        ("  12 * 12\n", "144"),
        ("10 ** 300", "1" + "0" * 300),
        ("sum([8.5, 6.0, 4])", "18.5"),
        ("sum(1, 2, 3) / len([1, 2, 3])", "2.0"),
        ("mean([2, 4, 9])", "5.0"),
        ("average(1, 2)", "1.5"),
        ("max([3, 7, 5])", "7"),
    ],
)
def test_arithmetic(expression: str, result: str) -> None:
    assert calculator(expression) == result


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", r"Unknown function '__import__'"),
        ("__import__('os').system('touch /tmp/pwned')", r"Only functions called by a plain name"),
        ("__import__", r"Unknown name '__import__'"),
        ("().__class__.__bases__[0].__subclasses__()", r"Only functions called by a plain name"),
        ("(1).__class__", r"Attribute access \(a\.b\) is not allowed"),
        ("math.sqrt(4)", r"Only functions called by a plain name"),
        ("open('/etc/passwd')", r"Unknown function 'open'"),
        ("eval('1')", r"Unknown function 'eval'"),
        ("x + 1", r"Unknown name 'x'"),
        ("'a' * 3", r"'a' is not a number"),
        ("True + 1", r"True is not a number"),
        ("1j * 2", r"1j is not a number"),
        ("[1, 2]", r"A list needs a function around it, like sum\(\[1, 2\]\)"),
        ("(lambda: 1)()", r"Only functions called by a plain name"),
        ("lambda: 1", r"Lambda\) is not supported"),
        ("(y := 2)", r"NamedExpr\) is not supported"),
        ("1 if 1 else 2", r"IfExp\) is not supported"),
        ("1 < 2", r"Comparisons are not supported"),
        ("1,000", r"write 1000, not 1,000"),
        ("2 ^ 10", r"Use \*\* for powers"),
        ("1 << 10", r"BinOp\) is not supported"),
        ("sqrt(x=4)", r"sqrt\(\) takes plain numbers only"),
        ("max(*[1, 2])", r"max\(\) takes plain numbers only"),
    ],
)
def test_anything_but_arithmetic_is_refused(expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        calculator(expression)


@pytest.mark.parametrize(
    "expression",
    ["9**9**9", "10 ** 10 ** 10", "2 ** 100000", "(10 ** 1000) * (10 ** 1000) * (10 ** 1000)", "1e308 * 10"],
)
def test_huge_results_are_refused_quickly(expression: str) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="too large"):
        calculator(expression)
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 / 0", r"^Division by zero\.$"),
        ("5 % 0", r"^Division by zero\.$"),
        ("0 ** -1", r"^Division by zero\.$"),
        ("sqrt(-1)", r"sqrt\(-1\) is not defined \(math domain error\)"),
        ("log(0)", r"log\(0\) is not defined"),
        ("exp(1000)", r"too large"),
        ("(-8) ** (1 / 3)", r"not a real number"),
        ("min()", r"min\(\) needs at least one number"),
        ("sum(price)", r"Unknown name 'price': the calculator only knows numbers. Read the numbers first"),
        ("sqrt(1, 2)", r"Wrong number of arguments for sqrt\(\)"),
        ("round(1.5, 10 ** 9)", r"round\(\) takes a whole number of digits"),
        ("", r"The expression is empty"),
        ("2 +", r"Cannot parse '2 \+'"),
        ("-" * 100 + "1", r"nested too deeply"),
        ("1+" * 200 + "1", r"nested too deeply"),
        ("(" * 210 + "1" + ")" * 210, r"Cannot parse .*too many nested parentheses"),
        ("1" * (MAX_EXPRESSION_CHARS + 1), r"longer than 500 characters"),
    ],
)
def test_errors_are_tool_errors_with_clear_messages(expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        calculator(expression)


def test_calculator_tool_schema_and_run() -> None:
    tool = calculator_tool()
    assert tool.name == "calculator"
    assert not tool.changes_files
    assert tool.spec.parameters["required"] == ["expression"]
    assert tool.run({"expression": "6 * 7"}, CancelToken()) == "42"


def test_with_run_python_offered_code_in_the_calculator_gets_one_line_naming_it(tmp_path: Path) -> None:
    tools = {tool.name: tool for tool in select_tools("default,run_python", Workspace(tmp_path))}
    calculator_offered = tools["calculator"]
    for code in ("sum(rides/june.csv['km'])", "sum(rows['km'])", "total", "len('abc')"):
        with pytest.raises(ToolError) as refused:
            calculator_offered.run({"expression": code}, CancelToken())
        assert str(refused.value) == (
            "The calculator takes arithmetic on numbers only, like '(2 + 3) * 4'. "
            "To compute over the values in a file, use run_python."
        )
    with pytest.raises(ToolError, match=r"^Division by zero\.$"):
        calculator_offered.run({"expression": "1 / 0"}, CancelToken())
    assert calculator_offered.run({"expression": "6 * 7"}, CancelToken()) == "42"
    assert calculator_offered.spec == calculator_tool().spec


def test_without_run_python_the_calculator_names_no_other_tool(tmp_path: Path) -> None:
    (alone,) = select_tools("calculator", Workspace(tmp_path))
    with pytest.raises(ToolError, match="Unknown name 'total'") as refused:
        alone.run({"expression": "total"}, CancelToken())
    assert "run_python" not in str(refused.value)
