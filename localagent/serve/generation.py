"""A request's generation options, with the server's defaults for what it leaves out."""

from __future__ import annotations

from dataclasses import dataclass

from localagent.backends.decoding import Sampling
from localagent.serve.errors import RequestError
from localagent.serve.sampling_request import SamplingRequest


@dataclass(frozen=True)
class Generation:
    max_tokens: int
    sampling: Sampling
    stops: tuple[str, ...]
    stream: bool
    include_usage: bool


def generation_for(
    request: SamplingRequest, token_limit: int | None, defaults: Generation, n_ctx: int
) -> Generation:
    max_tokens = token_limit or defaults.max_tokens
    if max_tokens >= n_ctx:
        raise RequestError(
            f"max_tokens is too large: {max_tokens}. This model's context window holds {n_ctx} tokens, "
            "prompt included",
            param="max_tokens",
        )
    base = defaults.sampling
    temperature = base.temperature if request.temperature is None else request.temperature
    top_p = base.top_p if request.top_p is None else request.top_p
    if top_p == 0:  # OpenAI takes 0: only the likeliest token
        temperature, top_p = 0.0, 1.0
    seed = base.seed if request.seed is None else request.seed % 2**64  # OpenAI's seeds may be negative
    return Generation(
        max_tokens=max_tokens,
        sampling=Sampling(temperature, top_p, seed),
        stops=request.stops,
        stream=bool(request.stream),
        include_usage=request.include_usage,
    )
