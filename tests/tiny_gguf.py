"""A tiny random-weight llama GGUF that the real llama.cpp engine loads and runs in milliseconds.

The weights are noise, so the model writes nonsense; tests rely on the grammar for structure.
The tokenizer is real: GPT-2 style byte-level BPE (each byte is a token, so any text tokenizes),
merges that make the words of a text-tag prompt one token each, control tokens for pad, EOS,
BOS and a chat template's turn markers, and (as Qwen has) user-defined tokens like `<tool_call>`.
One residual dimension is held constant so the output layer can add a fixed bias to the tokens
that end a field (newline, quote, brace, end of turn): replies then close their fields within a
few dozen tokens instead of running to the limit.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest

ARCH = "llama"
PAD, EOS, BOS = "<pad>", "<eos>", "<bos>"
# Real instruct models' templates (tests/external/chat_templates/SOURCE.md).
CHAT_TEMPLATES = Path(__file__).parent / "external" / "chat_templates"
QWEN_TEMPLATE = (CHAT_TEMPLATES / "qwen2.5-coder-instruct.jinja").read_text(encoding="utf-8")
SMOLLM_TEMPLATE = (CHAT_TEMPLATES / "smollm2-instruct.jinja").read_text(encoding="utf-8")


@dataclass(frozen=True)
class SpecialTokens:
    """The tokens a vocabulary starts with, in id order: control tokens, then user-defined ones."""

    control: tuple[str, ...]
    # Text the tokenizer always reads as one token, and the model writes as text (Qwen's <tool_call>).
    user_defined: tuple[str, ...] = ()
    bos: str = BOS
    eos: str = EOS
    # What the model writes to end its reply: its chat template's end of turn, or EOS.
    turn_end: str = EOS
    add_bos: bool = True


PLAIN_TOKENS = SpecialTokens((PAD, EOS, BOS))
GEMMA_LIKE_TOKENS = SpecialTokens(
    (PAD, EOS, BOS, "<start_of_turn>", "<end_of_turn>"), turn_end="<end_of_turn>"
)
# Qwen2.5's: <|endoftext|> is BOS and pad, <|im_end|> is EOS, no BOS is added, and <tool_call>
# and </tool_call> are user-defined.
QWEN_LIKE_TOKENS = SpecialTokens(
    ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
    ("<tool_call>", "</tool_call>"),
    bos="<|endoftext|>",
    eos="<|im_end|>",
    turn_end="<|im_end|>",
    add_bos=False,
)
# SmolLM2's: ChatML markers, <|im_start|> is BOS, <|im_end|> is EOS, no BOS is added.
SMOLLM_LIKE_TOKENS = SpecialTokens(
    ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
    bos="<|im_start|>",
    eos="<|im_end|>",
    turn_end="<|im_end|>",
    add_bos=False,
)

# Gemma's shape: the system prompt is prefixed to the first user turn, content is trimmed, the
# assistant is called "model", and the generation prompt opens a model turn.
GEMMA_LIKE_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = '' -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif -%}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else '') }}
    {{- message['content'] | trim }}
    {{- '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<start_of_turn>model\\n' }}
{%- endif -%}
"""

# Text whose words (as GPT-2's pre-tokenizer splits them) become single tokens through merge
# chains, so a text-tag prompt takes about a token per word instead of one per byte.
CORPUS = """
You answer the question by thinking step by step and using tools.
Tools: List the files and directories in a directory. Directory names end with '/'. Input:
Read a text file. Each line is shown with its line number, like '12: text'. Search text files for
a pattern. Each match is shown as 'file:line: text'. Calculate an arithmetic expression and return
the number. Use ** for powers. Write, append, create, delete, replace, content, contents, old, new.
{"additionalProperties":false,"properties":{"path":{"default":".","description":"Directory path
relative to the workspace root; '.' is the root","type":"string"},"start_line":{"minimum":1,
"type":"integer"},"end_line":{},"regex":{"type":"boolean"}},"required":["path"],"type":"object"}
First line to read (1 is the first line). Last line to read; leave it out to read to the end.
Text to find (case-sensitive). File or directory to search, relative to everything. true: pattern
is a Python regular expression; false: plain text. An arithmetic expression, like sqrt(16) / 4.
Use this format: Question: the question you must answer. Thought: one line about what to do next.
Action: the tool to use, one of [list_dir, read_file, search_text, calculator, write_file].
Action Input: the tool's input as a JSON object on one line. Observation: the result of the action
(written for you; never write it yourself) ... (Thought, Action, Action Input and Observation can
repeat) Thought: I know the final answer. Final Answer: the final answer to the question.
Example: Question: What is 12 times 7? Thought: I should multiply with the calculator.
Action: calculator Action Input: {"expression": "12 * 7"} Observation: 84 Final Answer: is 84.
You are a careful assistant. Tool error: no such file or directory. Error: older observation
elided to fit the context window.
user
model
system
"""
# What Qwen2.5's template and the tool_call format add: the tools block, spaced JSON, tool responses.
TOOL_CALL_CORPUS = """
# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "read_file", "description": "Read a whole text file.",
"parameters": {"additionalProperties": false, "properties": {"path": {"description": "File path
relative to the workspace root", "type": "string"}, "start_line": {"default": 1, "description":
"First line to read; only for long files", "minimum": 1, "type": "integer"}, "end_line": {}},
"required": ["path"], "type": "object"}}}
</tools>

For each function call, return a json object with function name and arguments within
<tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>
<tool_response>
long.txt, lines 1-6 of 6:
</tool_response>
"""
# GPT-2's pre-tokenizer, with Python's `re` (letters are word characters that are not digits or _).
_PRE_TOKEN = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")

