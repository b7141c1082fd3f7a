"""Every model-facing string in localagent/turn/prompts.py, rendered: none is empty, none leaks a
placeholder, and none holds a made-up value a small model could copy into an unrelated answer."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localagent.core.cancel import CancelToken
from localagent.core.messages import NamedToolChoice
from localagent.evidence.passages import Passage
from localagent.tools.loading import builtin_tools
from localagent.tools.spec import ToolSpec
from localagent.tools.workspace import Workspace
from localagent.turn import prompts

TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a whole text file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(name="list_dir", description="List a directory."),
    ToolSpec(name="search_text", description="Find lines."),
]
# Arguments for each function, by parameter name.
SAMPLE_ARGUMENTS: dict[str, Any] = {
    "task": "How long is the file?",
    "listing": "notes.txt\nsrc/app.py",
    "user_message": "Files in the workspace:\nnotes.txt\n\nHow long is the file?",
    "tools": TOOLS,
    "tool_names": ["read_file", "list_dir", "search_text"],
    "tool_choice": NamedToolChoice(name="read_file"),
    "detail": "the reply has no answer",
    "answer": "12 connections.",
    "shapes": "Reply with a tool call.",
    "token_limit": 384,
    "tool_name": "read_file",
    "reason": "Expecting ',' delimiter at column 9",
    "count": 2,
    "limit": 8,
    "message": "No such file: a.txt.",
    "name": "read_file",
    "available": ["list_dir", "read_file"],
    "problems": "path: field required",
    "request_id": "call_1",
    "content": "3 lines",
    "parameters": TOOLS[0].parameters,
    "question": "How many lines in all?",
    "found": ["notes.txt, lines 1-3 of 3:\n1: a\n2: b\n3: c"],
    "request": "Tick the locksmith off in todo.md.",
    "changing_tools": ["replace_in_file", "write_file"],
    "value": "27.00",
    "path": "wares.csv",
    "line_number": 8,
    "line": "KT-307,Pine breadboard,kitchen,27.00,9",
    "tables": "- wares (wares.csv, 4 rows): sku, name, category (home/kitchen), price",
    "evidence": "From the files, the lines that share most words with the question:\nnotes.txt, line 2:\n"
    "2: b",
    "passages": [Passage("notes.txt", 2, 3, "## Spring", "b\nc")],
    "absent": [],
}
# Concrete values that were copied into answers by small models when a prompt held them.
COPYABLE = re.compile(r"12 \* 7|\b84\b|src/main\.py|sqrt\(16\)|the final answer to the question")


def rendered() -> dict[str, str]:
    texts: dict[str, str] = {}
    for name, value in vars(prompts).items():
        if name.startswith("_") or inspect.ismodule(value) or inspect.isclass(value):
            continue
        if isinstance(value, str):
            texts[name] = value
        elif inspect.isfunction(value) and value.__module__ == prompts.__name__:
            texts[name] = call_with_samples(value)
    return texts


def call_with_samples(function: Callable[..., str]) -> str:
    parameters = inspect.signature(function).parameters
    given = {name: SAMPLE_ARGUMENTS[name] for name, p in parameters.items() if p.default is p.empty}
    return function(**given)


def test_every_prompt_renders() -> None:
    texts = rendered()
    assert len(texts) >= 30
    for name, text in texts.items():
        assert text.strip(), name
        assert not re.search(r"\{[a-z_]+\}", text), f"{name} has an unfilled placeholder"


@pytest.mark.parametrize("name", sorted(rendered()))
def test_no_prompt_holds_a_value_a_model_could_copy(name: str) -> None:
    assert not COPYABLE.search(rendered()[name]), name


def test_the_system_prompt_is_the_same_for_every_workspace() -> None:
    """The KV snapshot of the instructions is reused across runs only if nothing in them varies."""
    assert "{" not in prompts.SYSTEM_PROMPT
    assert prompts.first_task("Count the lines.", None) == "Count the lines."
    with_listing = prompts.first_task("Count the lines.", "notes.txt")
    assert with_listing.startswith("Files in the workspace:\nnotes.txt\n") and with_listing.endswith(
        "\n\nCount the lines."
    )


def test_feedback_names_the_tool_a_named_choice_requires() -> None:
    choice = NamedToolChoice(name="read_file")
    assert "Call the tool read_file." in prompts.required_call(choice, "")
    assert "<one of: read_file>" in prompts.react_reply_shapes(["read_file", "list_dir"], choice)
    shapes = prompts.tool_call_reply_shapes(["read_file", "list_dir"], choice)
    assert '"name": "<one of: read_file>"' in shapes


def test_each_worked_example_calls_a_real_tool_with_valid_arguments(tmp_path: Path) -> None:
    (tmp_path / "sightings.csv").write_text(
        "date,species,count\n2024-05-03,coot,11\n2024-05-19,coot,12\n2024-05-19,heron,3\n2024-06-01,coot,4\n"
    )
    (tmp_path / "boxes.md").write_text("- [ ] Fill the feeders\n- [ ] Clean the owl box\n")
    tools = builtin_tools(Workspace(tmp_path))
    example = prompts.react_example([tool.spec for tool in tools.values()])
    assert example is not None
    calls = re.findall(
        r"^Action: (\w+)\nAction Input: ([^\n]+)\nObservation: (.*?)\n(?:Thought|Final)", example, re.M | re.S
    )
    # The evidence put before a question takes the place of a search in the examples.
    assert {name for name, _, _ in calls} >= {
        "read_file",
        "calculator",
        "query_tables",
        "run_python",
        "replace_in_file",
        "tick_box",
    }
    for name, arguments, _ in calls:
        tools[name].validate(json.loads(arguments))
    # The example results are what the tools give on files like the example's.
    for computing in ("query_tables", "run_python", "tick_box"):
        (call,) = [(arguments, observation) for name, arguments, observation in calls if name == computing]
        assert tools[computing].run(json.loads(call[0]), CancelToken()) == call[1]


def test_the_tick_example_is_shown_only_with_tick_box(tmp_path: Path) -> None:
    tools = builtin_tools(Workspace(tmp_path))
    offered = [tools[name].spec for name in ("search_text", "read_file", "replace_in_file")]
    assert "tick_box" not in (prompts.react_example(offered) or "")
    assert "Action: tick_box" in (prompts.react_example([*offered, tools["tick_box"].spec]) or "")
