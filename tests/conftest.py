"""Shared test setup: user state goes to temporary directories, never the real home."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from localagent.models.registry import models_dir

# Where `localagent models pull` put the user's models, before the session's own home replaces it:
# tests read pulled instruct models from there and never write to it.
USER_MODELS_DIR = models_dir()

# One models directory for the whole session, so the embedded model is assembled once per run; it
# holds a gigabyte or more of models, so it goes when the session ends.
_SESSION_HOME = Path(tempfile.mkdtemp(prefix="localagent-test-home-"))
atexit.register(shutil.rmtree, _SESSION_HOME, ignore_errors=True)
os.environ.setdefault("LOCALAGENT_HOME", str(_SESSION_HOME))

EXTERNAL = Path(__file__).parent / "external"

# Fixture modules shared by several test files: the replay HTTP server, the embedded model, tiny GGUFs,
# real server processes.
pytest_plugins = ["fixtures_http", "fixtures_local", "tiny_gguf", "server_processes", "pytester"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow", action="store_true", help="also run the tests marked slow (real models, real servers)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests run only when asked for: with --slow, or when -m names them."""
    if config.getoption("--slow") or config.getoption("-m"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    for name in list(os.environ):
        if name.startswith("LOCALAGENT_") and name not in ("LOCALAGENT_HOME",):
            monkeypatch.delenv(name)
