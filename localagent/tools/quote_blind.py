"""A replacement whose `old` matches the file only when quote marks are left out of both.

Small models drop the quotes of a key when they copy a line: `beta_checkout: false` for the line
`"beta_checkout": false,`. When the changed part holds no quote mark on either side, where it sits
in the file is clear, and the same change is made there; the file's quotes stay as they were.
"""

from __future__ import annotations

QUOTES = frozenset("\"'`")


def replace_ignoring_quotes(text: str, old: str, new: str) -> tuple[str, int] | None:
    """`text` with the change from `old` to `new` made where `old` matches without quotes, and where
    that change starts; None when it does not match exactly once, or the change has a quote mark."""
    start, end = _changed_span(old, new)
    replacement = new[start : len(new) - (len(old) - end)]
    if start == end or any(char in QUOTES for char in old[start:end] + replacement):
        return None
    bare_text, text_at = _without_quotes(text)
    bare_old, old_at = _without_quotes(old)
    if not bare_old.strip() or bare_text.count(bare_old) != 1:
        return None
    found = bare_text.index(bare_old)
    where = {old_index: text_at[found + bare] for bare, old_index in enumerate(old_at)}
    first, last = where[start], where[end - 1] + 1
    return text[:first] + replacement + text[last:], first


def _changed_span(old: str, new: str) -> tuple[int, int]:
    """The part of `old` that differs from `new`, after their common start and end."""
    prefix = _common_start(old, new)
    suffix = _common_start(old[::-1], new[::-1])
    return prefix, len(old) - min(suffix, min(len(old), len(new)) - prefix)


def _common_start(first: str, second: str) -> int:
    return next(
        (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
        min(len(first), len(second)),
    )


def _without_quotes(text: str) -> tuple[str, list[int]]:
    kept = [index for index, char in enumerate(text) if char not in QUOTES]
    return "".join(text[index] for index in kept), kept
