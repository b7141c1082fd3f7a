"""Which files and folders of the workspace the tools walk: one rule for the workspace listing,
list_dir, search_text, the data tables and run_python's hints, so that none of them can disagree.

A project's hidden files and folders (.github/, .gitlab-ci.yml, .editorconfig) are walked like any
other. Not walked: version-control folders, caches, virtual environments, localagent's own home
($LOCALAGENT_HOME, when it lies inside the workspace), and whatever the workspace's .gitignore files
ignore. A path asked for by name is not walked but opened, so it is read, listed or searched all the
same.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from localagent.core.paths import own_home
from localagent.tools.gitignore import Gitignores
from localagent.tools.workspace import Workspace

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr"})
CACHE_DIRS = frozenset(
    {
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".eggs",
        ".cache",
        "node_modules",
        ".ipynb_checkpoints",
    }
)
VENV_DIRS = frozenset({".venv", "venv"})  # by convention; any folder holding VENV_MARKER is one too
VENV_MARKER = "pyvenv.cfg"


@dataclass(frozen=True)
class Walked:
    """A folder or file the walk found."""

    path: Path
    is_dir: bool


class WorkspaceWalk:
    """The walk of the workspace from one of its folders (the root unless `start` says otherwise)."""

    def __init__(self, workspace: Workspace, start: Path | None = None) -> None:
        self.workspace = workspace
        self.start = workspace.root if start is None else start
        self._gitignores = Gitignores(workspace.root)
        self._own_home = own_home()
        # Below an ignored folder git ignores every path: a folder asked for by name that the walk
        # would leave out is walked whole, but for version control, caches and venvs inside it.
        folders = self.start.relative_to(workspace.root).parts
        self._honours_gitignore = not any(
            _generated(path, is_dir=True) or self._gitignores.ignores(path, is_dir=True)
            for path in (workspace.root.joinpath(*folders[: depth + 1]) for depth in range(len(folders)))
        )

    def skips(self, path: Path, is_dir: bool) -> bool:
        """Whether the walk leaves out `path`, a file or folder below the start."""
        if _generated(path, is_dir):
            return True
        if is_dir and self._is_own_home(path):
            return True
        return self._honours_gitignore and self._gitignores.ignores(path, is_dir)

    def _is_own_home(self, folder: Path) -> bool:
        # By name first: the real path is resolved only for the folder that could be it.
        home = self._own_home
        return home is not None and folder.name == home.name and Path(os.path.realpath(folder)) == home

    def entries(self, directory: Path) -> list[os.DirEntry[str]]:
        """The entries of `directory` the walk does not leave out, unsorted; OSError when it cannot
        be read."""
        with os.scandir(directory) as scan:
            return [entry for entry in scan if not self.skips(Path(entry.path), _is_dir(entry))]

    def walked(self, file_limit: int | None = None) -> Iterator[Walked]:
        """The folders and files below the start, each folder's subfolders then its files, by name,
        before the walk goes into its subfolders in turn (as os.walk does), stopping after
        `file_limit` files. Only regular files are yielded, and nothing that links out of the
        workspace; a link to a folder is yielded but not walked into."""
        count = 0
        pending = [self.start]
        while pending:
            folders, files = self._sorted_entries(pending.pop())
            for folder in folders:
                yield Walked(folder, is_dir=True)
            for file in files:
                yield Walked(file, is_dir=False)
                count += 1
                if count == file_limit:
                    return
            pending.extend(folder for folder in reversed(folders) if not folder.is_symlink())

    def files(self, file_limit: int | None = None) -> Iterator[Path]:
        return (walked.path for walked in self.walked(file_limit) if not walked.is_dir)

    def _sorted_entries(self, directory: Path) -> tuple[list[Path], list[Path]]:
        folders: list[Path] = []
        files: list[Path] = []
        try:
            entries = self.entries(directory)
        except OSError:
            return folders, files  # an unreadable folder is passed over, as os.walk does
        for entry in sorted(entries, key=lambda entry: entry.name):
            if entry.is_symlink() and not self.workspace.contains(os.path.realpath(entry.path)):
                continue
            if _is_dir(entry):
                folders.append(Path(entry.path))
            elif _is_file(entry):
                files.append(Path(entry.path))
        return folders, files


def workspace_paths(workspace: Workspace, limit: int) -> tuple[list[str], list[str]]:
    """The workspace's folders and files, as relative paths, walking until `limit` files are found."""
    directories: list[str] = []
    files: list[str] = []
    for walked in WorkspaceWalk(workspace).walked(file_limit=limit):
        (directories if walked.is_dir else files).append(workspace.relative(walked.path))
    return directories, files


def _generated(path: Path, is_dir: bool) -> bool:
    """Version control, caches and virtual environments: never the project's own files."""
    if path.name.lower() in VCS_DIRS:
        return True  # a .git file too, which points a submodule or worktree at its repository
    return is_dir and (path.name in CACHE_DIRS or path.name in VENV_DIRS or (path / VENV_MARKER).is_file())


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False
