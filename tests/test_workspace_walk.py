"""What the tools walk: a project's dot-folders, not version control, caches, venvs or ignored files.

The workspace listing, list_dir, search_text and the data tables all go through one walk, so each
case is checked against all of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_workspace_listing import make

from localagent.tools.files import FileTools, workspace_listing
from localagent.tools.table_catalog import workspace_tables
from localagent.tools.walk import WorkspaceWalk, workspace_paths
from localagent.tools.workspace import Workspace

PROJECT = {
    ".github/workflows/ci.yml": "name: lint and test\njobs:\n  test:\n    runs-on: ubuntu-latest\n",
    ".gitlab-ci.yml": "stages: [test]\nunit:\n  script: pytest\n",
    ".editorconfig": "root = true\n",
    ".pre-commit-config.yaml": "repos: []\n",
    "app.py": "print('hello')\n",
    # Left out of every walk:
    ".git/config": "[core]\n  repositoryformatversion = 0\n",
    ".git/hooks/pre-commit": "#!/bin/sh\necho pytest\n",
    "src/__pycache__/app.cpython-312.pyc": "pytest cached\n",
    ".pytest_cache/README.md": "pytest cache directory\n",
    "node_modules/left-pad/index.js": "// pytest\n",
    "python-env/pyvenv.cfg": "home = /usr/bin\n",
    "python-env/lib/site.py": "import pytest\n",
    ".venv/lib/site.py": "import pytest\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Workspace:
    return make(tmp_path, PROJECT)


def walked_files(workspace: Workspace) -> list[str]:
    return workspace_paths(workspace, 1000)[1]


def found_in(result: str) -> set[str]:
    """The files a search_text result names lines of."""
    return {line.split(":")[0] for line in result.splitlines()[1:] if ":" in line}


def test_a_projects_dot_files_and_folders_are_listed_and_the_generated_ones_are_not(
    project: Workspace,
) -> None:
    assert walked_files(project) == [
        ".editorconfig",
        ".gitlab-ci.yml",
        ".pre-commit-config.yaml",
        "app.py",
        ".github/workflows/ci.yml",
    ]
    assert workspace_listing(project, previews=False).splitlines() == walked_files(project)
    assert ".github/workflows/ci.yml: name: lint and test" in workspace_listing(project).splitlines()
    assert workspace_paths(project, 1000)[0] == [".github", "src", ".github/workflows"]
    assert FileTools(project).list_dir() == (
        "Directory . (6 entries):\n.github/\nsrc/\n"
        ".editorconfig\n.gitlab-ci.yml\n.pre-commit-config.yaml\napp.py"
    )
    assert FileTools(project).list_dir("src") == "Directory src is empty."


def test_search_text_finds_lines_in_dot_folders_and_not_in_generated_ones(project: Workspace) -> None:
    tools = FileTools(project)
    assert found_in(tools.search_text("pytest")) == {".gitlab-ci.yml"}
    assert found_in(tools.search_text("ubuntu")) == {".github/workflows/ci.yml"}
    assert found_in(tools.search_text("runs-on", path=".github")) == {".github/workflows/ci.yml"}
    assert found_in(tools.search_text("script", path=".gitlab-ci.yml")) == {".gitlab-ci.yml"}


def test_a_folder_the_walk_leaves_out_is_still_listed_searched_and_read_by_path(project: Workspace) -> None:
    tools = FileTools(project)
    assert tools.list_dir(".git") == "Directory .git (2 entries):\nhooks/\nconfig"
    assert found_in(tools.search_text("pytest", path="python-env")) == {"python-env/lib/site.py"}
    assert tools.read_file(".git/config").startswith(".git/config, lines 1-2 of 2:")


def test_gitignored_files_and_folders_are_neither_listed_nor_searched(tmp_path: Path) -> None:
    workspace = make(
        tmp_path,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n",
            "debug.log": "error: disk full\n",
            "keep.log": "error: kept on purpose\n",
            "build/out.txt": "error: stale copy\n",
            "notes.txt": "no error here\n",
        },
    )
    tools = FileTools(workspace)
    assert walked_files(workspace) == [".gitignore", "keep.log", "notes.txt"]
    assert tools.list_dir() == "Directory . (3 entries):\n.gitignore\nkeep.log\nnotes.txt"
    assert found_in(tools.search_text("error")) == {"keep.log", "notes.txt"}
    # Asked for by path, an ignored file is read and an ignored folder listed and searched.
    assert tools.read_file("debug.log") == "debug.log, lines 1-1 of 1:\n1: error: disk full"
    assert tools.list_dir("build") == "Directory build (1 entries):\nout.txt"
    assert found_in(tools.search_text("error", path="build")) == {"build/out.txt"}


def test_a_nested_gitignore_applies_under_its_folder_and_overrides_the_root_one(tmp_path: Path) -> None:
    workspace = make(
        tmp_path,
        {
            ".gitignore": "*.tmp\n",
            "docs/.gitignore": "drafts/\n!kept.tmp\n",
            "docs/drafts/plan.md": "# Plan\n",
            "docs/kept.tmp": "kept\n",
            "docs/scratch.tmp": "scratch\n",
            "docs/guide.md": "# Guide\n",
            "drafts/plan.md": "# Plan outside docs\n",
            "kept.tmp": "root copy\n",
        },
    )
    assert walked_files(workspace) == [
        ".gitignore",
        "docs/.gitignore",
        "docs/guide.md",
        "docs/kept.tmp",
        "drafts/plan.md",
    ]
    assert FileTools(workspace).list_dir("docs") == (
        "Directory docs (3 entries):\n.gitignore\nguide.md\nkept.tmp"
    )


def test_the_data_tables_come_from_the_same_walk(tmp_path: Path) -> None:
    workspace = make(
        tmp_path,
        {
            ".gitignore": "exports/\n",
            ".data/rates.csv": "year,rate\n2024,3\n",
            "exports/rates.csv": "year,rate\n2023,2\n",
            ".venv/lib/rates.csv": "year,rate\n2022,1\n",
            "prices.csv": "item,price\npen,2\n",
        },
    )
    assert [(table.name, table.source) for table in workspace_tables(workspace)] == [
        ("rates", ".data/rates.csv"),
        ("prices", "prices.csv"),
    ]


def test_the_walk_stops_at_its_file_limit(project: Workspace) -> None:
    walk = WorkspaceWalk(project)
    assert [path.name for path in walk.files(file_limit=2)] == [".editorconfig", ".gitlab-ci.yml"]
    assert workspace_paths(project, 4) == ([".github", "src"], walked_files(project)[:4])


def test_localagent_home_inside_the_workspace_is_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = make(
        tmp_path,
        {
            "state/index/0a1b.sqlite": "SQLite format 3\n",
            "state/transcripts/run.jsonl": '{"answer": "391"}\n',
            "notes.txt": "391 is 17 times 23\n",
        },
    )
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path / "state"))
    assert walked_files(workspace) == ["notes.txt"]
    assert found_in(FileTools(workspace).search_text("391")) == {"notes.txt"}
    assert FileTools(workspace).list_dir("state") == "Directory state (2 entries):\nindex/\ntranscripts/"
