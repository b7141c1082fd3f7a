"""Every command that reads a user file, fed random and mutated files: it exits 0, 1 or 2, writes at
most one line on stderr (its notes aside: `// approximated:`, `// note:` and `note:` lines), and never a
traceback. The seeds are real files: BFCL function specs, llama.cpp's schemas and GBNF grammars, the
project's own grammar, and the documented config and script formats.

The commands run in-process through the real entry point (`localagent.cli.main`, which maps errors to
exit codes); a few bad files also go through a real subprocess at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest_grammar import BFCL, LLAMACPP_CASES, load_json
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from localagent.cli import main
from localagent.evaluation.bfcl_functions import load_questions
from localagent.formats.react.grammar import build_grammar
from localagent.settings import FIELDS
from localagent.tools.loading import select_tools
from localagent.tools.workspace import Workspace

NOTES = ("// approximated: ", "// note: ", "note: ")
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str
    raised: BaseException | None

    def problems(self) -> list[str]:
        found = []
        if self.raised is not None:
            found.append(f"raised {type(self.raised).__name__}: {self.raised}")
        if self.code not in (0, 1, 2):
            found.append(f"exit status {self.code}")
        if "Traceback" in self.stderr or "Traceback" in self.stdout:
            found.append("printed a traceback")
        lines = [line for line in self.stderr.splitlines() if line.strip() and not line.startswith(NOTES)]
        if len(lines) > 1:
            found.append(f"{len(lines)} lines on stderr: {lines[:3]}")
        if self.code == 2 and len(lines) != 1:
            found.append("exit status 2 without its one-line reason")
        return found


def invoke(args: list[str], stdin: str = "") -> Outcome:
    """Run `localagent ARGS` in this process, through the real entry point."""
    runner = CliRunner()
    code, raised = 0, None
    with runner.isolation(input=stdin) as (stdout, stderr, _):
        saved = sys.argv
        sys.argv = ["localagent", *args]
        try:
            main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException as error:  # noqa: BLE001 - anything else is what this test looks for
            raised = error
        finally:
            sys.argv = saved
        out, err = stdout.getvalue(), stderr.getvalue()
    return Outcome(code, out.decode(errors="replace"), err.decode(errors="replace"), raised)


# ---------------------------------------------------------------- seeds from real files


@cache
def tool_file_seeds() -> list[Any]:
    """Tools files as users write them: BFCL function lists, OpenAI-style wrappers of llama.cpp's
    schemas, and the built-in tools' own specs."""
    seeds: list[Any] = []
    for category in ("simple", "multiple", "parallel_multiple"):
        for question in load_questions(BFCL / f"BFCL_v3_{category}.json")[:8]:
            seeds.append(
                [
                    {"name": f.name, "description": f.description, "parameters": f.parameters}
                    for f in question.functions
                ]
            )
    for case in load_json(LLAMACPP_CASES / "schema_to_grammar_cases.json")["cases"][::3]:
        seeds.append([{"type": "function", "function": {"name": "tool", "parameters": case["schema"]}}])
    builtins = select_tools(None, Workspace(ROOT))
    seeds.append([tool.spec.to_openai() for tool in builtins])
    return seeds


@cache
def grammar_seeds() -> list[tuple[str, str]]:
    """(suffix, text): the project's grammar, grammars it generates, and llama.cpp's GBNF test grammars."""
    specs = [tool.spec for tool in select_tools(None, Workspace(ROOT))]
    generated = build_grammar(specs, "auto")
    seeds = [(".lark", (ROOT / "grammars" / "texttag.lark").read_text()), (".lark", generated.lark)]
    seeds.append((".gbnf", generated.gbnf))
    seeds += [
        (".gbnf", case["grammar"])
        for case in load_json(LLAMACPP_CASES / "gbnf_accept_reject_cases.json")["cases"]
    ]
    return seeds


@cache
def case_seeds() -> list[str]:
    lines = []
    for case in load_json(LLAMACPP_CASES / "gbnf_accept_reject_cases.json")["cases"][:4]:
        lines += [json.dumps({"text": t, "expect": "accept"}) for t in case["passing"][:2]]
        lines += [json.dumps({"text": t, "expect": "reject"}) for t in case["failing"][:1]]
    return lines


