"""set_key: one key of a TOML, INI or YAML file set where it is written, checked with the real
parser; whatever it cannot do exactly it refuses in one line, the file byte for byte as it was."""

from __future__ import annotations

import configparser
import json
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from localagent import Agent
from localagent.cli.approval import TerminalApprover
from localagent.core.messages import ToolMessage, ToolRequest
from localagent.testing import answer, call
from localagent.tools.base import ToolError
from localagent.tools.config_keys import with_key_set
from localagent.tools.files import FileTools
from localagent.tools.workspace import Workspace

STATION_TOML = """\
# The weather station by the greenhouse
name = "Hilltop station"   # shown on the dashboard
enabled = true
interval = 300

[sensor]
model = 'WX-2'  # a literal string
offset = -0.5
installed = 2023-04-01

[upload.archive]
host = "archive.example.org"
retries = 3
note = \"\"\"
retries = 9 is not a key here
\"\"\"
"""

GREENHOUSE_INI = """\
; The greenhouse controller
mode = auto

[heater]
target = 18 ; degrees
night_target: 12
# off in summer
enabled = yes

[fan]
target = 40
speed : low
"""

FEEDERS_YAML = """\
# The bird feeders
garden:
  feeders:
    seed: sunflower   # hearts, not whole
    refills: 2
    covered: yes
  keeper: 'Wren'
  note:
rota:
  - day: mon
    who: Wren
"""

FILES = {"station.toml": STATION_TOML, "greenhouse.ini": GREENHOUSE_INI, "feeders.yaml": FEEDERS_YAML}


@pytest.fixture
def tools(tmp_path: Path) -> FileTools:
    for name, text in FILES.items():
        (tmp_path / name).write_bytes(text.encode())
    return FileTools(Workspace(tmp_path))


def set_and_compare(tools: FileTools, path: str, key: str, value: str, old: str, new: str) -> str:
    """set_key's report, after checking that `old` became `new` in the file and nothing else changed."""
    report = tools.set_key(path, key, value)
    assert (tools.workspace.root / path).read_bytes() == FILES[path].replace(old, new, 1).encode()
    return report


# Each: a key as named, a value as given, and the text of the file before and after.
TOML_SETTINGS = [
    ("sensor.offset", "0.25", "offset = -0.5", "offset = 0.25"),
    ("interval", "600", "interval = 300", "interval = 600"),
    ("enabled", "False", "enabled = true", "enabled = false"),
    ("name", "Lowland station", '"Hilltop station"   # shown', '"Lowland station"   # shown'),
    ("sensor.model", "WX-3", "model = 'WX-2'  #", "model = 'WX-3'  #"),
    ("model", "Wren's", "model = 'WX-2'", 'model = "Wren\'s"'),
    ("upload.archive.host", '"backup.example.org"', '"archive.example.org"', '"backup.example.org"'),
    ("installed", "2024-06-30", "installed = 2023-04-01", "installed = 2024-06-30"),
    ("[upload.archive] retries", "5", "retries = 3", "retries = 5"),
]
INI_SETTINGS = [
    ("heater.target", "20", "target = 18 ; degrees", "target = 20 ; degrees"),
    ("night_target", "10", "night_target: 12", "night_target: 10"),
    ("fan.speed", "high", "speed : low", "speed : high"),
    ("mode", "manual", "mode = auto", "mode = manual"),
    ("HEATER.Enabled", "no", "enabled = yes", "enabled = no"),
]
YAML_SETTINGS = [
    ("garden.feeders.seed", "peanuts", "seed: sunflower   #", "seed: peanuts   #"),
    ("feeders.refills", "3", "refills: 2", "refills: 3"),
    ("covered", "no", "covered: yes", "covered: no"),
    ("keeper", "Tomek", "keeper: 'Wren'", "keeper: 'Tomek'"),
    ("seed", "yes", "seed: sunflower", 'seed: "yes"'),
    ("seed", "1.5", "seed: sunflower", 'seed: "1.5"'),
    ("seed", "mix: oats", "seed: sunflower", 'seed: "mix: oats"'),
    ("seed", "oats # and barley", "seed: sunflower", 'seed: "oats # and barley"'),
    ("note", "check the lids", "note:\n", "note: check the lids\n"),
]


