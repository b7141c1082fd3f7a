"""The body of `POST /v1/completions`, with the grammar fields of llama.cpp and vLLM.

A grammar comes as GBNF in `grammar` (llama.cpp's servers), as Lark in
`structured_outputs: {"grammar": ...}` (vLLM 0.12 and later) or in `guided_grammar` (vLLM before).
Either runs through llguidance, as the local turn's own grammars do.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from localagent.serve.errors import RequestError
from localagent.serve.sampling_request import SamplingRequest


class StructuredOutputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grammar: str | None = None
    # vLLM's other structured outputs, refused with a reason.
    json_: Any = Field(None, alias="json")
    regex: str | None = None
    choice: list[str] | None = None
    structural_tag: Any = None


class CompletionRequest(SamplingRequest):
    prompt: str | list[str]
    echo: bool | None = None
    logprobs: int | None = Field(None, ge=0, le=5)
    suffix: str | None = None
    best_of: int | None = Field(None, ge=1)
    grammar: str | None = None
    structured_outputs: StructuredOutputs | None = None
    guided_grammar: str | None = None

    @property
    def prompt_text(self) -> str:
        if isinstance(self.prompt, str):
            return self.prompt
        if len(self.prompt) != 1:
            raise RequestError("this server takes one prompt per request", param="prompt")
        return self.prompt[0]

    def unsupported(self) -> list[tuple[str, str]]:
        problems = super().unsupported()
        if self.echo:
            problems.append(("echo", "echo is not supported by this server"))
        if self.logprobs:
            problems.append(("logprobs", "logprobs are not supported by this server"))
        if self.suffix:
            problems.append(("suffix", "suffix (insertion) is not supported by this server"))
        if self.best_of not in (None, 1):
            problems.append(("best_of", "this server writes one completion per request; best_of must be 1"))
        outputs = self.structured_outputs
        if outputs is not None:
            for name in ("json_", "regex", "choice", "structural_tag"):
                if getattr(outputs, name) is not None:
                    field = name.rstrip("_")
                    problems.append(
                        (
                            f"structured_outputs.{field}",
                            f"structured_outputs.{field} is not supported; use grammar",
                        )
                    )
        if any(not text.strip() for text in self.grammars):
            problems.append(("grammar", "the grammar is blank; give its rules, starting with root"))
        if len(self.grammars) > 1:
            problems.append(
                ("grammar", "give one grammar: grammar, structured_outputs.grammar or guided_grammar")
            )
        return problems

    @property
    def grammars(self) -> list[str]:
        """Each grammar given, GBNF or Lark (llguidance tells them apart)."""
        given = [
            self.grammar,
            self.structured_outputs and self.structured_outputs.grammar,
            self.guided_grammar,
        ]
        return [text for text in given if text]
