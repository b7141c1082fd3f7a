"""What both endpoints' bodies share: the model, sampling, stop strings, streaming, and the fields
OpenAI knows that a local turn ignores."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

# OpenAI takes up to four stop strings.
MAX_STOPS = 4


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_usage: bool | None = None
    include_obfuscation: bool | None = None


class SamplingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # OpenAI requires it; this server runs one model, so leaving it out means that one.
    model: str | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = Field(None, ge=-(2**63), lt=2**63)
    stop: str | list[str] | None = None
    n: int | None = Field(None, ge=1, le=128)
    logit_bias: dict[str, float] | None = None
    # Accepted and ignored: penalties only shape unconstrained text, and a user id is bookkeeping.
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    user: str | None = None

    @field_validator("stop")
    @classmethod
    def _stops(cls, stop: str | list[str] | None) -> str | list[str] | None:
        if isinstance(stop, list) and len(stop) > MAX_STOPS:
            raise ValueError(f"at most {MAX_STOPS} stop sequences")
        return stop

    @property
    def stops(self) -> tuple[str, ...]:
        values = [self.stop] if isinstance(self.stop, str) else (self.stop or [])
        return tuple(value for value in values if value)

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    def unsupported(self) -> list[tuple[str, str]]:
        """(parameter, reason) for each value this server cannot honour."""
        problems = []
        if self.n not in (None, 1):
            problems.append(("n", "this server writes one choice per request; n must be 1"))
        if self.logit_bias:
            problems.append(
                ("logit_bias", "logit_bias is not supported: the grammar decides which tokens may come")
            )
        if self.stream_options is not None and not self.stream:
            problems.append(("stream_options", "stream_options is only allowed when stream is true"))
        return problems
