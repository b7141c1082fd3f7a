"""What a text generator returns for one prompt: the reply's text, why it stopped, what it cost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from localagent.core.cancel import CancelToken
from localagent.core.messages import Usage
from localagent.formats.base import Prompt, ReplyGrammar, TextSink

# end: the model (or its grammar) ended the reply; length: the token limit; loop: the reply kept
# repeating itself and was stopped; interrupted: the connection dropped mid-reply.
ReplyStop = Literal["end", "length", "loop", "cancelled", "interrupted"]


@dataclass(frozen=True)
class Reply:
    text: str
    stop: ReplyStop
    usage: Usage | None = None


class TextGenerator(Protocol):
    """Writes a reply to a prompt, under the reply's grammar when it takes one."""

    # False when the generator takes no grammar: the reply is then read by the tolerant parser.
    constrained: bool
    max_tokens: int | None

    def generate(
        self,
        prompt: Prompt,
        grammar: ReplyGrammar | None,
        cancel: CancelToken,
        on_text: TextSink,
        stops: Sequence[str] = (),
    ) -> Reply: ...