@pytest.mark.parametrize(
    ("path", "key", "value", "old", "new"),
    [
        *[("station.toml", *setting) for setting in TOML_SETTINGS],
        *[("greenhouse.ini", *setting) for setting in INI_SETTINGS],
        *[("feeders.yaml", *setting) for setting in YAML_SETTINGS],
    ],
)
def test_a_key_is_set_in_the_files_own_syntax_keeping_its_comments_and_nothing_else_changes(
    tools: FileTools, path: str, key: str, value: str, old: str, new: str
) -> None:
    """TOML keeps a number or true/false bare and a string's quotes; INI writes the value as it is,
    after its own separator; YAML quotes what would otherwise read as another value."""
    set_and_compare(tools, path, key, value, old, new)


def test_the_report_names_the_key_its_line_and_the_old_value(tools: FileTools) -> None:
    report = set_and_compare(tools, "station.toml", "offset", "0.25", "offset = -0.5", "offset = 0.25")
    assert report == "Set sensor.offset in station.toml, line 8: offset = 0.25 (it was -0.5)."


@pytest.mark.parametrize(
    ("path", "key", "value", "why"),
    [
        (
            "greenhouse.ini",
            "target",
            "20",
            "2 keys of greenhouse.ini are named 'target': heater.target, fan.target. Nothing was changed. "
            "Give key as one of them.",
        ),
        (
            "station.toml",
            "intervall",
            "600",
            "station.toml has no key 'intervall'. Nothing was changed. Its keys closest to that: interval, "
            "sensor.installed.",
        ),
        (
            "feeders.yaml",
            "lid",
            "shut",
            "feeders.yaml has no key 'lid'. Nothing was changed. Its keys: garden.feeders.seed, "
            "garden.feeders.refills, garden.feeders.covered, garden.keeper, garden.note, rota.",
        ),
        (
            "station.toml",
            "sensor",
            "x",
            "'sensor' is a section of station.toml, not a key. Nothing was changed. "
            "Its keys: sensor.model, sensor.offset, sensor.installed.",
        ),
        (
            "station.toml",
            "interval",
            "five minutes",
            "interval in station.toml holds a number (300), and 'five minutes' is not a number. "
            "Nothing was changed. Give value as a number.",
        ),
        ("station.toml", "enabled", "true", "enabled in station.toml is true already. Nothing was changed."),
        (
            "station.toml",
            "name",
            "Hill\x7ftop",
            "Writing 'Hill\\x7ftop' as name would make station.toml invalid",
        ),
        (
            "station.toml",
            "note",
            "short",
            "set_key cannot change upload.archive.note in station.toml: its value runs over several lines.",
        ),
        (
            "greenhouse.ini",
            "fan.target",
            "45 ; percent",
            "'45 ; percent' cannot be written as fan.target in greenhouse.ini: INI would read it as '45'.",
        ),
        ("feeders.yaml", "covered", "maybe", "garden.feeders.covered in feeders.yaml holds true or false"),
        ("feeders.yaml", "rota", "daily", "rota in feeders.yaml holds a list, not one value."),
        ("feeders.yaml", " ", "x", "key is empty."),
        ("feeders.yaml", "seed", "oats\nbarley", "value holds a line break."),
        ("feeders.json", "seed", "oats", "No such file: feeders.json."),
    ],
)
def test_a_setting_it_cannot_make_exactly_is_refused_in_one_line_and_the_file_is_as_it_was(
    tools: FileTools, tmp_path: Path, path: str, key: str, value: str, why: str
) -> None:
    with pytest.raises(ToolError) as refused:
        tools.set_key(path, key, value)
    assert str(refused.value).startswith(why)
    assert "\n" not in str(refused.value)
    for name, text in FILES.items():
        assert (tmp_path / name).read_bytes() == text.encode()


