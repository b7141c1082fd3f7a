"""The text-tag turn on a local GGUF model: render the prompt, generate under the grammar, parse.

The normal path is the own decode loop with llguidance masks. Where llguidance cannot compile a
grammar the turn falls back to llama.cpp's GBNF sampler, and says so once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from localagent.backends.decoding import Generation, LlamaSession, Sampling
from localagent.backends.guidance import GrammarCompileError, Guidance
from localagent.backends.llama_runtime import LoadSettings, load_llama
from localagent.backends.prompt_cache import PromptCache
from localagent.cancel import Cancelled, CancelToken
from localagent.errors import BackendError
from localagent.events import DeltaSink
from localagent.messages import Final, Message, ToolChoice, ToolMessage, ToolRequests, Usage
from localagent.models import ResolvedModel, cache_dir
from localagent.texttag.chat_template import ChatTemplate
from localagent.texttag.grammar import GrammarCache, GrammarOptions, TextTagGrammar
from localagent.texttag.parser import parse_reply
from localagent.texttag.render import UNCONSTRAINED_STOPS, instructions_of, prompt_turns, render_plain
from localagent.texttag.stream import ReplyStream
from localagent.tools.spec import ToolSpec

Decoder = Literal["llguidance", "gbnf", "none"]
Notice = Callable[[str], None]


@dataclass(frozen=True)
class LocalSettings:
    max_tokens: int = 384
    sampling: Sampling = field(default_factory=Sampling)
    decoder: Decoder = "llguidance"
    max_actions: int = 8
    fast_forward: bool = True
    # Keep the instructions' KV snapshot and the vocabulary's bytes on disk, for a fast next start.
    disk_cache: bool = True


@dataclass
class StepRecord:
    """What one turn cost; the benchmark and the KV-reuse test read these."""

    prompt_tokens: int
    evaluated_prompt_tokens: int
    new_prompt_tokens: int
    generation: Generation
    elided_observations: int
    decoder: Decoder


class LocalTextTagTurn:
    def __init__(
        self,
        model: ResolvedModel,
        load: LoadSettings | None = None,
        settings: LocalSettings | None = None,
        notice: Notice | None = None,
        session: LlamaSession | None = None,
    ) -> None:
        self.name = f"local:{model.display_name}"
        self.model = model
        self.settings = settings or LocalSettings()
        self.notice = notice or (lambda text: None)
        # A loaded session may be shared: turns with different decoders then use one copy of the model.
        self.session = session or LlamaSession(load_llama(model.path, load))
        self.chat_template = ChatTemplate.of(self.session) if self._wants_chat(model) else None
        self.prompt_format: Literal["plain", "chat"] = "chat" if self.chat_template else "plain"
        # A chat template folds the instructions into the first turn, so only plain prompts split cleanly.
        use_cache = self.settings.disk_cache and self.chat_template is None
        self.prompt_cache = PromptCache(cache_dir("prompt-cache"), model.path) if use_cache else None
        self._instruction_tokens: list[int] = []
        self._guidance: Guidance | None = None
        self._guidance_pool: ThreadPoolExecutor | None = None
        self._guidance_future: Future[Guidance] | None = None
        if self.settings.decoder == "llguidance":
            # Building the tokenizer takes about 2 s; it overlaps with the first prompt's evaluation.
            self._guidance_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llguidance-tokenizer")
            self._guidance_future = self._guidance_pool.submit(
                Guidance, self.session, model.path, cache_dir("vocab") if self.settings.disk_cache else None
            )
        self._grammars = GrammarCache(
            GrammarOptions(max_actions=self.settings.max_actions, prompt_format=self.prompt_format)
        )
        self._fell_back: set[str] = set()
        self._held_prompt: tuple[str, list[int]] = ("", [])
        self._held_reply: list[int] = []
        self._elided: set[int] = set()
        self.steps: list[StepRecord] = []

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_delta: DeltaSink | None = None,
    ) -> Final | ToolRequests:
        cancel.raise_if_cancelled()
        grammar = self.grammar_for(tools, tool_choice) if self.settings.decoder != "none" else None
        prompt_text, prompt_tokens, new_tokens = self._prompt(messages, tools)
        warmed = self._warm_instructions()
        stream = ReplyStream(on_delta)
        generation, decoder = self._generate(prompt_tokens, grammar, cancel, stream.feed)
        if generation.stop == "cancelled":
            raise Cancelled()
        # The KV cache holds the prompt and, from the own loop (not GBNF's), exactly the reply's tokens.
        self._held_prompt, self._held_reply = (prompt_text, prompt_tokens), generation.tokens
        self.steps.append(
            StepRecord(
                prompt_tokens=len(prompt_tokens),
                evaluated_prompt_tokens=warmed + generation.stats.evaluated_prompt_tokens,
                new_prompt_tokens=new_tokens,
                generation=generation,
                elided_observations=len(self._elided),
                decoder=decoder,
            )
        )
        parsed = parse_reply(
            generation.text,
            tools,
            tool_choice,
            tolerant=grammar is None,
            cut_off=generation.stop == "length",
            token_limit=self.settings.max_tokens,
        )
        for note in parsed.notes:
            self.notice(note)
        usage = Usage(
            prompt_tokens=len(prompt_tokens),
            completion_tokens=generation.stats.generated_tokens,
            cached_prompt_tokens=len(prompt_tokens) - warmed - generation.stats.evaluated_prompt_tokens,
        )
        return parsed.result.model_copy(update={"usage": usage})

    def _wants_chat(self, model: ResolvedModel) -> bool:
        """models.txt decides for a known model; otherwise a GGUF with a chat template gets it."""
        if model.entry is not None:
            return model.entry.prompt_format == "chat"
        return ChatTemplate.of(self.session) is not None

    def grammar_for(self, tools: Sequence[ToolSpec], tool_choice: ToolChoice) -> TextTagGrammar:
        return self._grammars.get(tools, tool_choice)

    @property
    def guidance(self) -> Guidance:
        if self._guidance is None:
            self._guidance = (
                self._guidance_future.result() if self._guidance_future else Guidance(self.session)
            )
            if self._guidance_pool is not None:
                self._guidance_pool.shutdown(wait=False)
        return self._guidance

    def _generate(
        self,
        prompt: list[int],
        grammar: TextTagGrammar | None,
        cancel: CancelToken,
        on_text: Callable[[str], None],
    ) -> tuple[Generation, Decoder]:
        settings = self.settings
        if grammar is None:
            generation = self.session.generate(
                prompt,
                max_tokens=settings.max_tokens,
                sampling=settings.sampling,
                cancel=cancel,
                on_text=on_text,
                stop=UNCONSTRAINED_STOPS,
            )
            return generation, "none"
        if settings.decoder == "llguidance" and grammar.lark not in self._fell_back:
            try:
                generation = self.session.generate(
                    prompt,
                    max_tokens=settings.max_tokens,
                    matcher=lambda: self.guidance.compile(grammar.lark).fresh(),
                    sampling=settings.sampling,
                    cancel=cancel,
                    on_text=on_text,
                    fast_forward=settings.fast_forward,
                )
            except GrammarCompileError as error:
                self._fell_back.add(grammar.lark)
                self.notice(
                    f"llguidance cannot compile this grammar ({error}); using llama.cpp's GBNF sampler"
                )
            else:
                return generation, "llguidance"
        generation = self.session.generate_stock(
            prompt,
            max_tokens=settings.max_tokens,
            gbnf=grammar.gbnf,
            sampling=settings.sampling,
            cancel=cancel,
            on_text=on_text,
        )
        return generation, "gbnf"

    def _prompt(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> tuple[str, list[int], int]:
        """The prompt text and tokens, with old observations elided if the context would overflow.

        Returns also how many tokens are new since what the KV cache held after the last turn.
        """
        if self._elided and max(self._elided) >= len(messages):
            self._elided.clear()
        budget = self.session.n_ctx - self.settings.max_tokens
        plain = self.chat_template is None
        while True:
            turns = prompt_turns(messages, tools, frozenset(self._elided), plain=plain)
            text = render_plain(turns) if self.chat_template is None else self.chat_template.render(turns)
            tokens, new_tokens = self._tokenize_after_held(text, instructions_of(turns) if plain else "")
            if len(tokens) <= budget:
                return text, tokens, new_tokens
            oldest = next(
                (i for i, m in enumerate(messages) if isinstance(m, ToolMessage) and i not in self._elided),
                None,
            )
            if oldest is None:
                raise BackendError(
                    f"the prompt needs {len(tokens)} tokens plus {self.settings.max_tokens} to answer, but "
                    f"the context window holds {self.session.n_ctx}; raise --n-ctx or shorten the task"
                )
            self._elided.add(oldest)

    def _tokenize_after_held(self, text: str, instructions: str) -> tuple[list[int], int]:
        """Tokens for `text`, reusing those of the held prefix so its KV cache entries match exactly.

        A fresh plain prompt is tokenized in two pieces, the instructions then the rest, so the
        instructions always get the same tokens and their cached KV snapshot fits.
        """
        special = self.chat_template is not None  # the template's markers are special tokens
        held = self._held_prefix(text)
        if held is not None:
            length, held_tokens = held
            suffix = self.session.tokenize(text[length:], bos=False, special=special)
            return held_tokens + suffix, len(suffix)
        if instructions and text.startswith(instructions):
            self._instruction_tokens = self.session.tokenize(instructions, bos=True)
            tokens = self._instruction_tokens + self.session.tokenize(text[len(instructions) :], bos=False)
            return tokens, len(tokens)
        bos = self.chat_template is None or not text.startswith(self.chat_template.bos_text)
        tokens = self.session.tokenize(text, bos=bos, special=special)
        return tokens, len(tokens)

    def _warm_instructions(self) -> int:
        """On an empty KV cache, load the instructions' snapshot, or evaluate and save it.

        Returns how many tokens this evaluated (0 when the snapshot was loaded).
        """
        tokens = self._instruction_tokens
        if self.prompt_cache is None or not tokens or self.session.llama.n_tokens != 0:
            return 0
        if self.prompt_cache.restore(self.session, tokens):
            return 0
        evaluated = self.session.prefill(tokens)
        self.prompt_cache.store(self.session, tokens)
        return evaluated

    def _held_prefix(self, text: str) -> tuple[int, list[int]] | None:
        """How much of `text` the KV cache holds, in characters and tokens: the last prompt, then as
        much of the last reply as `text` repeats byte for byte. A chat template may render the reply
        trimmed (Gemma's drops its final newline), so all but its last tokens still count."""
        prompt_text, prompt_tokens = self._held_prompt
        if not prompt_text or not text.startswith(prompt_text):
            return None
        rest = text[len(prompt_text) :].encode("utf-8")
        end = kept = 0
        for token in self._held_reply:
            piece = self.session.piece(token)
            if not rest.startswith(piece, end):
                break
            end, kept = end + len(piece), kept + 1
        while end < len(rest) and rest[end] & 0xC0 == 0x80:  # a token may end inside a character
            kept -= 1
            end -= len(self.session.piece(self._held_reply[kept]))
        return len(prompt_text) + len(rest[:end].decode("utf-8")), prompt_tokens + self._held_reply[:kept]
