"""Errors a request can cause, in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


class RequestError(Exception):
    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        self.kind = kind

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.kind, self.param, self.code)


def error_body(
    message: str, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def from_validation(error: ValidationError) -> RequestError:
    """The first problem pydantic found, said the way OpenAI says it."""
    problem = error.errors(include_url=False)[0]
    location = [part for part in problem["loc"] if not _is_union_tag(part)]
    param = _param(location)
    if problem["type"] == "extra_forbidden":
        if len(location) == 1:
            return RequestError(f"Unrecognized request argument supplied: {location[0]}", param=param)
        return RequestError(f"Unrecognized field {param!r}: it is not part of this object", param=param)
    if problem["type"] == "missing":
        return RequestError(f"Missing required parameter: {param!r}.", param=param)
    return RequestError(f"Invalid value for {param!r}: {problem['msg']}.", param=param)


def _is_union_tag(part: int | str) -> bool:
    """pydantic names the union member it tried (`function-after[...]`, `str`); OpenAI's paths do not."""
    return isinstance(part, str) and ("[" in part or part in ("str", "list[...]", "int", "float", "bool"))


def _param(location: list[int | str]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