# Random logits spread with a standard deviation of about LOGIT_NOISE; the lifts, in the same
# units, make a field's end likely within a few tokens. A newline is lifted most, so a quote only
# wins where a newline is not allowed: inside JSON strings. A model with a chat template ends its
# turn with the template's end-of-turn marker, as instruction-tuned models do; one without, with EOS.
LOGIT_NOISE = 4.0
END_LIFTS = {"\n": 11.0, '"': 9.0, '"}': 9.0, "}": 8.0}
TURN_END_LIFT = 12.0
# In the tool_call format a line break ends only the preface, and an answer (which may hold line
# breaks) ends with the end of turn; a model for it breaks lines and ends its turn more readily,
# or noise can lock a preface or an answer into repeating a phrase.
TOOL_CALL_LIFTS = {"\n": 15.0}
TOOL_CALL_TURN_END_LIFT = 20.0
# The constant residual dimension reads about this much after the final RMS norm (measured).
_BIAS_INPUT_AFTER_NORM = 0.9


@dataclass(frozen=True)
class TinyDims:
    embedding: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    feed_forward: int = 128
    context: int = 4096


@dataclass(frozen=True)
class Vocabulary:
    tokens: list[str]
    types: list[int]
    merges: list[str]

    def id_of(self, text: str) -> int:
        """The token of a control token's text, or of a text that is one token."""
        return self.tokens.index(text if text in self.tokens else _byte_level(text))