@pytest.mark.parametrize(
    ("name", "text", "key", "why"),
    [
        (
            "birds.md",
            "# Birds\n",
            "title",
            "set_key changes only TOML, INI and YAML files (TOML: .toml; INI: .ini, .cfg, .conf; YAML: "
            ".yaml, .yml), and birds.md is none of them. Nothing was changed. Use replace_in_file for it.",
        ),
        ("broken.toml", "a = 1\nb = \n", "a", "broken.toml is not valid TOML (Invalid value (at line 2"),
        (
            "broken.ini",
            "[a]\nx = 1\n= 2\n",
            "x",
            "broken.ini is not valid INI (line 3 is no key, section",
        ),
        (
            "twice.ini",
            "[a]\nx = 1\nx = 2\n",
            "x",
            "twice.ini is not valid INI (the key 'x' in [a] is there twice",
        ),
        (
            "bare.ini",
            "[a]\nflag\n  more\n",
            "flag",
            "bare.ini is not valid INI (an indented line follows a key",
        ),
        ("broken.yaml", "a: [1\nb: 2\n", "a", "broken.yaml is not valid YAML ("),
        ("list.yml", "- a\n- b\n", "a", "list.yml has no keys. Nothing was changed."),
        (
            "inline.toml",
            "point = { x = 1, y = 2 }\n",
            "point.x",
            "set_key cannot find the line of point.x in inline.toml: a key inside a list or an inline table",
        ),
    ],
)
def test_a_file_set_key_cannot_check_is_refused(
    tmp_path: Path, name: str, text: str, key: str, why: str
) -> None:
    (tmp_path / name).write_bytes(text.encode())
    with pytest.raises(ToolError) as refused:
        FileTools(Workspace(tmp_path)).set_key(name, key, "5")
    assert str(refused.value).startswith(why)
    assert "\n" not in str(refused.value)
    assert (tmp_path / name).read_bytes() == text.encode()


def test_a_yaml_value_shared_by_a_merge_key_is_refused_as_changing_another_key(tmp_path: Path) -> None:
    text = "base: &base\n  depth: 3\nnorth:\n  <<: *base\n  width: 2\n"
    (tmp_path / "ponds.yaml").write_text(text)
    with pytest.raises(
        ToolError, match=r"^Setting base\.depth in ponds\.yaml that way would change north\.depth"
    ):
        FileTools(Workspace(tmp_path)).set_key("ponds.yaml", "base.depth", "4")
    assert (tmp_path / "ponds.yaml").read_text() == text


def test_windows_line_endings_a_key_before_any_section_and_default_stay_as_they_are(tmp_path: Path) -> None:
    text = "owner = Wren\r\n[DEFAULT]\r\nzone = 2\r\n[beds]\r\nzone = 3\r\n"
    (tmp_path / "plot.cfg").write_bytes(text.encode())
    tools = FileTools(Workspace(tmp_path))
    tools.set_key("plot.cfg", "owner", "Tomek")
    tools.set_key("plot.cfg", "DEFAULT.zone", "4")
    assert (
        tmp_path / "plot.cfg"
    ).read_bytes() == b"owner = Tomek\r\n[DEFAULT]\r\nzone = 4\r\n[beds]\r\nzone = 3\r\n"


def test_the_check_before_approval_and_the_diff_show_the_same_edit(tools: FileTools, tmp_path: Path) -> None:
    tool = next(tool for tool in tools.tools() if tool.name == "set_key")
    assert tool.changes_files
    assert set(tool.spec.parameters["required"]) == {"path", "key", "value"}
    with pytest.raises(ToolError, match="has no key 'port'"):
        tool.dry_run({"path": "station.toml", "key": "port", "value": "80"})
    arguments = {"path": "station.toml", "key": "interval", "value": "600"}
    tool.dry_run(arguments)
    request = ToolRequest(id="1", name="set_key", arguments=arguments)
    diff = click.unstyle(TerminalApprover(Workspace(tmp_path)).describe(request))
    assert "-interval = 300\n+interval = 600" in diff
    assert (tmp_path / "station.toml").read_text() == STATION_TOML


