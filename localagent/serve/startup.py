"""Starting the server: load the model, listen, say where, serve."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable
from typing import Protocol

from localagent.backends.factory import open_backend
from localagent.backends.local_generator import LocalGenerator
from localagent.backends.text_turn import TextTurn
from localagent.errors import LocalagentError
from localagent.models.registry import resolve_model
from localagent.serve.app import build_app
from localagent.serve.engine import Engine, ServedModel
from localagent.serve.generation import Generation
from localagent.serve.listen import base_url, bind, is_loopback, run
from localagent.settings import Settings


class LoadProgress(Protocol):
    def stage(self, text: str) -> None: ...

    def model_assembly(self, done: int, total: int) -> None: ...

    def done(self) -> None: ...


def open_engine(
    settings: Settings, progress: LoadProgress | None = None, notice: Callable[[str], None] | None = None
) -> Engine:
    if settings.model.startswith("script:"):
        raise LocalagentError("localagent serve runs a local GGUF model, not a script")
    local = settings.model_copy(update={"api_base": None})
    turn = open_backend(local, progress.model_assembly if progress else None, notice)
    if not isinstance(turn, TextTurn) or not isinstance(turn.generator, LocalGenerator):
        raise LocalagentError(f"localagent serve cannot run {settings.model!r} locally")
    return Engine(turn, ServedModel.of(resolve_model(settings.model), settings.model))


def request_defaults(settings: Settings, engine: Engine) -> Generation:
    sampling = engine.generator.settings.sampling
    return Generation(settings.max_tokens, sampling, (), stream=False, include_usage=False)


def start(
    settings: Settings,
    *,
    host: str,
    port: int,
    api_key: str | None,
    progress: LoadProgress,
    say: Callable[[str], None],
) -> None:
    _log_requests_to_stderr()
    if not is_loopback(host) and api_key is None:
        say(f"warning: {host} is reachable from other machines, and no --api-key-env protects it")
    sock = bind(host, port)
    progress.stage(f"loading {settings.model}")
    engine = open_engine(settings, progress, say)
    progress.done()
    reply_format = engine.reply_format
    ready = (
        f"{engine.model.id} ({reply_format.name} format, at most {engine.max_actions} tool call"
        f"{'s' if engine.max_actions > 1 else ''} per reply) at {base_url(sock)}"
    )
    # The ready line is said once uvicorn has taken Ctrl-C (its lifespan starts inside its signal
    # handlers). Said before `run`, a Ctrl-C sent the moment it was read once left the server running.
    app = build_app(engine, request_defaults(settings, engine), api_key, on_ready=lambda: say(ready))
    # Ctrl-C from here on is the way to stop the server, even before uvicorn has taken the signal.
    with contextlib.suppress(KeyboardInterrupt):
        run(app, sock)


def _log_requests_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("localagent serve: %(message)s"))
    logger = logging.getLogger("localagent.serve")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
