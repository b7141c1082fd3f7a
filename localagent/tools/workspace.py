"""The workspace: the one directory the built-in tools may read and write.

Every path a model supplies goes through `Workspace.resolve`, which returns the real path (symlinks
followed) or raises ToolError before anything is opened.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from localagent.errors import LocalagentError
from localagent.tools.base import ToolError

_DRIVE = re.compile(r"^[A-Za-z]:")
# Linux's PATH_MAX and NAME_MAX; longer paths fail in the OS with an error that shows the absolute path.
_MAX_PATH_BYTES = 4095
_MAX_NAME_BYTES = 255
_HINT = "Use a path relative to the workspace root; '.' is the root."


class WorkspaceError(LocalagentError):
    """The workspace root given by the user cannot be used."""


class Workspace:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise WorkspaceError(f"workspace {str(root)!r} is not an existing directory")
        # The real path, so a symlinked root and symlinks inside it compare equal.
        self._root = Path(os.path.realpath(path))

    @property
    def root(self) -> Path:
        return self._root

    def __repr__(self) -> str:
        return f"Workspace({str(self._root)!r})"

    def resolve(self, path: str) -> Path:
        """The real path of `path` (relative to the root, or absolute) if it lies inside the workspace.

        The path need not exist. Raises ToolError for anything outside or ill-formed.
        """
        if not isinstance(path, str):
            raise ToolError(f"Invalid path {path!r}: a path must be a string. {_HINT}")
        text = path.strip()
        if not text:
            raise ToolError(f"Invalid path: the path is empty. {_HINT}")
        if "\0" in text:
            raise ToolError(f"Invalid path {path!r}: it contains a NUL character. {_HINT}")
        if text.startswith("~"):
            raise ToolError(f"Path {path!r} is outside the workspace: '~' paths are not allowed. {_HINT}")
        if _DRIVE.match(text) or text.startswith(("\\\\", "//")):
            raise ToolError(
                f"Path {path!r} is outside the workspace: drive and network paths are not allowed. {_HINT}"
            )
        # Models trained on Windows paths write `src\main.py`; on POSIX that would be one odd file name.
        text = text.replace("\\", "/")
        try:
            real = Path(os.path.realpath(self._root / text))
        except (OSError, ValueError) as error:
            raise ToolError(f"Invalid path {path!r}: {error}. {_HINT}") from None
        if not self.contains(real):
            raise ToolError(f"Path {path!r} is outside the workspace. {_HINT}")
        if len(os.fsencode(real)) > _MAX_PATH_BYTES or any(
            len(os.fsencode(part)) > _MAX_NAME_BYTES for part in real.parts
        ):
            raise ToolError(f"Invalid path: it is too long. {_HINT}")
        return real

    def case_insensitive_match(self, real_path: Path) -> Path | None:
        """The one existing path inside the workspace that differs from `real_path` only in letter
        case (a model asked for memos.md, the file is MEMOS.md); a name that exists as written wins.
        None when there is no such path, or several."""
        if not self.contains(real_path):
            return None
        found = self._root
        for part in real_path.relative_to(self._root).parts:
            try:
                names = [
                    entry.name for entry in os.scandir(found) if entry.name.casefold() == part.casefold()
                ]
            except OSError:
                return None
            if part in names:
                found = found / part
            elif len(names) == 1:
                found = found / names[0]
            else:
                return None
        real = Path(os.path.realpath(found))
        return real if real != real_path and self.contains(real) and real.exists() else None

    def contains(self, real_path: str | os.PathLike[str]) -> bool:
        """Whether an already resolved path is the root or lies below it."""
        return Path(real_path).is_relative_to(self._root)

    def relative(self, real_path: str | os.PathLike[str]) -> str:
        """How a path inside the workspace is shown to the model: relative to the root, with `/`."""
        relative = Path(real_path).relative_to(self._root).as_posix()
        return relative if relative != "" else "."