def test_a_run_sets_a_key_through_the_scripted_model_and_the_real_runner(tmp_path: Path) -> None:
    workspace = tmp_path / "station"
    workspace.mkdir()
    (workspace / "station.toml").write_text(STATION_TOML)
    replies = [
        call("set_key", {"path": "station.toml", "key": "sensor.offset", "value": "0.25"}),
        answer("The sensor offset is now 0.25."),
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps(replies))
    agent = Agent(model=f"script:{script}", tools="default,edit", workspace=workspace, approve=True)
    result = agent.run("Set the sensor offset to 0.25.")
    assert (result.status, result.changed) == ("final", ("station.toml",))
    observation = next(message for message in result.messages if isinstance(message, ToolMessage))
    assert observation.content == "Set sensor.offset in station.toml, line 8: offset = 0.25 (it was -0.5)."
    assert (workspace / "station.toml").read_text() == STATION_TOML.replace("offset = -0.5", "offset = 0.25")


# Properties: for any small file and any key in it, set_key either refuses and leaves the file as it
# was, or the file parses and exactly that key changed, to that value, on that key's line alone.

NAMES = st.sampled_from(["depth", "width", "label", "count", "open", "note"])
VALUE_TEXTS = st.one_of(
    st.sampled_from(["true", "False", "yes", "null", "~", "0", "-3", "2.5", "1e3", "2024-05-01", ""]),
    st.integers(-999, 999).map(str),
    st.text(st.sampled_from("ab Z'\"\\#=:;[]{},-&*!|>%@\t\x7f\u00e9"), max_size=8),
)


def toml_value(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["bool", "int", "float", "basic", "literal"]))
    if kind == "bool":
        return draw(st.sampled_from(["true", "false"]))
    if kind == "int":
        return str(draw(st.integers(-999, 999)))
    if kind == "float":
        return draw(st.sampled_from(["0.5", "-2.25", "1e3"]))
    text = draw(st.text(st.sampled_from("ab '\"#=\\"), max_size=6))
    if kind == "literal" and "'" not in text:
        return f"'{text}'"
    return json.dumps(text)


@st.composite
def toml_files(draw: st.DrawFn) -> str:
    lines = [f"{name} = {toml_value(draw)}" for name in draw(st.lists(NAMES, unique=True, max_size=3))]
    for table in draw(st.lists(st.sampled_from(["pond", "hedge", "pond.edge"]), unique=True, max_size=2)):
        lines.append(f"[{table}]")
        for name in draw(st.lists(NAMES, unique=True, min_size=1, max_size=3)):
            comment = draw(st.sampled_from(["", "  # a note", " #x = 1"]))
            lines.append(f"{name} = {toml_value(draw)}{comment}")
    return "\n".join(lines) + "\n"


@st.composite
def yaml_files(draw: st.DrawFn) -> str:
    def scalar() -> str:
        return draw(
            st.sampled_from(["3", "-1.5", "yes", "off", "plain words", "'quoted'", '"dq"', "", "~", "a #b"])
        )

    lines = []
    for name in draw(st.lists(NAMES, unique=True, min_size=1, max_size=3)):
        if draw(st.booleans()):
            lines.append(f"{name}: {scalar()}".rstrip())
            continue
        lines.append(f"{name}:  # a group")
        for inner in draw(st.lists(NAMES, unique=True, min_size=1, max_size=3)):
            lines.append(f"  {inner}: {scalar()}".rstrip())
    return "\n".join(lines) + "\n"


@st.composite
def ini_files(draw: st.DrawFn) -> str:
    lines = [
        f"{name} = {draw(st.sampled_from(['1', 'on', 'a b']))}"
        for name in draw(st.lists(NAMES, max_size=2, unique=True))
    ]
    for section in draw(st.lists(st.sampled_from(["pond", "hedge"]), unique=True, max_size=2)):
        lines.append(f"[{section}]")
        for name in draw(st.lists(NAMES, unique=True, min_size=1, max_size=3)):
            separator = draw(st.sampled_from([" = ", "=", ": "]))
            comment = draw(st.sampled_from(["", " ; a note", " # x = 2"]))
            lines.append(f"{name}{separator}{draw(st.sampled_from(['12', 'slow', '']))}{comment}")
    return "\n".join(lines) + "\n"


