"""The command line as a person meets it: exit codes, clear one-line errors, what each command prints.

Commands run in this process through the real entry point, with click's `CliRunner`; the tests that
need a process of their own (a file-size limit, shell completion as the README sets it up, the
README's commands) start `python -m localagent`.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from localagent.cli import cli
from localagent.cli.helpdoc import with_reference
from localagent.loop.transcript import read_messages

README = Path(__file__).resolve().parent.parent / "README.md"


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def localagent(
    *args: str, cwd: Path | None = None, stdin: str = "", env: dict[str, str] | None = None
) -> Ran:
    """`localagent ARGS` in this process; an exception the command line does not turn into a message
    fails the test."""
    with contextlib.chdir(cwd or Path.cwd()):
        result = CliRunner().invoke(cli, args, input=stdin, env=env, catch_exceptions=False)
    return Ran(result.exit_code, result.stdout, result.stderr)


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m localagent ARGS` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "localagent", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def script(tmp_path: Path, items: list) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return f"script:{path}"


def no_traceback(result: Ran | subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout


def test_run_with_a_script_prints_json_and_writes_the_transcript(tmp_path: Path) -> None:
    model = script(
        tmp_path,
        [
            'Thought: multiply\nAction: calculator\nAction Input: {"expression": "17 * 23"}\n',
            "Thought: done\nFinal Answer: 391",
        ],
    )
    transcript = tmp_path / "run.jsonl"
    result = localagent("run", "--model", model, "What is 17*23?", "--json", "--transcript", str(transcript))
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload) == {
        "status",
        "answer",
        "steps",
        "changed",
        "sources",
        "usage",
        "messages",
        "transcript",
    }
    assert (payload["status"], payload["answer"], payload["steps"]) == ("final", "391", 2)
    assert payload["changed"] == []
    assert payload["sources"] == []  # the calculator's result is no line of a file
    assert payload["transcript"] == str(transcript)
    tool_message = next(m for m in payload["messages"] if m["role"] == "tool")
    assert tool_message["content"].startswith("391")
    assert [m.model_dump(mode="json") for m in read_messages(transcript)] == payload["messages"]


def test_run_names_the_lines_its_answer_rests_on_dimmed_after_it(tmp_path: Path) -> None:
    (tmp_path / "boats.md").write_text("# Jetty\n\nThe first boat leaves at 06:40.\nThe last one at 22:15.\n")
    model = script(
        tmp_path,
        [
            'Thought: read it\nAction: read_file\nAction Input: {"path": "boats.md"}\n',
            "Thought: done\nFinal Answer: The last boat leaves at 22:15.",
        ],
    )
    args = ("run", "--model", model, "When does the last boat leave?", "--workspace", str(tmp_path))
    shown = localagent(*args)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "The last boat leaves at 22:15."
    assert "Sources: boats.md:4" in shown.stderr.splitlines()
    payload = json.loads(localagent(*args, "--json").stdout)
    assert payload["sources"] == ["boats.md:4"]


def test_run_says_after_the_answer_that_no_file_changed_when_the_model_only_claims_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "lock.md").write_text("- [ ] Check the sluice paddles\n")
    claim = "Thought: done\nFinal Answer: lock.md now says - [x] Check the sluice paddles"
    result = localagent(
        "run", "--model", script(tmp_path, [claim]), "tick it", "--tools", "default,edit",
        "--workspace", str(tmp_path), "--yes",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "No file was changed."
    assert (tmp_path / "lock.md").read_text() == "- [ ] Check the sluice paddles\n"
    model = script(tmp_path, [claim])
    asked = localagent("run", "--model", model, "what is open?", "--workspace", str(tmp_path))
    assert "changed" not in asked.stderr.lower()  # read-only tools: nothing could have changed


def test_run_names_the_files_changed_and_leaves_out_a_refused_change(tmp_path: Path) -> None:
    (tmp_path / "lock.md").write_text("- [ ] Check the sluice paddles\n")
    replies = [
        'Thought: new file\nAction: write_file\nAction Input: {"path": "lock.md", "content": "x"}\n',
        'Thought: read\nAction: read_file\nAction Input: {"path": "lock.md"}\n',
        "Thought: tick\nAction: replace_in_file\n"
        'Action Input: {"path": "lock.md", "old": "- [ ]", "new": "- [x]"}\n',
        'Thought: log\nAction: write_file\nAction Input: {"path": "log/paddles.txt", "content": "checked"}\n',
        "Thought: done\nFinal Answer: ticked and logged",
    ]
    flags = ["--tools", "default,edit", "--workspace", str(tmp_path), "--yes"]
    shown = localagent("run", "--model", script(tmp_path, replies), "tick it", *flags)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "ticked and logged\n"
    assert shown.stderr.splitlines()[-1] == "Changed: lock.md, log/paddles.txt"
    (tmp_path / "lock.md").write_text("- [ ] Check the sluice paddles\n")
    (tmp_path / "log" / "paddles.txt").unlink()
    as_json = localagent("run", "--model", script(tmp_path, replies), "tick it", *flags, "--json")
    assert json.loads(as_json.stdout)["changed"] == ["lock.md", "log/paddles.txt"]
    assert "Changed" not in as_json.stderr


def test_run_prints_the_answer_and_shows_the_steps_on_stderr(tmp_path: Path) -> None:
    model = script(
        tmp_path,
        ["Thought: look\nAction: list_dir\nAction Input: {}\n", "Thought: ok\nFinal Answer: two files"],
    )
    (tmp_path / "a.txt").write_text("a")
    result = localagent("run", "--model", model, "what is here?", "--workspace", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "two files\n"
    assert "→ list_dir {}" in result.stderr
    assert "a.txt" in result.stderr


def test_a_run_that_does_not_answer_exits_1(tmp_path: Path) -> None:
    looping = [
        f'Thought: again\nAction: calculator\nAction Input: {{"expression": "{n}+1"}}\n' for n in range(5)
    ]
    result = localagent("run", "--model", script(tmp_path, looping), "loop", "--max-steps", "2", "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["status"] == "max_steps"


def test_a_failed_run_says_why_once(tmp_path: Path) -> None:
    model = script(tmp_path, ['Thought: add\nAction: calculator\nAction Input: {"expression": "1+1"}\n'])
    result = localagent("run", "add", "--model", model, "--transcript", str(tmp_path / "t.jsonl"))
    assert result.returncode == 1
    assert result.stderr.count("the script has no output left for turn 2") == 1, result.stderr
    no_traceback(result)


def test_a_transcript_that_cannot_be_written_is_one_line_and_exit_1(tmp_path: Path) -> None:
    model = script(tmp_path, ["Thought: t\nFinal Answer: hello"])
    result = localagent("run", "hi", "--model", model, "--transcript", "/dev/full")
    assert (result.returncode, result.stdout) == (1, "")
    assert (
        result.stderr
        == "localagent: error: cannot write the transcript to /dev/full: No space left on device\n"
    )


def test_a_transcript_that_fills_the_disk_mid_run_keeps_the_answer_and_exits_1(tmp_path: Path) -> None:
    steps = [f'Thought: t\nAction: calculator\nAction Input: {{"expression": "{n}+1"}}\n' for n in range(3)]
    model = script(tmp_path, [*steps, "Thought: t\nFinal Answer: done"])
    transcript = tmp_path / "t.jsonl"
    limit = 3000  # bytes any file of the run may hold: the first records fit, the rest do not

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "localagent",
            "run",
            "count",
            "--model",
            model,
            "--transcript",
            str(transcript),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limit_file_size,
    )
    assert (result.returncode, result.stdout) == (1, "done\n"), result.stderr
    assert result.stderr.endswith(
        f"localagent: error: cannot write the transcript to {transcript}: File too large\n"
    )
    assert 0 < transcript.stat().st_size <= limit
    no_traceback(result)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run"], "Missing argument 'TASK'"),
        (["run", ""], "TASK is empty"),
        (["run", "x", "--api-base", "localhost:8080/v1"], "it must start with http:// or https://"),
        (["run", " \n "], "TASK is empty"),
        (["run", "x", "--max-steps", "zero"], "'zero' is not a valid integer"),
        (["run", "x", "--bogus"], "No such option '--bogus'"),
        (["run", "x", "--max-steps", "0"], "max_steps: Input should be greater than or equal to 1"),
        (["run", "x", "--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["run", "x", "--model", "/nowhere/model.gguf"], "model file not found: /nowhere/model.gguf"),
        (["run", "x", "--model", "script:/nowhere/s.json"], "cannot read script /nowhere/s.json"),
        (["run", "x", "--tools", "nonsense"], "nonsense"),
        (["run", "x", "--workspace", "/nowhere/at/all"], "does not exist"),
        (["parse", "--tools-file", "/nowhere/tools.json"], "cannot read tools file /nowhere/tools.json"),
        (["grammar", "show", "--tool-choice", "missing_tool"], "--tool-choice 'missing_tool'"),
        (["grammar", "check", "/nowhere/g.lark"], "cannot read /nowhere/g.lark"),
        (["grammar", "check", "notes.txt"], "must end in .lark or .gbnf"),
        (["models", "path", "unknown"], "unknown model 'unknown'"),
        (["nosuchcommand"], "No such command 'nosuchcommand'"),
        (["bench", "--runs", "0"], "Invalid value for '--runs'"),
        (["bench", "--model", "/nowhere/m.gguf"], "model file not found: /nowhere/m.gguf"),
        (["chat", "--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["models", "verify", "unknown"], "unknown model 'unknown'"),
        (["eval", "tasks", "--task", "nope"], "no task matches 'nope'"),
        (["eval", "tasks", "--category", "bogus"], "unknown category 'bogus'"),
        (["eval", "tasks", "--tools", "default"], "--tools does not apply to eval tasks"),
        (["eval", "tasks", "--limit", "0"], "Invalid value for '--limit'"),
    ],
)
def test_bad_usage_exits_2_with_one_clear_line(args: list[str], message: str, tmp_path: Path) -> None:
    result = localagent(*args, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    no_traceback(result)


def test_an_unreadable_tools_file_is_a_clear_error(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text("[{]")
    result = localagent("parse", "--tools-file", str(tools), stdin="Thought: x\nFinal Answer: y")
    assert result.returncode == 2
    assert f"tools file {tools}: not valid JSON" in result.stderr
    no_traceback(result)


def test_a_bad_config_file_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("max_stepz = 3\n")
    result = localagent("run", "x", "--config", str(config))
    assert result.returncode == 2
    assert "unknown key 'max_stepz'" in result.stderr
    config.write_text('max_steps = "many"\n')
    result = localagent("run", "x", "--config", str(config))
    assert "max_steps: Input should be a valid integer" in result.stderr
    no_traceback(result)


def test_flags_override_the_environment_which_overrides_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    looping = [
        f'Thought: again\nAction: calculator\nAction Input: {{"expression": "{n}+1"}}\n' for n in range(9)
    ]
    config.write_text(f'max_steps = 2\nmodel = "{script(tmp_path, looping)}"\n')
    from_file = localagent("run", "t", "--config", str(config), "--json")
    assert json.loads(from_file.stdout)["steps"] == 3  # two steps and the wrap-up retry
    from_env = localagent("run", "t", "--config", str(config), "--json", env={"LOCALAGENT_MAX_STEPS": "3"})
    assert json.loads(from_env.stdout)["steps"] == 4
    from_flag = localagent(
        "run", "t", "--config", str(config), "--json", "--max-steps", "1", env={"LOCALAGENT_MAX_STEPS": "3"}
    )
    assert json.loads(from_flag.stdout)["steps"] == 2


def test_parse_prints_each_kind_of_result() -> None:
    action = localagent(
        "parse", stdin='Thought: add\nAction: calculator\nAction Input: {"expression": "1+1"}\n'
    )
    assert action.returncode == 0
    assert json.loads(action.stdout) == {
        "kind": "tool_requests",
        "requests": [
            {
                "id": "call_1",
                "name": "calculator",
                "arguments": {"expression": "1+1"},
                "parse_error": None,
                "tool_error": None,
            }
        ],
        "reasoning": "add",
    }
    final = localagent("parse", stdin="Thought: done\nFinal Answer: 2")
    assert json.loads(final.stdout) == {"kind": "final", "content": "2", "reasoning": "done"}
    error = localagent("parse", stdin="Thought: I wonder")
    assert error.returncode == 1
    payload = json.loads(error.stdout)
    assert payload["kind"] == "error" and "Final Answer" in payload["message"]
    tolerant = localagent(
        "parse", "--tolerant", stdin="思考：算一下\n动作：calculator\n动作输入：{'expression': '2*3'}"
    )
    assert json.loads(tolerant.stdout)["requests"][0]["arguments"] == {"expression": "2*3"}


@pytest.mark.parametrize(
    ("reply", "options", "tool_error"),
    [
        (
            'Thought: clean up\nAction: rm_rf\nAction Input: {"path": "/"}\n',
            [],
            "Tool error: unknown tool 'rm_rf'. "
            "Available tools: calculator, list_dir, read_file, search_text.",
        ),
        (
            'Thought: read\nAction: read_file\nAction Input: {"path": "a.txt", "start_line": 0}\n',
            [],
            "Tool error: invalid arguments for read_file: "
            "start_line: Input should be greater than or equal to 1",
        ),
        (
            'Thought: list\nAction: list_dir\nAction Input: {"path": "."}\n',
            ["--tool-choice", "calculator"],
            "Tool error: not run: only calculator may be called now. Call calculator.",
        ),
    ],
    ids=["unknown-tool", "schema", "other-named-tool"],
)
def test_parse_reports_what_the_runner_would_tell_the_model(
    reply: str, options: list[str], tool_error: str, tmp_path: Path
) -> None:
    # in a folder with no data files, whose default tools are the four read-only ones
    result = localagent("parse", *options, stdin=reply, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (request,) = json.loads(result.stdout)["requests"]
    assert (request["parse_error"], request["tool_error"]) == (None, tool_error)


def test_parse_under_tool_choice_none_gives_the_message_of_the_runners_last_step(tmp_path: Path) -> None:
    reply = 'Thought: add\nAction: calculator\nAction Input: {"expression": "1+1"}\n'
    parsed = localagent("parse", "--tool-choice", "none", stdin=reply)
    assert parsed.returncode == 1
    (request,) = json.loads(parsed.stdout)["requests"]
    ran = localagent("run", "t", "--model", script(tmp_path, [reply, reply]), "--max-steps", "1", "--json")
    tool_messages = [m["content"] for m in json.loads(ran.stdout)["messages"] if m["role"] == "tool"]
    assert set(tool_messages) == {request["tool_error"]}


def test_grammar_show_check_and_test_work_together(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps(
            [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "description": "Weather for a city.",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
                            "required": ["city"],
                        },
                    },
                }
            ]
        )
    )
    lark = localagent("grammar", "show", "--tools-file", str(tools))
    gbnf = localagent(
        "grammar", "show", "--tools-file", str(tools), "--format", "gbnf", "--tool-choice", "get_weather"
    )
    assert lark.returncode == gbnf.returncode == 0
    assert '"get_weather" "\\nAction Input: "' in lark.stdout
    assert gbnf.stdout.startswith("root ::= thought actions\n")
    (tmp_path / "g.lark").write_text(lark.stdout)
    (tmp_path / "g.gbnf").write_text(gbnf.stdout)
    checked = localagent("grammar", "check", str(tmp_path / "g.lark"), str(tmp_path / "g.gbnf"))
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.count(": ok") == 6
    cases = tmp_path / "cases.jsonl"
    call = 'Thought: w\nAction: get_weather\nAction Input: {"city": "Oslo", "unit": "c"}\n'
    cases.write_text(
        "\n".join(
            json.dumps(case)
            for case in [
                {"text": call, "expect": "accept"},
                {"text": call.replace('"c"', '"k"'), "expect": "reject"},
                {"text": "Thought: w\nFinal Answer: sunny\n", "expect": "reject"},
            ]
        )
    )
    passed = localagent("grammar", "test", str(tmp_path / "g.gbnf"), "--cases", str(cases))
    assert passed.returncode == 0, passed.stdout
    assert "3 cases, 0 mismatches" in passed.stdout
    cases.write_text(json.dumps({"text": call, "expect": "reject"}))
    failed = localagent("grammar", "test", str(tmp_path / "g.lark"), "--cases", str(cases))
    assert failed.returncode == 1
    assert "1 case, 1 mismatch" in failed.stdout  # counted per case, not per engine


def test_grammar_check_reports_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gbnf"
    bad.write_text('root ::= "a" b\nb ::= "x" | \n  [0-9\n')
    result = localagent("grammar", "check", str(bad))
    assert result.returncode == 1
    assert f"{bad}: gbnf: error" in result.stdout
    no_traceback(result)


def test_models_list_path_and_verify() -> None:
    listed = localagent("models", "list")
    assert listed.returncode == 0
    assert "qwen2.5-coder-1.5b-instruct (default)" in listed.stdout
    path = localagent("models", "pull")
    assert path.returncode == 0, path.stderr
    where = localagent("models", "path")
    assert where.returncode == 0 and where.stdout.strip().endswith(".gguf")
    verified = localagent("models", "verify")
    # Every installed model is checked; other tests may have installed more than the default.
    assert verified.returncode == 0, verified.stdout
    lines = verified.stdout.splitlines()
    assert "qwen2.5-coder-1.5b-instruct: ok" in lines
    assert all(line.endswith(": ok") for line in lines), lines


def test_shell_completion_as_the_readme_sets_it_up() -> None:
    source = spawn(env={"_LOCALAGENT_COMPLETE": "bash_source"})
    assert (
        source.returncode == 0 and "complete -o nosort -F _localagent_completion localagent" in source.stdout
    )
    completed = spawn(
        env={
            "_LOCALAGENT_COMPLETE": "bash_complete",
            "COMP_WORDS": "localagent run --deco",
            "COMP_CWORD": "2",
        }
    )
    assert completed.stdout.splitlines() == ["plain,--decoder"]


def test_the_command_reference_in_the_docs_matches_the_real_help() -> None:
    current = (README.parent / "docs" / "commands.md").read_text(encoding="utf-8")
    assert with_reference(current) == current, "run: python -m localagent.cli.helpdoc --write"


def test_the_readme_opens_with_the_two_setup_commands() -> None:
    marked = subprocess.run(
        [sys.executable, str(README.parent / ".ci" / "readme_command.py"), "test"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert marked.strip().endswith("python -m pytest --slow")
    run = subprocess.run(
        [sys.executable, str(README.parent / ".ci" / "readme_command.py"), "run"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "localagent run" in run


def test_grammar_show_and_test_default_to_what_runs_on_the_default_model_use(tmp_path: Path) -> None:
    from localagent.models.registry import DEFAULT_MODEL, load_registry
    from localagent.settings import Settings

    fmt, actions = load_registry()[DEFAULT_MODEL].prompt_format, Settings().max_actions
    said = f"// {fmt} prompt format, at most {actions} action a reply (as runs on {DEFAULT_MODEL} use"
    shown = localagent("grammar", "show")
    assert shown.returncode == 0
    assert shown.stderr.startswith(said)
    assert ("action~1..1" in shown.stdout) == (actions == 1)
    plain = localagent("grammar", "show", "--prompt-format", "plain", "--max-actions", "3")
    assert plain.stderr.startswith("// plain prompt format, at most 3 actions a reply")
    assert plain.stdout != shown.stdout
    cases = tmp_path / "cases.jsonl"
    call = 'Thought: add\nAction: calculator\nAction Input: {"expression": "1+1"}\n'
    cases.write_text(json.dumps({"text": call, "expect": "accept"}) + "\n")
    tested = localagent("grammar", "test", "--cases", str(cases))
    assert tested.stderr.startswith(said), tested.stderr
    assert tested.stdout.splitlines()[-1] == "1 case, 0 mismatches", tested.stdout