CONFIG_SEED = """\
max_steps = 4
max_tokens = 128
temperature = 0.0
top_p = 1.0
decoder = "llguidance"
grammar_field = "gbnf"
disk_cache = false
timeout = 5.0
max_retries = 0
"""
SCRIPT_SEED = [
    'Thought: I add.\nAction: calculator\nAction Input: {"expression": "2+2"}\n',
    {"content": "", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": '{"expression": "1"}'}]},
    "Thought: done.\nFinal Answer: 4",
]


# ---------------------------------------------------------------- mutations

_WEIRD_TEXT = st.sampled_from(
    [
        "dict",
        "float",
        "tuple",
        "any",
        "kaboom",
        "#/$defs//$defs/x",
        "#/nowhere",
        "é",
        "",
        "\n",
        "a\nb",
        "\x00",
    ]
)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _WEIRD_TEXT
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_WEIRD_TEXT | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)
_TYPE_NAMES = st.sampled_from(
    [
        "string",
        "integer",
        "number",
        "boolean",
        "null",
        "array",
        "object",
        "dict",
        "float",
        "tuple",
        "any",
        "str",
    ]
)
_KEYS = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "items",
        "prefixItems",
        "enum",
        "const",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "$ref",
        "$defs",
        "allOf",
        "anyOf",
        "oneOf",
        "additionalProperties",
        "name",
        "function",
        "parameters",
        "nullable",
        "minItems",
        "maxItems",
    ]
)


@st.composite
def mutated_json(draw: st.DrawFn, seed: Any) -> Any:
    """`seed` with a few of its values, keys or list items replaced, removed or added."""
    value = json.loads(json.dumps(seed))
    for _ in range(draw(st.integers(1, 4))):
        containers = _containers(value)
        if not containers:
            return draw(_JSON)
        # Mostly inside the schemas, so that most files still load and the schemas get tested.
        schemas = [node for item in _items(value) for node in _containers(_parameters(item))] or containers
        node = draw(st.sampled_from(schemas) | st.sampled_from(schemas) | st.sampled_from(containers))
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)) | _KEYS) if node else draw(_KEYS)
            action = draw(st.sampled_from(["replace", "delete", "schema", "type"]))
            if action == "delete":
                node.pop(key, None)
            elif action == "type":
                node["type"] = draw(_TYPE_NAMES | st.lists(_TYPE_NAMES, max_size=3))
            elif action == "schema":
                node[key] = draw(st.sampled_from([False, True, {}, [], {"type": "kaboom"}, {"$ref": "#/x"}]))
            else:
                node[key] = draw(_JSON)
        elif node:
            index = draw(st.integers(0, len(node) - 1))
            node[index] = draw(_JSON)
        else:
            node.append(draw(_JSON))
    return value


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _parameters(item: Any) -> Any:
    function = item.get("function", item) if isinstance(item, dict) else None
    return function.get("parameters") if isinstance(function, dict) else None


def _containers(value: Any) -> list[Any]:
    found = []
    if isinstance(value, dict | list):
        found.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            found += _containers(item)
    return found


@st.composite
def mutated_text(draw: st.DrawFn, seed: str) -> bytes:
    """`seed` as bytes, cut, spliced with random text or bytes, or with a slice removed or repeated."""
    data = seed.encode()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["cut", "insert", "delete", "repeat", "bytes"]))
        if kind == "cut":
            data = data[:at]
        elif kind == "insert":
            data = data[:at] + draw(st.text(max_size=8)).encode() + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 20)) :]
        elif kind == "repeat":
            data = data[:at] + data[at : at + 30] * draw(st.integers(2, 4)) + data[at:]
        else:
            data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    return data


def file_contents(seeds: Callable[[], list[Any]]) -> st.SearchStrategy[bytes]:
    """Mutated JSON, mutated text, or random bytes, from the seeds."""
    seed = st.sampled_from(range(len(seeds()))).map(lambda index: seeds()[index])
    as_json = seed.flatmap(mutated_json).map(lambda value: json.dumps(value, ensure_ascii=False).encode())
    as_text = seed.flatmap(lambda value: mutated_text(json.dumps(value)))
    return st.one_of(as_json, as_json, as_text, st.binary(max_size=40))


FUZZ = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------- the commands


