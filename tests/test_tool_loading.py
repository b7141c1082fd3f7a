"""Choosing tools with `--tools`, and loading user tools from modules and files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from localagent.core.cancel import CancelToken
from localagent.errors import LocalagentError
from localagent.tools.loading import (
    DEFAULT_TOOLS,
    ToolLoadError,
    builtin_tools,
    load_user_tool,
    select_tools,
)
from localagent.tools.workspace import Workspace

USER_TOOLS = '''
from typing import Annotated

from pydantic import BaseModel, Field

from localagent.tools.base import Tool, ToolError


def forecast(city: Annotated[str, Field(description="City name")], days: int = 1) -> str:
    """Weather forecast for a city."""
    if city == "Atlantis":
        raise ToolError("unknown city")
    return f"{city}: sunny for {days} days"


class ConvertUnits(BaseModel):
    """Convert kilometres to miles."""

    km: float

    def run(self) -> str:
        return f"{self.km * 0.621371:.1f} miles"


class NoRun(BaseModel):
    x: int


class Plain:
    pass


def untyped(x):
    return x


def _shout(text: str) -> str:
    return text.upper()


shout = Tool.from_function(_shout, name="shout", description="Upper-case text.")
LIMIT = 3
weather = forecast


def tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt(x: int) -> int:
    return x
'''


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root)


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_tools.py"
    path.write_text(USER_TOOLS)
    return path


@pytest.fixture(autouse=True)
def restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))


def names(tools: list) -> list[str]:
    return [tool.name for tool in tools]


# built-in selection


def test_builtin_tools_and_the_default_set(workspace: Workspace) -> None:
    tools = builtin_tools(workspace)
    assert sorted(tools) == [
        "add_item",
        "calculator",
        "list_dir",
        "query_tables",
        "read_file",
        "replace_in_file",
        "run_python",
        "search_text",
        "set_key",
        "tick_box",
        "write_file",
    ]
    assert DEFAULT_TOOLS == ("list_dir", "read_file", "search_text", "calculator")
    assert not any(tools[name].changes_files for name in DEFAULT_TOOLS)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, list(DEFAULT_TOOLS)),
        ("default", list(DEFAULT_TOOLS)),
        ("read_file", ["read_file"]),
        ("calculator, read_file", ["calculator", "read_file"]),
        ("default,write_file", [*DEFAULT_TOOLS, "write_file"]),
        (
            "default,edit",
            [*DEFAULT_TOOLS, "write_file", "replace_in_file", "tick_box", "add_item", "set_key"],
        ),
        ("read_file,default", ["read_file", "list_dir", "search_text", "calculator"]),
        (
            "all",
            [
                "list_dir",
                "read_file",
                "search_text",
                "write_file",
                "replace_in_file",
                "tick_box",
                "add_item",
                "set_key",
                "calculator",
                "query_tables",
                "run_python",
            ],
        ),
        ("default,,calculator,", list(DEFAULT_TOOLS)),
        ("none", []),
        (" none, ", []),
    ],
)
def test_select_tools(workspace: Workspace, spec: str | None, expected: list[str]) -> None:
    assert names(select_tools(spec, workspace)) == expected


def test_unknown_tool_names_list_the_valid_ones(workspace: Workspace) -> None:
    with pytest.raises(ToolLoadError) as error:
        select_tools("default,read_files", workspace)
    assert str(error.value) == (
        "unknown tool 'read_files'. Built-in tools: add_item, calculator, list_dir, query_tables, "
        "read_file, replace_in_file, run_python, search_text, set_key, tick_box, write_file; "
        "or default, edit, all, none; "
        "or a tool of your own as module:function or path/to/file.py:function"
    )
    assert isinstance(error.value, LocalagentError)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "the tool list is empty; use 'none' for no tools"),
        (" , ", "the tool list is empty"),
        ("none,calculator", "'none' cannot be combined with other tools"),
    ],
)
def test_bad_tool_lists(workspace: Workspace, spec: str, message: str) -> None:
    with pytest.raises(ToolLoadError, match=message):
        select_tools(spec, workspace)


# user tools


def test_function_from_a_file(tools_file: Path) -> None:
    tool = load_user_tool(f"{tools_file}:forecast")
    assert tool.name == "forecast"
    assert tool.spec.description == "Weather forecast for a city."
    assert tool.spec.parameters["properties"]["city"] == {"description": "City name", "type": "string"}
    assert not tool.changes_files
    assert tool.run({"city": "Oslo", "days": 2}, CancelToken()) == "Oslo: sunny for 2 days"


def test_a_function_is_named_as_the_reference_says(tools_file: Path) -> None:
    tool = load_user_tool(f"{tools_file}:weather")
    assert tool.name == "weather"
    assert tool.spec.description == "Weather forecast for a city."


def test_pydantic_model_with_run_from_a_file(tools_file: Path) -> None:
    tool = load_user_tool(f"{tools_file}:ConvertUnits")
    assert tool.name == "convert_units"
    assert tool.spec.description == "Convert kilometres to miles."
    assert tool.run({"km": 10}, CancelToken()) == "6.2 miles"


def test_tool_instance_is_used_as_is(tools_file: Path) -> None:
    first = load_user_tool(f"{tools_file}:shout")
    assert first.run({"text": "hi"}, CancelToken()) == "HI"
    # The file runs once, so the same object comes back.
    assert load_user_tool(f"{tools_file}:shout") is first


def test_importable_module(tools_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tools_file.parent))
    monkeypatch.delitem(sys.modules, "my_tools", raising=False)
    tool = load_user_tool("my_tools:forecast")
    assert tool.run({"city": "Rome"}, CancelToken()) == "Rome: sunny for 1 days"


def test_module_in_the_current_directory(tools_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tools_file.parent)
    monkeypatch.setattr(
        sys, "path", [entry for entry in sys.path if entry not in ("", str(tools_file.parent))]
    )
    monkeypatch.delitem(sys.modules, "my_tools", raising=False)
    assert load_user_tool("my_tools:ConvertUnits").name == "convert_units"


def test_relative_file_path(tools_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tools_file.parent)
    assert load_user_tool("./my_tools.py:forecast").name == "forecast"
    assert load_user_tool("my_tools.py:forecast").name == "forecast"


def test_select_tools_mixes_builtins_and_user_tools(workspace: Workspace, tools_file: Path) -> None:
    tools = select_tools(f"default,{tools_file}:forecast,{tools_file}:shout", workspace)
    assert names(tools) == [*DEFAULT_TOOLS, "forecast", "shout"]


def test_a_user_tool_may_not_take_a_builtin_name(workspace: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "clash.py"
    path.write_text("def read_file(path: str) -> str:\n    return 'mine'\n")
    with pytest.raises(ToolLoadError, match="two tools are named 'read_file'; tool names must be unique"):
        select_tools(f"default,{path}:read_file", workspace)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        (
            "no_such_module_xyz:tool",
            r"^no module named 'no_such_module_xyz'; give an importable module or a path",
        ),
        ("{dir}/missing.py:tool", r"^tool file '.*missing\.py' does not exist$"),
        ("{file}:nothing", r"^.*my_tools\.py has no attribute 'nothing'; it has: .*ConvertUnits.*forecast"),
        (
            "{file}:LIMIT",
            r"^.*my_tools\.py:LIMIT is a int, not a function, a pydantic model class or a Tool$",
        ),
        ("{file}:Plain", r"^.*my_tools\.py:Plain is a class but not a pydantic BaseModel"),
        ("{file}:NoRun", r"^.*my_tools\.py:NoRun is a pydantic model without a run\(\) method$"),
        (
            "{file}:untyped",
            r"^cannot make a tool from .*: TypeError: untyped: parameter 'x' needs a type hint$",
        ),
        ("{file}:" + "t" * 70, r"^cannot make a tool from .*: Value error, tool name 't{70}'"),
        ("{dir}:tool", r"^tool file '.*' is not a file$"),
        ("{file}:", r"is not a tool reference; write module:function or file\.py:function$"),
        (":forecast", r"is not a tool reference"),
    ],
)
def test_user_tool_errors_are_one_line(tools_file: Path, reference: str, message: str) -> None:
    reference = reference.format(dir=tools_file.parent, file=tools_file)
    with pytest.raises(ToolLoadError, match=message) as error:
        load_user_tool(reference)
    assert "\n" not in str(error.value)


def test_errors_while_importing_the_user_file_name_the_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\ndef f(:\n    pass\n")
    with pytest.raises(
        ToolLoadError, match=r"^importing .*broken\.py failed: broken\.py, line 2: SyntaxError"
    ):
        load_user_tool(f"{broken}:f")
    failing = tmp_path / "failing.py"
    failing.write_text("import json\n\nvalue = 1 / 0\n")
    with pytest.raises(
        ToolLoadError,
        match=r"^importing .*failing\.py failed: failing\.py, line 3: ZeroDivisionError: division by zero$",
    ):
        load_user_tool(f"{failing}:value")
    missing_dependency = tmp_path / "needs_dep.py"
    missing_dependency.write_text("import not_installed_dependency_xyz\n")
    with pytest.raises(ToolLoadError, match="No module named 'not_installed_dependency_xyz'"):
        load_user_tool(f"{missing_dependency}:f")
    # A failed file is not cached: fixed, it loads.
    failing.write_text("def value(n: int) -> int:\n    return n\n")
    assert load_user_tool(f"{failing}:value").name == "value"


def test_a_dependency_missing_from_an_importable_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "with_dep.py").write_text("import not_installed_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ToolLoadError,
        match=r"^importing with_dep failed: ModuleNotFoundError: No module named 'not_installed",
    ):
        load_user_tool("with_dep:f")


# hand-written schemas: Tool.from_spec


DIALECT_TOOLS = """
from localagent.tools.base import Tool
from localagent.tools.spec import ToolSpec

