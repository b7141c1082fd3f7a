"""Run settings from three places: command-line flags override LOCALAGENT_* environment variables,
which override the config file (~/.config/localagent/config.toml or --config)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localagent.errors import LocalagentError
from localagent.models import DEFAULT_MODEL

ENV_PREFIX = "LOCALAGENT_"


class SettingsError(LocalagentError):
    pass


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(
        DEFAULT_MODEL, description="model name from models.txt, a .gguf path, or script:FILE.json"
    )
    api_base: str | None = Field(
        None, description="OpenAI-compatible API base URL; switches to a hosted backend"
    )
    api_mode: Literal["chat", "completions"] = Field("chat", description="hosted protocol")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable that holds the API key")
    grammar_field: Literal["gbnf", "lark", "none"] = Field(
        "gbnf", description="how the completions mode sends the grammar"
    )
    max_steps: int = Field(12, ge=1, le=200, description="turns before the run must answer")
    tools: str | None = Field(None, description="comma-separated tool names or module:function specs")
    max_tokens: int = Field(384, ge=16, le=32768, description="tokens per model turn")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 is greedy")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="nucleus sampling mass")
    seed: int | None = Field(None, description="sampling seed")
    n_ctx: int | None = Field(None, ge=256, le=1_048_576, description="local context window")
    decoder: Literal["llguidance", "gbnf", "none"] = Field(
        "llguidance", description="local constrained decoding: llguidance, llama.cpp's GBNF sampler, or none"
    )
    disk_cache: bool = Field(
        True, description="keep the instructions' KV snapshot and the vocabulary on disk for fast starts"
    )
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds per HTTP request")
    max_retries: int = Field(2, ge=0, le=10, description="HTTP retries on 429 and 5xx")


FIELDS = tuple(Settings.model_fields)


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "localagent" / "config.toml"


def load_settings(
    flags: Mapping[str, Any],
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the three sources; a wrong key or value raises SettingsError naming where it came from."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    explicit = config_path is not None
    path = config_path or default_config_path()
    if path.exists() or explicit:
        values.update(_read_config(path))
    values.update(_from_environment(environ))
    values.update({key: value for key, value in flags.items() if value is not None})
    try:
        return Settings(**values)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}"
            for item in error.errors(include_url=False)
        )
        raise SettingsError(f"invalid settings: {problems}") from None


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise SettingsError(f"cannot read config file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"config file {path} is not valid TOML: {error}") from None
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise SettingsError(
            f"config file {path}: unknown key {unknown[0]!r}; known keys: {', '.join(FIELDS)}"
        )
    return data


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in FIELDS:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is not None and raw != "":
            values[name] = raw
    return values
