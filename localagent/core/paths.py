"""Where localagent keeps things on disk, after the XDG base directory convention.

$LOCALAGENT_HOME, when set, holds the caches instead of the user cache directory (tests use it).
"""

from __future__ import annotations

import os
from pathlib import Path


def _base(variable: str, fallback: str) -> Path:
    return Path(os.environ.get(variable) or str(Path.home() / fallback))


def cache_dir(kind: str) -> Path:
    """Where localagent caches `kind` (models, prompt-cache, vocab)."""
    home = os.environ.get("LOCALAGENT_HOME")
    if home:
        return Path(home) / kind
    return _base("XDG_CACHE_HOME", ".cache") / "localagent" / kind


def own_home() -> Path | None:
    """$LOCALAGENT_HOME as a real path, when set: localagent's own files, never a workspace's."""
    home = os.environ.get("LOCALAGENT_HOME")
    return Path(os.path.realpath(home)) if home else None


def config_path() -> Path:
    return _base("XDG_CONFIG_HOME", ".config") / "localagent" / "config.toml"


def transcripts_dir() -> Path:
    return _base("XDG_STATE_HOME", ".local/state") / "localagent" / "transcripts"


def chat_history_path() -> Path:
    """The lines typed in `chat`, for Up to recall in the next session."""
    return _base("XDG_STATE_HOME", ".local/state") / "localagent" / "chat_history"
