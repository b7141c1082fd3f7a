"""Regexes that match exactly the integers of a range, as JSON writes them."""

from __future__ import annotations


def integer_range_regex(low: int, high: int) -> str:
    """A regex for the integers in [low, high] written without leading zeros (and no `-0`).

    Alternatives run from the most digits to the fewest, so a leftmost-first regex engine (Python's,
    as lark uses it) matches the whole digit run rather than a prefix of it.
    """
    parts = []
    if low < 0:
        parts.append("-" + _group(_unsigned_range(max(1, -min(high, -1)), -low)))
    if high >= 0:
        parts.append(_unsigned_range(max(low, 0), high))
    return "|".join(parts)


def _unsigned_range(low: int, high: int) -> str:
    blocks: list[tuple[int, int, str]] = []  # (min digits, max digits, regex) from long to short
    for digits in range(len(str(high)), len(str(low)) - 1, -1):
        start = max(low, 10 ** (digits - 1) if digits > 1 else 0)
        end = min(high, 10**digits - 1)
        full = digits > 1 and start == 10 ** (digits - 1) and end == 10**digits - 1
        if full and blocks and blocks[-1][2] == "" and blocks[-1][0] == digits + 1:
            blocks[-1] = (digits, blocks[-1][1], "")  # one block for all full digit counts in a row
        else:
            blocks.append((digits, digits, "" if full else _same_length(str(start), str(end))))
    out = []
    for shortest, longest, regex in blocks:
        if regex:
            out.append(regex)
        else:
            count = f"{{{shortest - 1}}}" if shortest == longest else f"{{{shortest - 1},{longest - 1}}}"
            out.append(f"[1-9][0-9]{count}")
    return "|".join(out)


def _same_length(low: str, high: str) -> str:
    """The numbers from `low` to `high`, two digit strings of the same length."""
    if low == high:
        return low
    if low[0] == high[0]:
        return low[0] + _group(_same_length(low[1:], high[1:]))
    rest = len(low) - 1
    options = []
    first, last = int(low[0]), int(high[0])
    if low[1:] != "0" * rest:
        options.append(low[0] + _group(_same_length(low[1:], "9" * rest)))
        first += 1
    tail = ""
    if high[1:] != "9" * rest:
        tail = high[0] + _group(_same_length("0" * rest, high[1:]))
        last -= 1
    if first <= last:
        digit = str(first) if first == last else f"[{first}-{last}]"
        options.append(digit + ("" if rest == 0 else "[0-9]" if rest == 1 else f"[0-9]{{{rest}}}"))
    if tail:
        options.append(tail)
    return "|".join(options)


def _group(regex: str) -> str:
    return f"(?:{regex})" if "|" in regex else regex
