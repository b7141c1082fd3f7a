"""Choosing the tools of a run: built-in tools by name and user tools from `module:attribute`.

`select_tools` reads the CLI's `--tools` value (or a list of the same items, and of functions, pydantic
models with `run()` and Tools, from Python), a comma-separated list of:
  a built-in name   list_dir, read_file, search_text, calculator, query_tables, run_python,
                    write_file, replace_in_file, tick_box, add_item, set_key
  default           list_dir, read_file, search_text, calculator, and query_tables when the
                    workspace holds tables (offered to a question that asks what a query computes)
  edit              write_file, replace_in_file, tick_box, add_item, set_key: the tools that change
                    files (the last three edit by what the user names: an item's words, a key)
  all               every built-in tool
  none              no tools at all (alone)
  module:function   a user tool; the module may also be a file, as in tools/weather.py:forecast
Example: `--tools default,write_file,my_tools.py:forecast`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, PydanticUserError, ValidationError

from localagent.errors import LocalagentError
from localagent.tools.base import Tool
from localagent.tools.calculator import calculator_tool
from localagent.tools.files import FileTools
from localagent.tools.python_code import PythonRunner
from localagent.tools.spec import schema_problem
from localagent.tools.tables import TableQuery
from localagent.tools.workspace import Workspace

DEFAULT_TOOLS: tuple[str, ...] = ("list_dir", "read_file", "search_text", "calculator")
# One tool as Python names it: a `--tools` item, a function, a pydantic model class with run(), a Tool.
ToolItem = str | Callable[..., Any] | Tool | type[BaseModel]
ToolsArgument = str | Sequence[ToolItem] | None
KEYWORDS = ("default", "edit", "all", "none")
EDIT_TOOLS = ("write_file", "replace_in_file", "tick_box", "add_item", "set_key")


class ToolLoadError(LocalagentError):
    """A tool named by the user cannot be found or loaded."""


def builtin_tools(workspace: Workspace) -> dict[str, Tool]:
    tools = [
        *FileTools(workspace).tools(),
        calculator_tool(),
        TableQuery(workspace).tool(),
        PythonRunner(workspace).tool(),
    ]
    return {tool.name: tool for tool in tools}


def builtin_names() -> frozenset[str]:
    return frozenset(builtin_tools(Workspace(Path.cwd())))


def select_tools(spec: ToolsArgument, workspace: Workspace) -> list[Tool]:
    """The tools named by a `--tools` value or a list of items, in the order given; None means the
    default set."""
    builtins = builtin_tools(workspace)
    if spec is None:
        return _calculator_naming_code(_default_tools(builtins, workspace), builtins, workspace)
    # Empty items are ignored, so "a,,b" and a trailing comma work.
    if not isinstance(spec, str) and len(spec) == 0:
        return []
    listed = spec.split(",") if isinstance(spec, str) else list(spec)
    items = [item.strip() if isinstance(item, str) else item for item in listed]
    items = [item for item in items if item != ""]
    if not items:
        raise ToolLoadError(
            "the tool list is empty; use 'none' for no tools or 'default' for the default set"
        )
    if "none" in items:
        if len(items) > 1:
            raise ToolLoadError("'none' cannot be combined with other tools")
        return []
    selected: dict[str, Tool] = {}
    for item in items:
        for tool in _tools_for(item, builtins, workspace):
            if tool.name in selected and selected[tool.name] is not tool:
                raise ToolLoadError(f"two tools are named {tool.name!r}; tool names must be unique")
            selected[tool.name] = tool
    return _calculator_naming_code(list(selected.values()), builtins, workspace)


def _calculator_naming_code(tools: list[Tool], builtins: dict[str, Tool], workspace: Workspace) -> list[Tool]:
    """With run_python or query_tables offered too, code written into the built-in calculator gets a
    line naming the one that computes over files."""
    offered = {tool.name for tool in tools if builtins.get(tool.name) is tool}
    code_tool = next((name for name in ("run_python", "query_tables") if name in offered), None)
    if code_tool is None or "calculator" not in offered:
        return tools
    calculator = calculator_tool(code_tool=code_tool)
    return [calculator if tool is builtins["calculator"] else tool for tool in tools]


def _default_tools(builtins: dict[str, Tool], workspace: Workspace) -> list[Tool]:
    """The default tools, and query_tables when the workspace has tables to query."""
    names = DEFAULT_TOOLS + (("query_tables",) if TableQuery(workspace).has_tables() else ())
    return [builtins[name] for name in names]


def _tools_for(item: ToolItem, builtins: dict[str, Tool], workspace: Workspace) -> list[Tool]:
    if not isinstance(item, str):
        name = getattr(item, "__name__", None) or repr(item)
        return [_as_tool(item, name, name)]
    if item == "default":
        return _default_tools(builtins, workspace)
    if item == "edit":
        return [builtins[name] for name in EDIT_TOOLS]
    if item == "all":
        return list(builtins.values())
    if item in builtins:
        return [builtins[item]]
    if ":" in item:
        return [load_user_tool(item)]
    raise ToolLoadError(
        f"unknown tool {item!r}. Built-in tools: {', '.join(sorted(builtins))}; "
        f"or {', '.join(KEYWORDS)}; or a tool of your own as module:function or path/to/file.py:function"
    )


def load_user_tool(reference: str) -> Tool:
    """The tool at `module:attribute` or `path/to/file.py:attribute`.

    The attribute may be a typed function, a pydantic model class with a `run()` method, or a Tool.
    """
    module_name, _, attribute = reference.rpartition(":")
    if not module_name or not attribute:
        raise ToolLoadError(
            f"{reference!r} is not a tool reference; write module:function or file.py:function"
        )
    module = _import(module_name)
    try:
        target = getattr(module, attribute)
    except AttributeError:
        names = sorted(name for name, value in vars(module).items() if _looks_like_tool(name, value))
        found = f"; it has: {', '.join(names[:12])}" if names else ""
        raise ToolLoadError(f"{module_name} has no attribute {attribute!r}{found}") from None
    tool = _as_tool(target, reference, attribute)
    problem = schema_problem(tool.spec)
    if problem is not None:
        raise ToolLoadError(f"the schema of tool {tool.name!r} ({reference}) cannot serve: {problem}")
    return tool


def _as_tool(target: Any, reference: str, attribute: str) -> Tool:
    try:
        if isinstance(target, Tool):
            return target
        if inspect.isclass(target):
            if not issubclass(target, BaseModel):
                raise ToolLoadError(
                    f"{reference} is a class but not a pydantic BaseModel; "
                    "give a function, a BaseModel subclass with run(), or a Tool"
                )
            if not callable(getattr(target, "run", None)):
                raise ToolLoadError(f"{reference} is a pydantic model without a run() method")
            return Tool.from_model(target)
        if callable(target):
            # Named as the user wrote it, which also names lambdas and aliases sensibly.
            return Tool.from_function(target, name=attribute)
    except ValidationError as error:  # from ToolSpec: a name longer than 64 characters
        problem = error.errors(include_url=False)[0]["msg"]
        raise ToolLoadError(f"cannot make a tool from {reference}: {problem}") from None
    except (TypeError, ValueError, NameError, AttributeError, PydanticUserError) as error:
        raise ToolLoadError(f"cannot make a tool from {reference}: {_one_line(error)}") from None
    raise ToolLoadError(
        f"{reference} is a {type(target).__name__}, not a function, a pydantic model class or a Tool"
    )


def _import(module_name: str) -> Any:
    if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
        return _import_file(Path(module_name))
    _allow_current_directory()
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise ToolLoadError(
                f"no module named {module_name!r}; give an importable module or a path to a .py file"
            ) from None
        raise ToolLoadError(f"importing {module_name} failed: {_one_line(error)}") from None
    except Exception as error:  # noqa: BLE001 - any error in the user's module is reported in one line
        raise ToolLoadError(f"importing {module_name} failed: {_where(error)}{_one_line(error)}") from None


def _import_file(path: Path) -> Any:
    if not path.exists():
        raise ToolLoadError(f"tool file {str(path)!r} does not exist")
    if not path.is_file():
        raise ToolLoadError(f"tool file {str(path)!r} is not a file")
    real = path.resolve()
    # One module per file, so loading two tools from the same file runs it once.
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:12]
    name = f"_localagent_tool_file_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, real)
    if spec is None or spec.loader is None:
        raise ToolLoadError(f"cannot import {str(path)!r}; a tool file must be a .py file")
    module = importlib.util.module_from_spec(spec)
    # Registered before running it, as a normal import does; pydantic and dataclasses look modules up.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - any error in the user's file is reported in one line
        del sys.modules[name]
        raise ToolLoadError(f"importing {path} failed: {_where(error, real)}{_one_line(error)}") from None
    return module


def _allow_current_directory() -> None:
    # `localagent --tools my_tools:fn` should find my_tools.py in the current directory, as `python -m` would;
    # appended last, so it never shadows an installed package.
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)


def _looks_like_tool(name: str, value: Any) -> bool:
    return (
        not name.startswith("_")
        and (callable(value) or isinstance(value, Tool))
        and not inspect.ismodule(value)
    )


def _where(error: BaseException, file: Path | None = None) -> str:
    """`name.py, line 3: ` for the user's innermost frame of the error, so the user can find the line."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{Path(error.filename).name}, line {error.lineno}: "
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if (frame.filename == str(file) if file is not None else not frame.filename.startswith("<"))
    ]
    return f"{Path(frames[-1].filename).name}, line {frames[-1].lineno}: " if frames else ""


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
