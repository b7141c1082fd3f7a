"""Errors that are not the request's fault, as one line for the client and a log entry for the operator."""

from __future__ import annotations

import logging
import traceback

from localagent.core.cancel import Cancelled
from localagent.errors import LocalagentError

log = logging.getLogger("localagent.serve")


def describe_failure(error: BaseException) -> str:
    if isinstance(error, Cancelled):
        return "the server stopped this request (it is shutting down)"
    if isinstance(error, LocalagentError):
        return str(error)
    log.error("request failed:\n%s", "".join(traceback.format_exception(error)).rstrip())
    first = next(iter(str(error).splitlines()), "")
    return f"internal error: {type(error).__name__}" + (f": {first}" if first else "")
