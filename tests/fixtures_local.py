"""Real models for the tests that run llama.cpp decoding: the embedded one, loaded once per session,
and the instruct models a developer pulls once with `localagent models pull NAME`."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.backends.decoding import LlamaSession
from localagent.backends.llama_runtime import LoadSettings, load_llama
from localagent.errors import ModelUnavailable
from localagent.models.registry import EMBEDDED_MODEL, ResolvedModel, load_registry, resolve_model
from localagent.tools import Tool, Workspace, select_tools

INSTRUCT_MODEL = "qwen2.5-coder-1.5b-instruct"


@pytest.fixture(scope="session")
def embedded_model() -> ResolvedModel:
    return resolve_model(EMBEDDED_MODEL)


def installed_model(name: str) -> ResolvedModel:
    """A registry model from the user's cache, or from installed packages; a missing one fails the test
    with the command that fetches it (a test that needs a model must not pass by skipping)."""
    from conftest import USER_MODELS_DIR

    entry = load_registry()[name]
    pulled = USER_MODELS_DIR / entry.file_name
    if pulled.is_file() and pulled.stat().st_size == entry.size:
        return ResolvedModel(pulled, entry)
    try:
        return resolve_model(name)
    except ModelUnavailable:
        pass
    pytest.fail(
        f"this test needs the model {name}, which is not installed; run: localagent models pull {name}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def instruct_model(request: pytest.FixtureRequest) -> ResolvedModel:
    """An installed instruct model: qwen2.5-coder-1.5b-instruct, or the name given by
    `@pytest.mark.parametrize("instruct_model", [NAME, ...], indirect=True)`."""
    return installed_model(getattr(request, "param", INSTRUCT_MODEL))


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