def flattened(data: Any, above: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    found: dict[tuple[str, ...], Any] = {}
    for name, value in (data or {}).items():
        if isinstance(value, dict) and value:
            found.update(flattened(value, (*above, str(name))))
        else:
            found[(*above, str(name))] = (type(value), value)
    return found


def parse_ini(text: str) -> dict[str, Any]:
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string("[top]\n" + text)
    return {section: dict(parser.items(section, raw=True)) for section in parser.sections()}


def holds_set_key_promise(name: str, text: str, key: str, value: str, parse: Callable[[str], Any]) -> None:
    """set_key's promise, on a file of its own: refused with the file as it was, or else exactly one
    key changed, on one line, and the file still parses."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / name).write_bytes(text.encode())
        try:
            FileTools(Workspace(Path(folder))).set_key(name, key, value)
        except ToolError as refused:
            assert "\n" not in str(refused)
            assert (Path(folder) / name).read_bytes() == text.encode()
            return
        after = (Path(folder) / name).read_bytes().decode()
    before_keys, after_keys = flattened(parse(text)), flattened(parse(after))
    assert before_keys.keys() == after_keys.keys()
    changed = [path for path in before_keys if before_keys[path] != after_keys[path]]
    assert len(changed) == 1 and ".".join(changed[0]).endswith(key)
    old_lines, new_lines = text.split("\n"), after.split("\n")
    assert len(old_lines) == len(new_lines)
    assert sum(old != new for old, new in zip(old_lines, new_lines, strict=True)) == 1


@settings(max_examples=150, deadline=None)
@given(text=toml_files(), data=st.data())
def test_set_key_on_any_toml_file_changes_exactly_that_key_or_nothing(text: str, data: st.DataObject) -> None:
    keys = [".".join(path) for path in flattened(tomllib.loads(text))] or ["depth"]
    key = data.draw(st.one_of(st.sampled_from(keys), NAMES))
    holds_set_key_promise("plot.toml", text, key, data.draw(VALUE_TEXTS), tomllib.loads)


@settings(max_examples=150, deadline=None)
@given(text=yaml_files(), data=st.data())
def test_set_key_on_any_yaml_file_changes_exactly_that_key_or_nothing(text: str, data: st.DataObject) -> None:
    keys = [".".join(path) for path in flattened(yaml.safe_load(text))]
    key = data.draw(st.one_of(st.sampled_from(keys), NAMES))
    holds_set_key_promise("plot.yaml", text, key, data.draw(VALUE_TEXTS), yaml.safe_load)


@settings(max_examples=100, deadline=None)
@given(text=ini_files(), data=st.data())
def test_set_key_on_any_ini_file_changes_exactly_that_key_or_nothing(text: str, data: st.DataObject) -> None:
    keys = [path[-1] if path[0] == "top" else ".".join(path) for path in flattened(parse_ini(text))]
    key = data.draw(st.one_of(st.sampled_from(keys), NAMES)) if keys else data.draw(NAMES)
    holds_set_key_promise("plot.ini", text, key, data.draw(VALUE_TEXTS), parse_ini)


# Pieces of the three syntaxes, strung together at random.
SYNTAX_PIECES = st.sampled_from(
    [
        *["a", "b", "a.b", " = ", ": ", "\n", "\r\n", "  ", "[a]", "[[a]]", "- ", "#c", " ; c", '"', "'"],
        *['"""', "1", "yes", "{x = 1}", "[1, 2]", "|", "&r", "*r", "<<: ", "\\", "~", "2024-01-01", "\t"],
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(SYNTAX_PIECES, max_size=20),
    name=st.sampled_from(["f.toml", "f.ini", "f.yaml"]),
    key=st.sampled_from(["a", "b", "a.b", "[a] b"]),
    value=st.one_of(VALUE_TEXTS, SYNTAX_PIECES),
)
def test_any_text_gets_an_edit_or_a_one_line_refusal_never_a_crash(
    pieces: list[str], name: str, key: str, value: str
) -> None:
    try:
        with_key_set("".join(pieces), key, value, name)
    except ToolError as refused:
        assert "\n" not in str(refused)
