"""A GGUF's own chat template (Jinja), rendered the way Hugging Face transformers renders it.

Only the template text is needed, so this works for a local model and for a remote server alike.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar

import jinja2
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

from localagent.errors import LocalagentError


class ChatTemplateError(LocalagentError):
    pass


class _IgnoreGenerationTags(Extension):
    """transformers' `{% generation %}` tag marks trainable text; rendering passes it through."""

    tags: ClassVar[set[str]] = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> list[jinja2.nodes.Node]:
        parser.stream.skip(1)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise(message: str) -> None:
    raise ChatTemplateError(f"the chat template refused the conversation: {message}")


class ChatTemplate:
    def __init__(self, source: str, bos_text: str = "", eos_text: str = "") -> None:
        self.source = source
        self.bos_text = bos_text
        self.eos_text = eos_text
        environment = ImmutableSandboxedEnvironment(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_IgnoreGenerationTags, "jinja2.ext.loopcontrols"],
        )
        environment.filters["tojson"] = _tojson
        try:
            self._template = environment.from_string(source)
        except jinja2.TemplateError as error:
            raise ChatTemplateError(f"the model's chat template does not compile: {error}") from None

    @property
    def renders_tools(self) -> bool:
        """Whether the template lays out a `tools` list itself (Qwen, Hermes, Llama 3.1 and others do)."""
        return "tools" in self.source

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        generation: bool = True,
    ) -> str:
        """The prompt for `messages`, up to where the model writes its reply when `generation` is set."""
        try:
            return self._template.render(
                messages=messages,
                tools=tools or None,
                bos_token=self.bos_text,
                eos_token=self.eos_text,
                add_generation_prompt=generation,
                raise_exception=_raise,
                strftime_now=lambda style: datetime.now().strftime(style),
            )
        except jinja2.TemplateError as error:
            raise ChatTemplateError(f"the model's chat template failed: {error}") from None
