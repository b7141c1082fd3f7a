"""Reading a file the user named: any failure is one line that names the file."""

from __future__ import annotations

from pathlib import Path

from localagent.errors import LocalagentError


def read_user_text(path: Path, kind: str, error: type[LocalagentError]) -> str:
    """The file's text; `kind` ("config file") names it in the message of the `error` raised when the
    file cannot be read or is not UTF-8."""
    named = f"{kind} {path}" if kind else str(path)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as failure:
        raise error(f"cannot read {named}: {failure.strerror}") from None
    except UnicodeDecodeError:
        raise error(f"{named} is not UTF-8 text") from None
