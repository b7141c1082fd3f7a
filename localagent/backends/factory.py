"""Choosing the turn a run uses: a script, a hosted OpenAI-compatible API, or a local GGUF model."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localagent.models.registry import Progress, resolve_model
from localagent.settings import Settings
from localagent.turn.model_turn import ModelTurn

Notice = Callable[[str], None]


def open_backend(
    settings: Settings, progress: Progress | None = None, notice: Notice | None = None
) -> ModelTurn:
    """The turn the settings ask for; imports stay inside, so a hosted run never loads llama.cpp."""
    if settings.model.startswith("script:"):
        from localagent.backends.scripted import load_script

        return load_script(Path(settings.model.removeprefix("script:")))
    if settings.api_base:
        return _hosted(settings)
    from localagent.backends.decoding import Sampling
    from localagent.backends.llama_runtime import LoadSettings
    from localagent.backends.local_generator import LocalSettings
    from localagent.backends.local_turn import open_local_turn

    model = resolve_model(settings.model, progress)
    local = LocalSettings(
        max_tokens=settings.max_tokens,
        sampling=Sampling(settings.temperature, settings.top_p, settings.seed),
        decoder=settings.decoder,
        disk_cache=settings.disk_cache,
    )
    load = LoadSettings(n_ctx=settings.n_ctx, seed=settings.seed or 0)
    return open_local_turn(
        model, load, local, notice, tool_format=settings.tool_format, max_actions=settings.max_actions
    )


def api_key(settings: Settings) -> str:
    """The key from the environment variable the settings name; "" when unset (local servers need none)."""
    return os.environ.get(settings.api_key_env, "")


def _hosted(settings: Settings) -> ModelTurn:
    from localagent.backends.openai_http import SamplingParams

    sampling = SamplingParams(settings.max_tokens, settings.temperature, settings.top_p, settings.seed)
    common: dict[str, Any] = {
        "base_url": settings.api_base,
        "model": settings.model,
        "api_key": api_key(settings),
        "api_key_env": settings.api_key_env,
        "timeout": settings.timeout,
        "max_retries": settings.max_retries,
        "sampling": sampling,
    }
    if settings.api_mode == "completions":
        from localagent.backends.local_turn import choose_format
        from localagent.backends.openai_completions import completions_turn

        template = _local_chat_template(settings.model)
        reply_format = choose_format(settings.tool_format, template, settings.max_actions, settings.model)
        return completions_turn(reply_format=reply_format, grammar_field=settings.grammar_field, **common)
    from localagent.backends.openai_chat import OpenAIChatTurn

    return OpenAIChatTurn(**common)


def _local_chat_template(model: str) -> Any:
    """The chat template of the model the server runs, when it is installed here too (by name or
    path); the prompt is then laid out as the local engine would. Otherwise plain text tags."""
    from localagent.backends.gguf_header import GGUFHeaderError, chat_template
    from localagent.errors import LocalagentError
    from localagent.formats.chat_template import ChatTemplate
    from localagent.models.registry import load_registry

    entry = load_registry().get(model)
    if entry is not None and entry.prompt_format != "chat":
        return None
    try:
        path = resolve_model(model).path
        found = chat_template(path)
    except (LocalagentError, OSError, GGUFHeaderError):
        return None
    return ChatTemplate(*found) if found else None
