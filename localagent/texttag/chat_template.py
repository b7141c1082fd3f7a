"""Rendering the text-tag conversation with a GGUF's own chat template, for instruction-tuned models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from localagent.texttag.render import PromptTurn, chat_messages

if TYPE_CHECKING:
    from localagent.backends.decoding import LlamaSession

TEMPLATE_KEY = "tokenizer.chat_template"


class ChatTemplate:
    def __init__(self, template: str, bos_text: str, eos_text: str) -> None:
        self.bos_text = bos_text
        self._formatter = Jinja2ChatFormatter(template, eos_token=eos_text, bos_token=bos_text)

    @classmethod
    def of(cls, session: LlamaSession) -> ChatTemplate | None:
        template = session.llama.metadata.get(TEMPLATE_KEY)
        if not template:
            return None
        llama = session.llama
        return cls(template, session.token_text(llama.token_bos()), session.token_text(llama.token_eos()))

    def render(self, turns: Sequence[PromptTurn]) -> str:
        """The prompt up to where the model writes its reply (the generation prompt included)."""
        return self._formatter(messages=chat_messages(turns)).prompt  # type: ignore[arg-type]