@FUZZ
@given(
    file_contents(tool_file_seeds), st.sampled_from(["lark", "gbnf"]), st.sampled_from(["auto", "required"])
)
# A property named by a line break once split the error over two lines of stderr.
@example(b'[{"name": "tide", "parameters": {"type": "object", "properties": {"\\n": null}}}]', "lark", "auto")
def test_grammar_show_on_any_tools_file(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, fmt: str, choice: str
) -> None:
    tools = write(tmp_path_factory.mktemp("show"), "tools.json", data)
    outcome = invoke(
        ["grammar", "show", "--tools-file", str(tools), "--format", fmt, "--tool-choice", choice]
    )
    assert outcome.problems() == [], (data[:300], outcome)


@FUZZ
@given(file_contents(tool_file_seeds), st.sampled_from([False, True]))
def test_parse_on_any_tools_file(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, tolerant: bool
) -> None:
    tools = write(tmp_path_factory.mktemp("parse"), "tools.json", data)
    reply = 'Thought: t\nAction: tool\nAction Input: {"a": 1}\n'
    outcome = invoke(
        ["parse", "--tools-file", str(tools), *(["--tolerant"] if tolerant else [])], stdin=reply
    )
    assert outcome.problems() == [], (data[:300], outcome)


def _grammar_files() -> st.SearchStrategy[tuple[str, bytes]]:
    seed = st.sampled_from(grammar_seeds())
    return st.one_of(
        seed.flatmap(lambda pair: mutated_text(pair[1]).map(lambda data: (pair[0], data))),
        st.tuples(st.sampled_from([".lark", ".gbnf"]), st.binary(max_size=40)),
    )


@FUZZ
@given(_grammar_files())
def test_grammar_check_on_any_grammar_file(
    tmp_path_factory: pytest.TempPathFactory, file: tuple[str, bytes]
) -> None:
    suffix, data = file
    grammar = write(tmp_path_factory.mktemp("check"), f"g{suffix}", data)
    outcome = invoke(["grammar", "check", str(grammar)])
    assert outcome.problems() == [], (data[:300], outcome)


@settings(FUZZ, max_examples=25)
@given(
    _grammar_files(), st.lists(st.sampled_from(range(len(case_seeds()))), min_size=1, max_size=3), st.data()
)
def test_grammar_test_on_any_grammar_and_cases_file(
    tmp_path_factory: pytest.TempPathFactory, file: tuple[str, bytes], picked: list[int], data: st.DataObject
) -> None:
    suffix, grammar_data = file
    lines = "\n".join(case_seeds()[i] for i in picked)
    cases_data = data.draw(st.one_of(st.just(lines.encode()), mutated_text(lines)))
    folder = tmp_path_factory.mktemp("test")
    grammar = write(folder, f"g{suffix}", grammar_data)
    cases = write(folder, "cases.jsonl", cases_data)
    outcome = invoke(["grammar", "test", str(grammar), "--cases", str(cases)])
    assert outcome.problems() == [], (grammar_data[:200], cases_data[:200], outcome)


_TOML_VALUES = st.one_of(
    st.integers(-5, 500),
    st.floats(-1, 5000, allow_nan=False),
    st.booleans(),
    st.sampled_from(["llguidance", "gbnf", "none", "chat", "completions", "lark", "", "é\n"]),
    st.text(max_size=8),
)
_SETTING_NAMES = st.sampled_from([*FIELDS, "bogus", "max-steps"])


