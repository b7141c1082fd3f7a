"""Evaluating tokens in a loaded model's llama.cpp context and reading the logits it leaves.

llama-cpp-python's `Llama.eval` keeps the logits of a batch's last token only; a draft needs those
of several rows, so it decodes its batch here. Both report llama.cpp's failure in the same words.
"""

from __future__ import annotations

from collections.abc import Sequence

import llama_cpp
import numpy as np

from localagent.errors import BackendError


def evaluate(llama: llama_cpp.Llama, tokens: Sequence[int]) -> None:
    """Evaluate `tokens` after the ones the cache holds, keeping the logits after the last."""
    try:
        llama.eval(list(tokens))
    except RuntimeError as error:
        raise _failed(error) from None


def evaluate_rows(llama: llama_cpp.Llama, tokens: Sequence[int], first_row: int) -> None:
    """Evaluate `tokens` after `llama.n_tokens` in one batch, keeping the logits after each token
    from `first_row` on. `llama.n_tokens` stays where it was: the caller says which tokens count."""
    start = llama.n_tokens
    llama._ctx.kv_cache_seq_rm(-1, start, -1)
    batch = llama._batch
    batch.set_batch(batch=list(tokens), n_past=start, logits_all=True)
    for index in range(first_row):
        batch.batch.logits[index] = False
    try:
        llama._ctx.decode(batch)
    except RuntimeError as error:
        raise _failed(error) from None
    llama.input_ids[start : start + len(tokens)] = tokens


def logits_row(llama: llama_cpp.Llama, n_vocab: int, index: int = -1) -> np.ndarray:
    """A copy of the logits after the last batch's token at `index`, one whose logits it kept;
    -1 is the last token kept."""
    pointer = llama._ctx.get_logits_ith(index)
    return np.ctypeslib.as_array(pointer, shape=(n_vocab,)).copy()


def _failed(error: RuntimeError) -> BackendError:
    return BackendError(f"llama.cpp failed to evaluate tokens: {error}")
