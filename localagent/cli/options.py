"""Options shared by the commands that run a model, and turning them into Settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from localagent.settings import Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])
SETTING_FLAGS = (
    "model",
    "api_base",
    "api_mode",
    "api_key_env",
    "grammar_field",
    "max_steps",
    "tools",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "n_ctx",
    "decoder",
    "timeout",
)


def backend_options(function: F) -> F:
    """Every flag defaults to None so that the environment and the config file can fill it."""
    options = [
        click.option(
            "--model",
            "-m",
            help="Model: a name from models.txt, a .gguf path, or script:FILE.json. "
            "With --api-base, the model name sent to the server. [default: the embedded model]",
        ),
        click.option(
            "--api-base",
            help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1: run on a "
            "server instead of locally.",
        ),
        click.option(
            "--api-mode",
            type=click.Choice(["chat", "completions"]),
            help="With --api-base: native tool calls (chat) or text tags (completions). [default: chat]",
        ),
        click.option(
            "--api-key-env",
            metavar="VAR",
            help="Environment variable holding the API key. [default: OPENAI_API_KEY]",
        ),
        click.option(
            "--grammar-field",
            type=click.Choice(["gbnf", "lark", "none"]),
            help="Completions mode: send the grammar as GBNF (llama.cpp), as Lark (vLLM), or not at all. "
            "[default: gbnf]",
        ),
        click.option("--max-steps", type=int, help="Turns before the model must answer. [default: 12]"),
        click.option(
            "--tools",
            help="Comma-separated tools: built-in names and module:function specs; "
            "'default' is the read-only set. [default: list_dir,read_file,search_text,calculator]",
        ),
        click.option("--max-tokens", type=int, help="Tokens per model turn. [default: 384]"),
        click.option("--temperature", type=float, help="Sampling temperature; 0 is greedy. [default: 0]"),
        click.option("--top-p", type=float, help="Nucleus sampling mass. [default: 1]"),
        click.option("--seed", type=int, help="Sampling seed."),
        click.option(
            "--n-ctx", type=int, help="Local context window in tokens. [default: the model's, at most 8192]"
        ),
        click.option(
            "--decoder",
            type=click.Choice(["llguidance", "gbnf", "none"]),
            help="Local decoding: llguidance masks, llama.cpp's GBNF sampler, or no grammar. "
            "[default: llguidance]",
        ),
        click.option("--timeout", type=float, help="Seconds per HTTP request. [default: 60]"),
        click.option(
            "--config",
            "config_path",
            type=click.Path(path_type=Path, dir_okay=False),
            help="Config file. [default: ~/.config/localagent/config.toml]",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def settings_from(params: dict[str, Any]) -> Settings:
    flags = {name: params.pop(name, None) for name in SETTING_FLAGS}
    return load_settings(flags, params.pop("config_path", None))
