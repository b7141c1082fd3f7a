"""The HTTP API: routes, the bearer key, and errors in OpenAI's shape."""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from localagent.core.cancel import Cancelled
from localagent.formats.base import GrammarBuildError
from localagent.serve.chat_input import turn_input
from localagent.serve.chat_request import ChatRequest
from localagent.serve.completion_request import CompletionRequest
from localagent.serve.engine import Engine
from localagent.serve.errors import RequestError, error_body, from_validation
from localagent.serve.failures import describe_failure
from localagent.serve.generation import Generation, generation_for
from localagent.serve.jobs import grammar_of, run_chat, run_completion
from localagent.serve.model_list import model_list, unknown_model
from localagent.serve.plain_chat import plain_prompt, response_grammar, run_plain_chat
from localagent.serve.responding import respond
from localagent.serve.sampling_request import SamplingRequest

R = TypeVar("R", bound=SamplingRequest)
MAX_BODY_BYTES = 32 * 1024 * 1024


def build_app(
    engine: Engine,
    defaults: Generation,
    api_key: str | None = None,
    on_ready: Callable[[], None] = lambda: None,
) -> Starlette:
    """The HTTP API over `engine`; `on_ready` runs once the server has taken Ctrl-C and SIGTERM."""

    async def chat_completions(request: Request) -> Response:
        chat = await _read(request, ChatRequest, engine)
        options = generation_for(chat, chat.token_limit, defaults, engine.generator.session.n_ctx)
        given = turn_input(chat, engine.memory)
        if chat.answers_plainly and engine.chat_template is not None:
            prompt = plain_prompt(chat.messages, engine.chat_template)
            plain = functools.partial(
                run_plain_chat, engine, prompt, response_grammar(chat.response_format), options
            )
            return await respond(request, engine.submit(plain), options.stream)
        if response_grammar(chat.response_format) is not None:
            raise RequestError(
                "this model has no chat template, so only the 'text' response_format is served",
                param="response_format",
            )
        max_actions = 1 if chat.parallel_tool_calls is False else engine.max_actions
        try:  # built here, so a schema the grammar cannot serve is a 400 before anything runs
            engine.format_for(max_actions).grammar(given.tools, given.tool_choice)
        except Exception as error:  # noqa: BLE001 - whatever the compiler trips on is in the client's schema
            reason = str(error) if isinstance(error, GrammarBuildError | ValueError) else repr(error)
            raise RequestError(
                f"Invalid tools: no grammar can be built for them: {reason}", param="tools"
            ) from None
        job = functools.partial(run_chat, engine, given, options, max_actions)
        return await respond(request, engine.submit(job), options.stream)

    async def completions(request: Request) -> Response:
        completion = await _read(request, CompletionRequest, engine)
        options = generation_for(completion, completion.max_tokens, defaults, engine.generator.session.n_ctx)
        grammar = grammar_of(completion.grammars[0]) if completion.grammars else None
        job = functools.partial(run_completion, engine, completion.prompt_text, grammar, options)
        return await respond(request, engine.submit(job), options.stream)

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": model_list(engine.model)})

    async def model(request: Request) -> Response:
        name = request.path_params["name"]
        found = [entry for entry in model_list(engine.model) if entry["id"] == name]
        if not found:
            raise unknown_model(name, engine.model)
        return JSONResponse(found[0])

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        on_ready()
        yield
        engine.close()

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/models/{name:path}", model, methods=["GET"]),
    ]
    middleware = [Middleware(BearerKey, key=api_key)] if api_key else []
    handlers: dict[Any, Any] = {
        RequestError: _request_error,
        HTTPException: _http_error,
        Cancelled: _server_error,
        Exception: _server_error,
    }
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers, lifespan=lifespan)


async def _read(request: Request, kind: type[R], engine: Engine) -> R:
    """The body as `kind`, for the model this server runs, with nothing it cannot honour."""
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise RequestError(f"the request body is larger than {MAX_BODY_BYTES // 2**20} MB", status=413)
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError(
            "We could not parse the JSON body of your request. The body must be a JSON object "
            "(Content-Type: application/json)."
        ) from None
    if not isinstance(body, dict):
        raise RequestError("The request body must be a JSON object.")
    try:
        parsed = kind.model_validate(body)
    except ValidationError as error:
        raise from_validation(error) from None
    if parsed.model is not None and not engine.model.answers_to(parsed.model):
        raise unknown_model(parsed.model, engine.model)
    for param, reason in parsed.unsupported():
        raise RequestError(reason, param=param)
    return parsed


class BearerKey:
    """Every request must carry `Authorization: Bearer KEY`."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self._expected = f"Bearer {key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                message = "Incorrect or missing API key: send it as 'Authorization: Bearer KEY'."
                body = error_body(message, code="invalid_api_key")
                response = JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _request_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestError)
    return JSONResponse(error.body(), status_code=error.status)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    message = {
        404: f"Unknown path: {request.method} {request.url.path}",
        405: f"Method {request.method} is not allowed for {request.url.path}",
    }
    text = message.get(error.status_code, str(error.detail))
    return JSONResponse(error_body(text), status_code=error.status_code, headers=error.headers)


async def _server_error(request: Request, error: Exception) -> Response:
    status = 503 if isinstance(error, Cancelled) else 500
    return JSONResponse(error_body(describe_failure(error), "server_error"), status_code=status)
