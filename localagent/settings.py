"""Run settings from three places: command-line flags override LOCALAGENT_* environment variables,
which override the config file (~/.config/localagent/config.toml or --config)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from localagent.core import paths
from localagent.core.user_files import read_user_text
from localagent.errors import LocalagentError
from localagent.mcp_servers.spec import McpServer
from localagent.models.registry import DEFAULT_MODEL

HTTP_TIMEOUT = 60.0  # seconds per HTTP request, for the settings and the HTTP turns alike

ENV_PREFIX = "LOCALAGENT_"


class SettingsError(LocalagentError):
    pass


class Settings(BaseModel):
    """Every run setting and its default, in one place: the CLI's flags are generated from it
    (cli/options.py), and the library's constructors take their defaults from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(
        DEFAULT_MODEL,
        description="Model: a name from models.txt, a .gguf path, or script:FILE.json. With --api-base, "
        "the model name sent to the server. [default: the default model in models.txt]",
    )
    api_base: str | None = Field(
        None,
        description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1: run on a server instead "
        "of locally.",
    )
    api_mode: Literal["chat", "completions"] = Field(
        "chat",
        description="With --api-base: native tool calls (chat) or a reply format under a grammar "
        "(completions).",
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="Environment variable holding the API key.",
        json_schema_extra={"metavar": "VAR"},
    )
    grammar_field: Literal["gbnf", "lark", "none"] = Field(
        "gbnf",
        description="Completions mode: send the grammar as GBNF (llama.cpp), as Lark (vLLM), or not at all.",
    )
    tool_format: Literal["auto", "react", "tool_call"] = Field(
        "react",
        description="How a text model writes a tool call: react (Thought / Action / Action Input text "
        "tags), tool_call (the model's own <tool_call> JSON in its chat template), or auto (tool_call "
        "where the chat template lays out tools, else react).",
    )
    max_actions: int = Field(1, ge=1, le=16, description="Tool calls a text model may write in one reply.")
    max_steps: int = Field(12, ge=1, le=200, description="Turns before the model must answer.")
    tools: str | None = Field(
        None,
        description="Comma-separated tools: built-in names and module:function specs; 'default' means "
        "the read-only file tools and calculator, 'edit' the tools that change files (write_file, "
        "replace_in_file, tick_box, add_item, set_key). [default: list_dir,read_file,search_text,calculator]",
    )
    max_tokens: int = Field(384, ge=16, le=32768, description="Tokens per model turn.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature; 0 is greedy.")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    seed: int | None = Field(None, description="Sampling seed.")
    n_ctx: int | None = Field(
        None,
        ge=256,
        le=1_048_576,
        description="Local context window in tokens. [default: the model's, at most 8192]",
    )
    decoder: Literal["llguidance", "gbnf", "none"] = Field(
        "llguidance",
        description="Local decoding: llguidance masks, llama.cpp's GBNF sampler, or no grammar.",
    )
    disk_cache: bool = Field(
        True, description="Keep the instructions' KV snapshot and the vocabulary on disk for fast starts."
    )
    timeout: float = Field(HTTP_TIMEOUT, gt=0, le=3600, description="Seconds per HTTP request.")
    max_retries: int = Field(2, ge=0, le=10, description="HTTP retries on 429 and 5xx.")
    mcp: tuple[McpServer, ...] = Field(
        (),
        description="An MCP server to start over stdio (repeatable); its tools join the tool set. In the "
        "config file, [[mcp]] tables: command, args, env, prefix.",
        json_schema_extra={"metavar": "'COMMAND ARGS…'"},
    )

    def record(self) -> dict[str, Any]:
        """The settings as JSON for a transcript or a report, without the values of the MCP servers'
        environment variables: they often hold keys."""
        values = self.model_dump(mode="json")
        for server in values["mcp"]:
            server["env"] = dict.fromkeys(server["env"], "(not shown)")
        return values

    @field_validator("mcp", mode="before")
    @classmethod
    def _one_server(cls, value: Any) -> Any:
        """One command line (as LOCALAGENT_MCP holds) is a list of one server."""
        return [value] if isinstance(value, str | dict) else value


FIELDS = tuple(Settings.model_fields)


def load_settings(
    flags: Mapping[str, Any],
    config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the three sources; a wrong key or value raises SettingsError naming where it came from."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    explicit = config_path is not None
    path = config_path or paths.config_path()
    if path.exists() or explicit:
        values.update(_read_config(path))
    values.update(_from_environment(environ))
    values.update({key: value for key, value in flags.items() if value is not None})
    return _validated(values)


def settings_with(base: Settings, changes: Mapping[str, Any]) -> Settings:
    """`base` with `changes`, validated as the config file is; SettingsError names each wrong value."""
    return _validated({**base.model_dump(), **changes})


def _validated(values: dict[str, Any]) -> Settings:
    try:
        return Settings(**values)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}"
            for item in error.errors(include_url=False)
        )
        raise SettingsError(f"invalid settings: {problems}") from None


def _read_config(path: Path) -> dict[str, Any]:
    text = read_user_text(path, "config file", SettingsError)
    try:
        data = tomllib.loads(text)
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
