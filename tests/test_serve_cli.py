"""`localagent serve`'s command line: what it refuses, in one line, before it loads any model."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from test_cli import localagent, no_traceback

from localagent.serve.listen import base_url, bind, is_loopback


def test_a_key_variable_that_is_not_set_is_a_usage_error() -> None:
    result = localagent("serve", "--api-key-env", "LOCALAGENT_TEST_NO_SUCH_VARIABLE")
    assert result.returncode == 2
    assert "LOCALAGENT_TEST_NO_SUCH_VARIABLE is not set or empty" in result.stderr
    no_traceback(result)


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = localagent("serve", "--port", str(port))
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"localagent: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


def test_a_host_beyond_this_machine_without_a_key_is_said_before_anything_else() -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = localagent("serve", "--host", "0.0.0.0", "--port", str(port))
    lines = result.stderr.strip().splitlines()
    assert lines[0] == (
        "localagent serve: warning: 0.0.0.0 is reachable from other machines, "
        "and no --api-key-env protects it"
    )
    assert result.returncode == 1 and "cannot listen on 0.0.0.0" in lines[1]


def test_a_script_model_is_refused() -> None:
    result = localagent("serve", "--model", "script:replies.json", "--port", "0")
    assert result.returncode == 2
    assert "localagent serve runs a local GGUF model, not a script" in result.stderr
    no_traceback(result)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.20", False),
        ("::", False),
    ],
)
def test_which_hosts_are_this_machine_only(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_port_0_takes_a_free_port_and_says_which() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        url = base_url(sock)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert int(url.split(":")[2].removesuffix("/v1")) == sock.getsockname()[1] > 0
    finally:
        sock.close()
