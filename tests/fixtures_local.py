"""The embedded model, loaded once per test session for the tests that run real llama.cpp decoding."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.backends.decoding import LlamaSession
from localagent.backends.llama_runtime import LoadSettings, load_llama
from localagent.models import DEFAULT_MODEL, ResolvedModel, resolve_model
from localagent.tools import Tool, Workspace, select_tools


@pytest.fixture(scope="session")
def embedded_model() -> ResolvedModel:
    return resolve_model(DEFAULT_MODEL)


@pytest.fixture(scope="session")
def llama_session(embedded_model: ResolvedModel) -> LlamaSession:
    return LlamaSession(load_llama(embedded_model.path, LoadSettings(n_ctx=4096)))


@pytest.fixture(scope="session")
def sample_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "notes.txt").write_text("buy milk\ncall Ada at 5\nthe answer is 42\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("def main():\n    print('hello')\n", encoding="utf-8")
    (root / "README.md").write_text("# Demo\nA tiny project for tests.\n", encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def default_tools(sample_workspace: Path) -> list[Tool]:
    return select_tools(None, Workspace(sample_workspace))
