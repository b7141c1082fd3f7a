"""One line and the right exit code for each mistake and stop README's exit-code paragraph lists,
and help texts that name only options their command has."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from server_processes import free_port

from localagent.cli import cli
from localagent.models.registry import EMBEDDED_MODEL


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stderr


def test_a_model_file_that_is_not_gguf_is_a_mistake_in_the_command(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"<html>not a model</html>" * 10)
    code, stderr = run_cli("run", "hi", "--model", str(fake), "--workspace", str(tmp_path))
    assert code == 2
    assert stderr.strip() == f"localagent: error: {fake} is not a GGUF model file"


def test_pulling_an_unknown_model_says_the_same_line_as_running_it(tmp_path: Path) -> None:
    pulled, pull_error = run_cli("models", "pull", "nosuchmodel")
    ran, run_error = run_cli("run", "hi", "--model", "nosuchmodel", "--workspace", str(tmp_path))
    assert pulled == ran == 2
    assert len(pull_error.strip().splitlines()) == 1
    assert pull_error.startswith("localagent: error: unknown model 'nosuchmodel'; known models: ")
    assert run_error.startswith(pull_error.strip())


@pytest.mark.slow
def test_serve_stopped_with_ctrl_c_says_so_and_exits_0() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "localagent", "serve", "-m", EMBEDDED_MODEL, "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert process.stderr is not None
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        lines.append(line)
        if f":{port}/v1" in line or not line:
            break
    process.send_signal(signal.SIGINT)
    try:
        _, rest = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, (lines, rest)
    assert rest.strip().endswith("localagent serve: stopped"), rest
    assert "aborted" not in rest and "Traceback" not in rest


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found = []
    for name, command in group.commands.items():
        found.append((f"{prefix}{name}", command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, f"{prefix}{name} "))
    return found


@pytest.mark.parametrize(
    ("name", "command"), _commands(cli), ids=lambda value: value if isinstance(value, str) else ""
)
def test_every_option_a_help_text_names_is_an_option_of_that_command(
    name: str, command: click.Command
) -> None:
    text = re.sub(r"-\n\s+", "-", CliRunner().invoke(cli, [*name.split(), "--help"]).output)
    # A group's help lists its commands, whose one-line summaries may name their own flags.
    commands = (
        [command, *(c for _, c in _commands(command))] if isinstance(command, click.Group) else [command]
    )
    own = {
        flag
        for c in commands
        for parameter in c.params
        for flag in [*parameter.opts, *parameter.secondary_opts]
    }
    own.add("--help")
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", text))
    assert named <= own, f"{name} --help names {sorted(named - own)}, which {name} does not have"
