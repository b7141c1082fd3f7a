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
    param = _param(_path(problem["loc"]))
    if problem["type"] == "extra_forbidden":
        if "." not in param and "[" not in param:
            return RequestError(f"Unrecognized request argument supplied: {param}", param=param)
        return RequestError(f"Unrecognized field {param!r}: it is not part of this object", param=param)
    if problem["type"] == "missing":
        return RequestError(f"Missing required parameter: {param!r}.", param=param)
    return RequestError(f"Invalid value for {param!r}: {problem['msg']}.", param=param)


_ROLES = {"system", "developer", "user", "assistant", "tool"}
_TYPE_NAMES = {"str", "int", "float", "bool", "none"}


def _path(location: tuple[int | str, ...]) -> list[int | str]:
    """The location without the names pydantic gives union members (`str`, `list[...]`, a class, a role)."""
    path: list[int | str] = []
    for part in location:
        if isinstance(part, str) and (
            "[" in part
            or part in _TYPE_NAMES
            or part[:1].isupper()
            or (part in _ROLES and path and isinstance(path[-1], int))
        ):
            continue
        path.append(part)
    return path


def _param(path: list[int | str]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