def _toml(values: dict[str, Any]) -> str:
    lines = []
    for key, value in values.items():
        if isinstance(value, bool):
            lines.append(f"{key} = {str(value).lower()}")
        elif isinstance(value, int | float):
            lines.append(f"{key} = {value!r}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


CONFIGS = st.one_of(
    st.just(CONFIG_SEED.encode()),
    st.dictionaries(_SETTING_NAMES, _TOML_VALUES, max_size=4).map(_toml).map(str.encode),
    mutated_text(CONFIG_SEED),
    st.binary(max_size=40),
)
_REPLY_PARTS = st.sampled_from(
    [
        "Thought: t\n",
        "Action: calculator\n",
        "Action: nothing\n",
        'Action Input: {"expression": "2+2"}\n',
        "Action Input: {\n",
        "Final Answer: 4",
        "Observation: x\n",
        "思考: t\n",
        "",
    ]
)
SCRIPTS = st.one_of(
    st.lists(st.lists(_REPLY_PARTS, max_size=4).map("".join), min_size=1, max_size=3).map(
        lambda items: json.dumps(items).encode()
    ),
    file_contents(lambda: [SCRIPT_SEED]),
)


@settings(FUZZ, max_examples=40)
@given(CONFIGS, SCRIPTS)
def test_run_on_any_config_and_script_file(
    tmp_path_factory: pytest.TempPathFactory, config_data: bytes, script_data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("run")
    config = write(folder, "config.toml", config_data)
    script = write(folder, "script.json", script_data)
    args = ["run", "add two and two", "--config", str(config), "--model", f"script:{script}"]
    args += ["--tools", "calculator", "--workspace", str(folder), "--transcript", str(folder / "t.jsonl")]
    outcome = invoke([*args, "--quiet"])
    assert outcome.problems() == [], (config_data[:200], script_data[:200], outcome)


# ---------------------------------------------------------------- the issue's files, end to end

BAD_TOOLS = {
    "unknown type": (
        {"type": "object", "properties": {"x": {"type": "kaboom"}}},
        "#/properties/x: unknown type 'kaboom'",
    ),
    "empty range": (
        {
            "type": "object",
            "properties": {"x": {"type": "integer", "minimum": 5, "maximum": 1}},
            "required": ["x"],
        },
        "#/properties/x: no integer lies between `minimum` and `maximum`",
    ),
    "false": (
        {"type": "object", "properties": {"x": False}, "required": ["x"]},
        "#/properties/x: the schema is `false`",
    ),
    "contradictory allOf": (
        {
            "type": "object",
            "properties": {"x": {"allOf": [{"type": "string"}, {"type": "integer"}]}},
            "required": ["x"],
        },
        "#/properties/x: the `allOf` members have no type in common",
    ),
    "contradictory anyOf": (
        {"type": "object", "properties": {"x": {"anyOf": [False, {"enum": []}]}}, "required": ["x"]},
        "#/properties/x: no `anyOf` option fits any value",
    ),
    "contradictory oneOf": (
        {
            "type": "object",
            "properties": {"x": {"oneOf": [{"const": 1, "type": "string"}]}},
            "required": ["x"],
        },
        "#/properties/x: no `oneOf` option fits any value",
    ),
    "$ref to false": (
        {
            "$defs": {"n": False},
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/n"}},
            "required": ["x"],
        },
        "#/$defs/n: the schema is `false`",
    ),
    "empty enum": (
        {"type": "object", "properties": {"x": {"enum": []}}, "required": ["x"]},
        "#/properties/x: `enum` is empty",
    ),
    "pointer into nothing": (
        {"type": "object", "properties": {"x": {"$ref": "#/$defs//$defs/x"}}},
        "#/properties/x: `$ref` '#/$defs//$defs/x' cannot be followed: there is no '$defs' in #",
    ),
    "bad pattern": (
        {"type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}}},
        "#/properties/x/pattern: '(unclosed' is not a 'regex'",
    ),
}


def _tools_file(tmp_path: Path, parameters: Any, name: str = "lookup") -> Path:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": name, "parameters": parameters}}]))
    return tools


@pytest.mark.parametrize("case", sorted(BAD_TOOLS))
@pytest.mark.parametrize("command", [["grammar", "show"], ["parse"]])
def test_a_schema_that_cannot_serve_is_one_line_naming_tool_and_pointer(
    tmp_path: Path, case: str, command: list[str]
) -> None:
    parameters, message = BAD_TOOLS[case]
    tools = _tools_file(tmp_path, parameters)
    outcome = invoke([*command, "--tools-file", str(tools)], stdin="Thought: t\nFinal Answer: a")
    assert outcome.code == 2 and outcome.problems() == [], outcome
    expected = f"localagent: error: tools file {tools}: item 0: tool 'lookup': {message}"
    assert outcome.stderr.startswith(expected), outcome.stderr


def test_a_non_ascii_tool_name_is_one_line(tmp_path: Path) -> None:
    outcome = invoke(["grammar", "show", "--tools-file", str(_tools_file(tmp_path, {}, name="wetter_é"))])
    assert outcome.code == 2 and outcome.problems() == [], outcome
    assert "tool name 'wetter_é' must start with a letter or _" in outcome.stderr


def test_bfcl_type_names_are_read_as_json_schema_and_said_once(tmp_path: Path) -> None:
    parameters = {
        "type": "dict",
        "properties": {"x": {"type": "float"}, "pair": {"type": "tuple", "items": {"type": "any"}}},
        "required": ["x"],
    }
    outcome = invoke(["grammar", "show", "--tools-file", str(_tools_file(tmp_path, parameters))])
    assert outcome.code == 0 and outcome.problems() == [], outcome
    notes = [line for line in outcome.stderr.splitlines() if line.startswith("// note: ")]
    mapped = "dict→object, float→number, tuple→array, any→any value"
    assert notes == [f"// note: read Gorilla/BFCL type names as JSON Schema: {mapped}"]
    assert '"\\"x\\"" JSON_COLON JSON_NUMBER' in outcome.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["grammar", "show"], "tool 'lookup': #/properties/x: unknown type 'kaboom'"),
        (["parse"], "tool 'lookup': #/properties/x: unknown type 'kaboom'"),
    ],
)
def test_end_to_end_in_a_real_process(tmp_path: Path, args: list[str], message: str) -> None:
    tools = _tools_file(tmp_path, BAD_TOOLS["unknown type"][0])
    result = subprocess.run(
        [sys.executable, "-m", "localagent", *args, "--tools-file", str(tools)],
        input="Thought: t\nFinal Answer: a",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


USER_TOOLS = """
from localagent.tools.base import Tool
from localagent.tools.spec import ToolSpec

area = Tool.from_spec(
    ToolSpec(name="area", parameters={"type": "dict", "properties": {"base": {"type": "float"}}}),
    lambda base=1.0: str(base * 2),
)
never = {"type": "object", "properties": {"x": {"enum": []}}, "required": ["x"]}
broken = Tool.from_spec(ToolSpec(name="broken", parameters=never), lambda x: x)
"""


@pytest.mark.parametrize("command", ["run", "chat"])
def test_run_and_chat_refuse_a_user_tool_whose_schema_cannot_serve(tmp_path: Path, command: str) -> None:
    (tmp_path / "user_tools.py").write_text(USER_TOOLS)
    script = write(tmp_path, "script.json", json.dumps(["Thought: t\nFinal Answer: 2"]).encode())
    args = [command, *(["x"] if command == "run" else []), "--tools", f"{tmp_path / 'user_tools.py'}:broken"]
    outcome = invoke([*args, "--model", f"script:{script}", "--workspace", str(tmp_path)], stdin="/quit\n")
    assert outcome.code == 2 and outcome.problems() == [], outcome
    assert "tool 'broken'" in outcome.stderr and "#/properties/x: `enum` is empty" in outcome.stderr


def test_run_says_once_that_a_user_tool_was_read_from_the_bfcl_dialect(tmp_path: Path) -> None:
    (tmp_path / "user_tools.py").write_text(USER_TOOLS)
    replies = ['Thought: t\nAction: area\nAction Input: {"base": 2}\n', "Thought: t\nFinal Answer: 4"]
    script = write(tmp_path, "script.json", json.dumps(replies).encode())
    args = ["run", "x", "--tools", f"{tmp_path / 'user_tools.py'}:area", "--model", f"script:{script}"]
    outcome = invoke([*args, "--workspace", str(tmp_path), "--transcript", str(tmp_path / "t.jsonl")])
    assert outcome.code == 0 and outcome.stdout == "4\n", outcome
    notes = [line for line in outcome.stderr.splitlines() if "Gorilla/BFCL" in line]
    assert len(notes) == 1 and "dict→object, float→number" in notes[0]


def test_eval_bfcl_refuses_a_data_folder_with_a_schema_that_cannot_serve(tmp_path: Path) -> None:
    function = {"name": "f", "parameters": {"type": "dict", "properties": {"n": {"type": "kaboom"}}}}
    question = {"id": "simple_0", "question": [[{"role": "user", "content": "q"}]], "function": [function]}
    (tmp_path / "BFCL_v3_simple.json").write_text(json.dumps(question) + "\n")
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "possible_answer" / "BFCL_v3_simple.json").write_text(
        json.dumps({"id": "simple_0", "ground_truth": [{"f": {"n": [1]}}]}) + "\n"
    )
    outcome = invoke(["eval", "bfcl", "--data", str(tmp_path), "--category", "simple"])
    assert outcome.code == 2 and outcome.problems() == [], outcome
    assert "question simple_0: tool 'f': #/properties/n: unknown type 'kaboom'" in outcome.stderr
    (tmp_path / "BFCL_v3_simple.json").write_text('{"id": "simple_0", "function": 3}\n')
    outcome = invoke(["eval", "bfcl", "--data", str(tmp_path), "--category", "simple"])
    assert outcome.code == 2 and outcome.problems() == [], outcome
    assert "BFCL_v3_simple.json, line 1: not a BFCL question" in outcome.stderr
