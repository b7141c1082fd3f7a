"""The workspace's .gitignore files, the root one and nested ones, matched as git matches them."""

from __future__ import annotations

from pathlib import Path

from pathspec import GitIgnoreSpec

GITIGNORE = ".gitignore"


class Gitignores:
    """The ignore rules of the .gitignore files below one root, each file read when first needed.

    A path is matched against the .gitignore of its own folder first, then each one above it: the
    first file with a pattern that matches decides, and within a file the last such pattern does, so
    `!keep.log` after `*.log` keeps keep.log, and a nested file overrides the root one under its folder.
    Whatever lies below an ignored folder is ignored too; a walk that leaves such folders out gets
    that for free, so it is not checked here.
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._specs: dict[Path, GitIgnoreSpec | None] = {}

    def ignores(self, path: Path, is_dir: bool) -> bool:
        """Whether the .gitignore files ignore `path`, a path below the root."""
        parts = path.relative_to(self._root).parts
        # pathspec tells a folder from a file by a trailing slash: `build/` matches only a folder.
        slash = "/" if is_dir else ""
        for depth in range(len(parts) - 1, -1, -1):
            spec = self._spec(self._root.joinpath(*parts[:depth]))
            if spec is None:
                continue
            verdict = spec.check_file("/".join(parts[depth:]) + slash).include
            if verdict is not None:
                return verdict
        return False

    def _spec(self, folder: Path) -> GitIgnoreSpec | None:
        if folder not in self._specs:
            self._specs[folder] = _read_spec(folder / GITIGNORE)
        return self._specs[folder]


def _read_spec(file: Path) -> GitIgnoreSpec | None:
    try:
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    try:
        return GitIgnoreSpec.from_lines(lines)
    except ValueError:
        # git skips a pattern it cannot read (a lone "!") and keeps the rest of the file.
        return GitIgnoreSpec.from_lines(line for line in lines if _readable(line))


def _readable(line: str) -> bool:
    try:
        GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True
