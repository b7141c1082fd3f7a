"""Choosing the backend a run uses: a script, a hosted OpenAI-compatible API, or a local GGUF model."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localagent.models import Progress, resolve_model
from localagent.settings import Settings
from localagent.turn import ModelTurn

Notice = Callable[[str], None]


def open_backend(
    settings: Settings, progress: Progress | None = None, notice: Notice | None = None
) -> ModelTurn:
    """The backend the settings ask for; imports stay inside, so a hosted run never loads llama.cpp."""
    if settings.model.startswith("script:"):
        from localagent.backends.scripted import load_script

        return load_script(Path(settings.model.removeprefix("script:")))
    if settings.api_base:
        return _hosted(settings)
    from localagent.backends.decoding import Sampling
    from localagent.backends.llama_runtime import LoadSettings
    from localagent.backends.local_texttag import LocalSettings, LocalTextTagTurn

    model = resolve_model(settings.model, progress)
    local = LocalSettings(
        max_tokens=settings.max_tokens,
        sampling=Sampling(settings.temperature, settings.top_p, settings.seed),
        decoder=settings.decoder,
        disk_cache=settings.disk_cache,
    )
    load = LoadSettings(n_ctx=settings.n_ctx, seed=settings.seed or 0)
    return LocalTextTagTurn(model, load, local, notice)


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
        from localagent.backends.openai_completions import OpenAICompletionsTurn

        return OpenAICompletionsTurn(grammar_field=settings.grammar_field, **common)
    from localagent.backends.openai_chat import OpenAIChatTurn

    return OpenAIChatTurn(**common)
