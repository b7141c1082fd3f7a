"""Lark for JSON arrays: the prefix items in order, each of which may be the last one unless `minItems`
needs more, then further items of one kind."""

from __future__ import annotations

from localagent.schema_grammar.json_lexemes import list_of, repeat, sequence


def array_body(
    rule: str, head: list[str], item: str | None, low: int, high: int
) -> tuple[str, dict[str, str]]:
    """The body of `rule` and its helper rules, for an array of `low`..`high` items.

    `head` holds the symbols of the prefix items, `item` the symbol of every item after them (None when
    there are none). The caller ensures low <= high, and high <= len(head) when `item` is None.
    """
    helpers: dict[str, str] = {}
    if high == 0:
        return '"[" "]"', helpers
    extra_low = max(0, low - len(head))
    extra_high = high - len(head) if item is not None else 0
    next_item = ""
    if extra_high > 0:
        next_item = f"{rule}_next"
        helpers[next_item] = f"JSON_COMMA {item}"
    if not head:
        return sequence('"["', list_of(str(item), next_item, low, extra_high), '"]"'), helpers
    shown = min(len(head), high)
    after = repeat(next_item, extra_low, extra_high) if shown == len(head) else ""
    # Each optional step is a rule of its own, so no rule expands into more than two alternatives.
    for index in range(shown - 1, 0, -1):
        step = sequence("JSON_COMMA", head[index], after)
        if index < low:
            after = step
        else:
            helpers[f"{rule}_from_{index}"] = step
            after = f"{rule}_from_{index}?"
    first = sequence(head[0], after)
    if low > 0:
        return sequence('"["', first, '"]"'), helpers
    helpers[f"{rule}_from_0"] = first
    return f'"[" {rule}_from_0? "]"', helpers
