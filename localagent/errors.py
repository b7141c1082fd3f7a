"""Errors that cross module boundaries, each carrying a message fit to show as is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from localagent.core.messages import Usage

FormatProblem = Literal["unparsable", "cut_off", "no_required_call", "empty"]


class LocalagentError(Exception):
    """An error with a one-line message meant for the user; the CLI prints it without a traceback.

    `exit_code` is the CLI's exit status: 2 for a user mistake, 1 for a failure at run time.
    """

    exit_code = 2


class UserFileError(LocalagentError):
    """A file the user named cannot be used; the message names the file and the problem, in one line."""


class RecoverableTurnError(LocalagentError):
    """The model's reply could not be used; `feedback` tells the model what to write instead.

    The runner keeps `raw` in the history and sends `feedback` back, so the model can correct itself.
    """

    def __init__(
        self, feedback: str, raw: str = "", problem: FormatProblem = "unparsable", usage: Usage | None = None
    ) -> None:
        super().__init__(feedback)
        self.feedback = feedback
        self.raw = raw
        self.problem = problem
        # What the malformed reply cost; the runner counts it with the rest of the run.
        self.usage = usage


class BackendError(LocalagentError):
    """The backend cannot go on: refused connection, failed auth, retries exhausted, a broken model."""

    exit_code = 1


class ModelNotFound(LocalagentError):
    """A model name that is not in the registry, or a path that is not a file."""


class ModelUnavailable(LocalagentError):
    """A known model that is not in the cache and could not be assembled or fetched now."""

    exit_code = 1
