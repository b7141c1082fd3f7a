"""Which tokens of a new prompt the KV cache already holds, so only the rest is evaluated.

Rendering is append-only: each step's prompt is the last prompt, then the last reply as the model
wrote it, then what is new. The held tokens are reused for as much of the new text as they spell
byte for byte; only the rest is tokenized. Each shared start of a prompt (the instructions, then
the workspace's listing) is always tokenized on its own, so the KV snapshots kept on disk for them
fit exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from localagent.backends.decoding import LlamaSession
from localagent.formats.base import Prompt


@dataclass
class PromptTokens:
    tokens: list[int]
    # How many of `tokens` were not held by the KV cache after the last turn.
    new: int
    # Where each of the prompt's shared starts ends, in tokens, when it was tokenized from scratch.
    shared_ends: list[int] = field(default_factory=list)


class TokenReuse:
    def __init__(self, session: LlamaSession) -> None:
        self.session = session
        self._prompt_text = ""
        self._prompt_tokens: list[int] = []
        self._reply_tokens: list[int] = []

    def tokens_for(self, prompt: Prompt) -> PromptTokens:
        held = self._held_prefix(prompt.text)
        if held is not None:
            length, held_tokens = held
            suffix = self.session.tokenize(prompt.text[length:], bos=False, special=prompt.special)
            return PromptTokens(held_tokens + suffix, len(suffix))
        bos = not (self._bos_text and prompt.text.startswith(self._bos_text))
        tokens: list[int] = []
        ends: list[int] = []
        done = 0
        for start in prompt.shared_starts:
            if done < len(start) and prompt.text.startswith(start):
                tokens += self.session.tokenize(start[done:], bos=bos and not tokens, special=prompt.special)
                ends.append(len(tokens))
                done = len(start)
        tokens += self.session.tokenize(prompt.text[done:], bos=bos and not tokens, special=prompt.special)
        return PromptTokens(tokens, len(tokens), ends)

    def hold(self, prompt_text: str, prompt_tokens: list[int], reply_tokens: list[int]) -> None:
        """What the KV cache holds after a turn: the prompt, then exactly the reply's tokens."""
        self._prompt_text, self._prompt_tokens, self._reply_tokens = prompt_text, prompt_tokens, reply_tokens

    @property
    def _bos_text(self) -> str:
        """A template that writes the BOS marker itself gets no second one from the tokenizer."""
        return self.session.token_text(self.session.llama.token_bos())

    def _held_prefix(self, text: str) -> tuple[int, list[int]] | None:
        """How much of `text` the KV cache holds, in characters and tokens: the last prompt, then as
        much of the last reply as `text` repeats byte for byte. A chat template may render the reply
        trimmed (Gemma's drops its final newline), so all but its last tokens still count."""
        if not self._prompt_text or not text.startswith(self._prompt_text):
            return None
        rest = text[len(self._prompt_text) :].encode("utf-8")
        end = kept = 0
        for token in self._reply_tokens:
            piece = self.session.piece(token)
            if not rest.startswith(piece, end):
                break
            end, kept = end + len(piece), kept + 1
        while end < len(rest) and rest[end] & 0xC0 == 0x80:  # a token may end inside a character
            kept -= 1
            end -= len(self.session.piece(self._reply_tokens[kept]))
        length = len(self._prompt_text) + len(rest[:end].decode("utf-8"))
        return length, self._prompt_tokens + self._reply_tokens[:kept]
