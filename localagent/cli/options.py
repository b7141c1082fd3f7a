"""The flags of the commands that run a model, generated from the Settings model, and turning them
back into Settings. Names, types, choices, help and defaults all come from localagent/settings.py."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic.fields import FieldInfo

from localagent.settings import Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])
# The settings a flag can set; the rest come from the environment and the config file only.
FLAG_SETTINGS = (
    "model",
    "api_base",
    "api_mode",
    "api_key_env",
    "grammar_field",
    "tool_format",
    "max_actions",
    "max_steps",
    "tools",
    "max_tokens",
    "temperature",
    "top_p",
    "seed",
    "n_ctx",
    "decoder",
    "timeout",
    "mcp",
)
SHORT_FLAGS = {"model": "-m"}


def setting_option(name: str, others: Sequence[str] = FLAG_SETTINGS) -> Callable[[F], F]:
    """A flag for one setting; it defaults to None so the environment and the config file can fill it.
    Its help leaves out what it says about flags outside `others`, the settings its command has."""
    field = Settings.model_fields[name]
    flags = [f"--{name.replace('_', '-')}", *([SHORT_FLAGS[name]] if name in SHORT_FLAGS else [])]
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    repeated = _is_sequence(field)
    return click.option(
        *flags,
        name,
        type=str if repeated else _click_type(field),
        multiple=repeated,
        metavar=extra.get("metavar"),
        help=_about_flags_of(field.description if repeated else _help(field), others),
    )


def backend_options(function: F) -> F:
    return settings_options(FLAG_SETTINGS)(function)


def settings_options(names: Sequence[str]) -> Callable[[F], F]:
    """The flags of these settings, then --config."""

    def decorate(function: F) -> F:
        options = [setting_option(name, names) for name in names]
        options.append(
            click.option(
                "--config",
                "config_path",
                type=click.Path(path_type=Path, dir_okay=False),
                help="Config file. [default: ~/.config/localagent/config.toml]",
            )
        )
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def settings_from(params: dict[str, Any], names: Sequence[str] = FLAG_SETTINGS) -> Settings:
    """The settings the flags `names` give (popped from params), over the environment and config file."""
    flags = {name: params.pop(name, None) for name in names}
    # A repeatable flag not given is (); it leaves the setting to the environment and the config file.
    flags = {name: None if value == () else value for name, value in flags.items()}
    return load_settings(flags, params.pop("config_path", None))


def _about_flags_of(text: str | None, names: Sequence[str]) -> str:
    """`text` without the sentences that name a setting's flag missing from `names`."""
    missing = {f"--{name.replace('_', '-')}" for name in FLAG_SETTINGS} - {
        f"--{name.replace('_', '-')}" for name in names
    }
    sentences = re.split(r"(?<=[.:])\s+(?=[A-Z\[])", text or "")
    kept = [s for s in sentences if not set(re.findall(r"--[a-z-]+\b", s)) & missing]
    return " ".join(kept)


def _is_sequence(field: FieldInfo) -> bool:
    return typing.get_origin(field.annotation) in (tuple, list)


def _click_type(field: FieldInfo) -> Any:
    annotation = field.annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
    if typing.get_origin(annotation) is typing.Literal:
        return click.Choice([str(choice) for choice in typing.get_args(annotation)])
    return {int: int, float: float, bool: bool}.get(annotation, str)


def _help(field: FieldInfo) -> str:
    text = field.description or ""
    if "[default:" in text or field.default is None:
        return text
    default = field.default
    shown = (
        str(default).lower()
        if isinstance(default, bool)
        else f"{default:g}"
        if isinstance(default, float)
        else default
    )
    return f"{text} [default: {shown}]"
