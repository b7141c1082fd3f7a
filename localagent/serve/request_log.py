"""One line per request on the server's log: the endpoint, how the request ended, what it cost."""

from __future__ import annotations

import logging
import time

from localagent.backends.local_generator import LocalGenerator, StepRecord

log = logging.getLogger("localagent.serve")

# Step records kept on the generator; a server would otherwise keep one per request forever.
KEPT_STEPS = 16


class RequestLog:
    def __init__(self, endpoint: str, generator: LocalGenerator, stream: bool) -> None:
        self.endpoint = f"{endpoint}{' (stream)' if stream else ''}"
        self.outcome = "failed"
        self._generator = generator
        self._before = generator.steps[-1] if generator.steps else None
        self._started = time.perf_counter()

    @property
    def step(self) -> StepRecord | None:
        """What this request's generation cost, once it generated."""
        steps = self._generator.steps
        return steps[-1] if steps and steps[-1] is not self._before else None

    def end(self) -> None:
        seconds = time.perf_counter() - self._started
        cost = ""
        if self.step is not None:
            usage = self.step.usage
            cost = (
                f", prompt {usage.prompt_tokens} tokens ({usage.cached_prompt_tokens} already in the KV "
                f"cache), {usage.completion_tokens} generated"
            )
        log.info("%s: %s%s, %.1f s", self.endpoint, self.outcome, cost, seconds)
        del self._generator.steps[:-KEPT_STEPS]
