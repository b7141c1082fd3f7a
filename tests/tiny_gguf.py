"""A tiny random-weight llama GGUF that the real llama.cpp engine loads and runs in milliseconds.

The weights are noise, so the model writes garbage; the tests rely on the grammar for structure.
The tokenizer is real: GPT-2 style byte-level BPE (every byte is a token, so any text tokenizes),
a few merges for the text-tag keywords, and control tokens for BOS/EOS and a chat template's turn
markers. Two hidden-state directions are kept constant on purpose: one lifts the logits of the
tokens that end a field (newline, quote, brace, EOS, end of turn), so greedy and sampled replies
close their fields in a few dozen tokens instead of running to the length limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest

ARCH = "llama"
PAD, EOS, BOS = "<pad>", "<eos>", "<bos>"
TURN_MARKERS = ("<start_of_turn>", "<end_of_turn>")

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
# GPT-2's pre-tokenizer, with Python's `re` (letters are word characters that are not digits or _).
_PRE_TOKEN = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")
# Where a reply field ends: these tokens get a constant lift in the logits.
FIELD_ENDS = ("\n", '"', "}", '"}', EOS, "<end_of_turn>")
END_LIFT = 1.0


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

    def id_of(self, text: str) -> int | None:
        """The token for a control token's text or for a text that is one token; None if none is."""
        index = {token: i for i, token in enumerate(self.tokens)}
        return index.get(text, index.get(_byte_level(text)))


def _byte_alphabet() -> list[str]:
    """GPT-2's byte-to-unicode map: printable bytes stand for themselves, the rest move above 255."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    alphabet = {byte: chr(byte) for byte in printable}
    for shifted, byte in enumerate(b for b in range(256) if b not in alphabet):
        alphabet[byte] = chr(256 + shifted)
    return [alphabet[byte] for byte in range(256)]


_ALPHABET = _byte_alphabet()


def _byte_level(text: str) -> str:
    return "".join(_ALPHABET[byte] for byte in text.encode("utf-8"))


def build_vocabulary(markers: Sequence[str], corpus: str = CORPUS) -> Vocabulary:
    """Control tokens (Gemma's order: pad, eos, bos, then turn markers), the 256 bytes, then merges
    that make each corpus word one token.

    A word's merges are added after it is split with the merges so far, each joining its first two
    pieces; as they rank after every earlier merge they never change how earlier words split.
    """
    control = [PAD, EOS, BOS, *markers]
    tokens = [*control, *_ALPHABET]
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
    types = [gguf.TokenType.CONTROL] * len(control) + [gguf.TokenType.NORMAL] * (len(tokens) - len(control))
    return Vocabulary(tokens, [int(t) for t in types], [f"{left} {right}" for left, right in ranks])


def _apply_merges(pieces: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """BPE as llama.cpp does it: merge the lowest-ranked adjacent pair (leftmost on ties) until none is left."""
    while len(pieces) > 1:
        pair_ranks = [ranks.get(pair, len(ranks)) for pair in zip(pieces, pieces[1:], strict=False)]
        best = min(range(len(pair_ranks)), key=pair_ranks.__getitem__)
        if pair_ranks[best] == len(ranks):
            break
        pieces[best : best + 2] = [pieces[best] + pieces[best + 1]]
    return pieces


def _weights(vocabulary: Vocabulary, dims: TinyDims, seed: int) -> Iterator[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    n_vocab, d = len(vocabulary.tokens), dims.embedding
    head = d // dims.heads

    def normal(*shape: int, scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    embeddings = normal(n_vocab, d, scale=1.0)
    embeddings[:, 0] = 4.0  # a constant direction the output layer reads as a bias
    yield "token_embd.weight", embeddings
    for layer in range(dims.layers):
        prefix = f"blk.{layer}"
        yield f"{prefix}.attn_norm.weight", np.ones(d, dtype=np.float32)
        yield f"{prefix}.attn_q.weight", normal(dims.heads * head, d, scale=0.3)
        yield f"{prefix}.attn_k.weight", normal(dims.kv_heads * head, d, scale=0.3)
        yield f"{prefix}.attn_v.weight", normal(dims.kv_heads * head, d, scale=0.3)
        yield f"{prefix}.attn_output.weight", normal(d, dims.heads * head, scale=0.1)
        yield f"{prefix}.ffn_norm.weight", np.ones(d, dtype=np.float32)
        yield f"{prefix}.ffn_gate.weight", normal(dims.feed_forward, d, scale=0.3)
        yield f"{prefix}.ffn_up.weight", normal(dims.feed_forward, d, scale=0.3)
        yield f"{prefix}.ffn_down.weight", normal(d, dims.feed_forward, scale=0.1)
    yield "output_norm.weight", np.ones(d, dtype=np.float32)
    output = normal(n_vocab, d, scale=0.5)
    output[:, 0] = 0.0
    for text in FIELD_ENDS:
        token = vocabulary.id_of(text)
        if token is not None:
            output[token, 0] = END_LIFT
    yield "output.weight", output


def build_tiny_gguf(path: Path, *, chat_template: str | None, seed: int = 0, dims: TinyDims = TinyDims()) -> Path:
    """Write a tiny llama-architecture GGUF with random weights and a byte-level BPE tokenizer."""
    markers = [m for m in TURN_MARKERS if chat_template and m in chat_template]
    vocabulary = build_vocabulary(markers)
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
    writer.add_eos_token_id(1)
    writer.add_bos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    if chat_template:
        writer.add_chat_template(chat_template)
    for name, tensor in _weights(vocabulary, dims, seed):
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="session")
def tiny_model_plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A base-model GGUF: no chat template, so the turn renders the plain text-tag prompt."""
    return build_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny-plain.gguf", chat_template=None)


@pytest.fixture(scope="session")
def tiny_model_chat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instruction-model GGUF with a Gemma-like chat template and its turn markers."""
    return build_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny-chat.gguf", chat_template=GEMMA_LIKE_TEMPLATE)
