"""Fitting a history into a context window: the oldest tool results give way first."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from localagent.core.messages import Message, ToolMessage
from localagent.errors import BackendError
from localagent.turn import prompts


def elide_observations(
    messages: Sequence[Message], fits: Callable[[Sequence[Message]], bool]
) -> list[Message]:
    """The history with its oldest tool results replaced by a marker until `fits` says it fits.

    The same history and limit always give the same result, and a longer history elides what a
    shorter one did and more, so a prompt's start stays the same from step to step.
    """
    fitted = list(messages)
    while not fits(fitted):
        oldest = next(
            (
                index
                for index, message in enumerate(fitted)
                if isinstance(message, ToolMessage) and message.content != prompts.ELIDED_OBSERVATION
            ),
            None,
        )
        if oldest is None:
            raise ContextOverflow(
                "the conversation does not fit the context window even without tool results"
            )
        fitted[oldest] = fitted[oldest].model_copy(update={"content": prompts.ELIDED_OBSERVATION})
    return fitted


class ContextOverflow(BackendError):
    pass