area = Tool.from_spec(
    ToolSpec(
        name="area",
        parameters={
            "type": "dict",
            "properties": {
                "base": {"type": "float"},
                "sides": {"type": "tuple", "items": {"type": "integer"}},
            },
            "required": ["base"],
        },
    ),
    lambda base, sides=(): f"{base} {list(sides)}",
)
never = {"type": "integer", "minimum": 5, "maximum": 1}
broken = Tool.from_spec(
    ToolSpec(name="broken", parameters={"type": "object", "properties": {"n": never}, "required": ["n"]}),
    lambda n: n,
)
"""


def test_a_hand_written_tool_in_the_bfcl_dialect_is_read_as_json_schema(tmp_path: Path) -> None:
    path = tmp_path / "dialect_tools.py"
    path.write_text(DIALECT_TOOLS)
    tool = load_user_tool(f"{path}:area")
    assert tool.spec.parameters["type"] == "object"
    assert tool.spec.parameters["properties"]["base"] == {"type": "number"}
    assert tool.spec.dialect == ("dict→object", "float→number", "tuple→array")
    assert tool.run({"base": 2, "sides": [1, 2]}, CancelToken()) == "2 [1, 2]"


def test_a_hand_written_schema_that_cannot_serve_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "dialect_tools.py"
    path.write_text(DIALECT_TOOLS)
    with pytest.raises(ToolLoadError) as error:
        load_user_tool(f"{path}:broken")
    assert str(error.value) == (
        f"the schema of tool 'broken' ({path}:broken) cannot serve: #/properties/n: no integer lies between "
        "`minimum` and `maximum` (and 'n' is required), so no value fits the schema"
    )
