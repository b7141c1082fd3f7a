"""The text turn on a local GGUF model: the model loaded once, its chat template, and the reply format."""

from __future__ import annotations

from typing import Literal

from localagent.backends.cpu_backend import PORTABLE_CODE_NOTICE, PORTABLE_VARIANT, cpu_code_name
from localagent.backends.decoding import LlamaSession
from localagent.backends.llama_runtime import LoadSettings, load_llama
from localagent.backends.local_generator import LocalGenerator, LocalSettings, Notice
from localagent.backends.text_turn import TextTurn
from localagent.errors import LocalagentError
from localagent.formats.base import ReplyFormat
from localagent.formats.chat_template import ChatTemplate
from localagent.formats.react.format import ReactFormat
from localagent.formats.tool_call.format import ToolCallFormat
from localagent.models.registry import ResolvedModel

ToolFormat = Literal["auto", "react", "tool_call"]
TEMPLATE_KEY = "tokenizer.chat_template"


def chat_template_of(session: LlamaSession) -> ChatTemplate | None:
    source = session.llama.metadata.get(TEMPLATE_KEY)
    if not source:
        return None
    llama = session.llama
    return ChatTemplate(source, session.token_text(llama.token_bos()), session.token_text(llama.token_eos()))


def choose_format(
    tool_format: ToolFormat, template: ChatTemplate | None, max_actions: int, model_name: str
) -> ReplyFormat:
    """`auto`: the tool-call format where the chat template lays out tools itself, else text tags."""
    if tool_format == "tool_call" or (
        tool_format == "auto" and template is not None and template.renders_tools
    ):
        if template is None:
            raise LocalagentError(
                f"the tool_call format needs a chat template, and {model_name} has none; "
                "use --tool-format react"
            )
        return ToolCallFormat(template, max_actions=max_actions)
    return ReactFormat(template, max_actions=max_actions)


def open_local_turn(
    model: ResolvedModel,
    load: LoadSettings | None = None,
    settings: LocalSettings | None = None,
    notice: Notice | None = None,
    *,
    tool_format: ToolFormat = "react",
    max_actions: int = 1,
    session: LlamaSession | None = None,
) -> TextTurn:
    """A loaded `session` may be shared: turns with other settings then use one copy of the model."""
    session = session or LlamaSession(load_llama(model.path, load))
    if notice is not None and cpu_code_name() == PORTABLE_VARIANT:
        notice(PORTABLE_CODE_NOTICE)
    template = chat_template_of(session) if _wants_chat(model, session) else None
    reply_format = choose_format(tool_format, template, max_actions, model.display_name)
    generator = LocalGenerator(session, model.path, settings, notice)
    return TextTurn(generator, reply_format, f"local:{model.display_name}", generator.context_budget)


def _wants_chat(model: ResolvedModel, session: LlamaSession) -> bool:
    """models.txt decides for a known model; otherwise a GGUF with a chat template gets it."""
    if model.entry is not None:
        return model.entry.prompt_format == "chat"
    return bool(session.llama.metadata.get(TEMPLATE_KEY))