def _byte_alphabet() -> list[str]:
    """GPT-2's byte-to-unicode map: printable bytes stand for themselves, the rest move above 255."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    alphabet = {byte: chr(byte) for byte in printable}
    for shifted, byte in enumerate(b for b in range(256) if b not in alphabet):
        alphabet[byte] = chr(256 + shifted)
    return [alphabet[byte] for byte in range(256)]


_ALPHABET = _byte_alphabet()


def _byte_level(text: str) -> str:
    return "".join(_ALPHABET[byte] for byte in text.encode("utf-8"))


def build_vocabulary(special: SpecialTokens, corpus: str = CORPUS) -> Vocabulary:
    """The special tokens, the 256 bytes, then merges that make each corpus word one token.

    A word's merges are added after it is split with the merges so far, each joining its first two
    pieces; as they rank after every earlier merge they never change how earlier words split.
    """
    tokens = [*special.control, *special.user_defined, *_ALPHABET]
    known = set(tokens)
    ranks: dict[tuple[str, str], int] = {}
    for word in dict.fromkeys(_PRE_TOKEN.findall(corpus)):
        pieces = _apply_merges(list(_byte_level(word)), ranks)
        while len(pieces) > 1:
            ranks[pieces[0], pieces[1]] = len(ranks)
            if pieces[0] + pieces[1] not in known:
                known.add(pieces[0] + pieces[1])
                tokens.append(pieces[0] + pieces[1])
            pieces = _apply_merges(pieces, ranks)
    types = (
        [gguf.TokenType.CONTROL] * len(special.control)
        + [gguf.TokenType.USER_DEFINED] * len(special.user_defined)
        + [gguf.TokenType.NORMAL] * (len(tokens) - len(special.control) - len(special.user_defined))
    )
    return Vocabulary(tokens, [int(t) for t in types], [f"{left} {right}" for left, right in ranks])


def _apply_merges(pieces: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """BPE as llama.cpp does it: merge the lowest-ranked adjacent pair (leftmost on ties) while any is."""
    while len(pieces) > 1:
        pair_ranks = [ranks.get(pair, len(ranks)) for pair in itertools.pairwise(pieces)]
        best = min(range(len(pair_ranks)), key=pair_ranks.__getitem__)
        if pair_ranks[best] == len(ranks):
            break
        pieces[best : best + 2] = [pieces[best] + pieces[best + 1]]
    return pieces


def _weights(
    vocabulary: Vocabulary, dims: TinyDims, lifts: Mapping[str, float], seed: int
) -> Iterator[tuple[str, np.ndarray]]:
    """Random weights (rows are outputs, as GGUF stores them), with residual dimension 0 held at a
    constant: nothing writes to it, so the output layer reads it as a per-token bias."""
    rng = np.random.default_rng(seed)
    n_vocab, d, head = len(vocabulary.tokens), dims.embedding, dims.embedding // dims.heads

    def dense(rows: int, columns: int, gain: float = 1.0) -> np.ndarray:
        return (rng.standard_normal((rows, columns)) * gain / np.sqrt(columns)).astype(np.float32)

    def into_residual(rows: int, columns: int) -> np.ndarray:
        matrix = dense(rows, columns, gain=0.5)
        matrix[0] = 0.0
        return matrix

    ones = np.ones(d, dtype=np.float32)
    embeddings = rng.standard_normal((n_vocab, d)).astype(np.float32)
    embeddings[:, 0] = 1.0
    yield "token_embd.weight", embeddings
    for layer in range(dims.layers):
        prefix = f"blk.{layer}"
        yield f"{prefix}.attn_norm.weight", ones
        yield f"{prefix}.attn_q.weight", dense(dims.heads * head, d)
        yield f"{prefix}.attn_k.weight", dense(dims.kv_heads * head, d)
        yield f"{prefix}.attn_v.weight", dense(dims.kv_heads * head, d)
        yield f"{prefix}.attn_output.weight", into_residual(d, dims.heads * head)
        yield f"{prefix}.ffn_norm.weight", ones
        yield f"{prefix}.ffn_gate.weight", dense(dims.feed_forward, d)
        yield f"{prefix}.ffn_up.weight", dense(dims.feed_forward, d)
        yield f"{prefix}.ffn_down.weight", into_residual(d, dims.feed_forward)
    yield "output_norm.weight", ones
    output = dense(n_vocab, d, gain=LOGIT_NOISE)
    bias = np.zeros(n_vocab, dtype=np.float32)
    for text, lift in lifts.items():
        bias[vocabulary.id_of(text)] = lift
    output[:, 0] = bias / _BIAS_INPUT_AFTER_NORM
    yield "output.weight", output


def build_tiny_gguf(
    path: Path,
    *,
    chat_template: str | None,
    special: SpecialTokens = PLAIN_TOKENS,
    corpus: str = CORPUS,
    lifts: Mapping[str, float] | None = None,
    seed: int = 0,
    dims: TinyDims = TinyDims(),
) -> Path:
    """Write a tiny llama-architecture GGUF with random weights and a byte-level BPE tokenizer."""
    vocabulary = build_vocabulary(special, corpus)
    writer = gguf.GGUFWriter(path, ARCH)
    writer.add_name(f"tiny-random-{'chat' if chat_template else 'plain'}")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(dims.context)
    writer.add_embedding_length(dims.embedding)
    writer.add_block_count(dims.layers)
    writer.add_feed_forward_length(dims.feed_forward)
    writer.add_head_count(dims.heads)
    writer.add_head_count_kv(dims.kv_heads)
    writer.add_rope_dimension_count(dims.embedding // dims.heads)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_vocab_size(len(vocabulary.tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(vocabulary.tokens)
    writer.add_token_types(vocabulary.types)
    writer.add_token_merges(vocabulary.merges)
    writer.add_pad_token_id(0)
    writer.add_eos_token_id(vocabulary.id_of(special.eos))
    writer.add_bos_token_id(vocabulary.id_of(special.bos))
    writer.add_add_bos_token(special.add_bos)
    writer.add_add_eos_token(False)
    if chat_template:
        writer.add_chat_template(chat_template)
    if lifts is None:
        lifts = {**END_LIFTS, special.turn_end: TURN_END_LIFT}
    for name, tensor in _weights(vocabulary, dims, lifts, seed):
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def build_tool_call_gguf(path: Path, chat_template: str, special: SpecialTokens, seed: int = 0) -> Path:
    """A tiny chat GGUF for the tool_call format: its merges know the tools block, and it breaks
    lines and ends its turn more readily than the others (TOOL_CALL_LIFTS)."""
    return build_tiny_gguf(
        path,
        chat_template=chat_template,
        special=special,
        corpus=CORPUS + TOOL_CALL_CORPUS,
        lifts={**END_LIFTS, **TOOL_CALL_LIFTS, special.turn_end: TOOL_CALL_TURN_END_LIFT},
        seed=seed,
    )


@pytest.fixture(scope="session")
def tiny_model_plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A base-model GGUF: no chat template, so the turn renders the plain text-tag prompt."""
    return build_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny-plain.gguf", chat_template=None)


@pytest.fixture(scope="session")
def tiny_model_chat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instruction-model GGUF with a Gemma-like chat template and its turn markers."""
    return build_tiny_gguf(
        tmp_path_factory.mktemp("tiny") / "tiny-chat.gguf",
        chat_template=GEMMA_LIKE_TEMPLATE,
        special=GEMMA_LIKE_TOKENS,
    )


@pytest.fixture(scope="session")
def tiny_model_qwen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instruction-model GGUF with Qwen2.5's own chat template (it lays out tools, and replies
    call them in `<tool_call>` tags) and Qwen's special tokens."""
    return build_tool_call_gguf(
        tmp_path_factory.mktemp("tiny") / "tiny-qwen.gguf", QWEN_TEMPLATE, QWEN_LIKE_TOKENS
    )


@pytest.fixture(scope="session")
def tiny_model_smollm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instruction-model GGUF with SmolLM2's own ChatML template, which lays out no tools."""
    return build_tool_call_gguf(
        tmp_path_factory.mktemp("tiny") / "tiny-smollm.gguf", SMOLLM_TEMPLATE, SMOLLM_LIKE_TOKENS
    )
