"""Lark for JSON objects: known properties in order (optional ones may be left out), then extra pairs
whose keys are none of the known ones."""

from __future__ import annotations

from typing import Any

from localagent.schema_grammar.json_lexemes import lark_literal, list_of, repeat
from localagent.schema_grammar.regex_syntax import JSON_RAW, CharSet, json_escape_char, to_regex
from localagent.schema_grammar.regex_syntax import Concat as RegexConcat


def object_body(
    rule: str, entries: list[tuple[str, bool]], extra: str | None, max_extra: int
) -> tuple[str, dict[str, str]]:
    """The body of `rule` and its helper rules, from its (pair, required) entries and extra pair rule."""
    helpers: dict[str, str] = {}
    next_extra = f"{rule}_next_extra" if extra else ""
    if extra:
        helpers[next_extra] = f"JSON_COMMA {extra}"
    # Lark expands each optional item into two alternatives of the whole rule, so runs of more than
    # one are split into tail rules: tail(i) matches the items from i on, each after its comma.
    items = [(f"JSON_COMMA {text}" if req else f"(JSON_COMMA {text})?", not req) for text, req in entries]
    if extra:
        items.append((repeat(next_extra, 0, max_extra), True))

    def tail(start: int) -> str:
        if sum(optional for _, optional in items[start:]) <= 1:
            return " ".join(text for text, _ in items[start:])
        text, optional = items[start]
        if not optional:
            return f"{text} {tail(start + 1)}"
        name = f"{rule}_tail_{start}"
        if name not in helpers:
            helpers[name] = f"{text} {tail(start + 1)}"
        return name

    first_required = next((i for i, (_, req) in enumerate(entries) if req), None)
    starts = range(len(entries) if first_required is None else first_required + 1)
    options = [f"{entries[start][0]} {tail(start + 1)}".strip() for start in starts]
    if extra and first_required is None:
        options.append(list_of(extra, next_extra, 1, max_extra))
    if not options:
        return '"{" "}"', helpers
    if first_required is not None and len(options) == 1:
        return f'"{{" {options[0]} "}}"', helpers
    return f'"{{" ({" | ".join(options)}){"?" if first_required is None else ""} "}}"', helpers


_BACKSLASH = CharSet.char("\\")


def key_excluding(known: list[str], max_length: int) -> str:
    """A terminal for a JSON string key that is none of `known` (so extras cannot redefine a property)."""
    trie: dict[str, Any] = {}
    for key in known:
        node = trie
        for unit in map(json_escape_char, key):
            node = node.setdefault(unit, {})
        node[""] = {}  # end marker: the key stops here

    def diverging(node: dict[str, Any]) -> str:
        """Keys that leave the trie at this node: a character (or escape) no known key has here."""
        units = [u for u in node if u]
        raw = CharSet.of((ord(u), ord(u)) for u in units if len(u) == 1)
        options = [f"/{to_regex(JSON_RAW.minus(raw))}/"]
        if all(len(u) == 1 for u in units):
            options.append("JSON_ESCAPE")
        else:  # no key writes "/" as an escape, so some simple escape is always left
            taken = CharSet.of((ord(u[1]), ord(u[1])) for u in units if len(u) == 2)
            letters = CharSet.of((ord(c), ord(c)) for c in '"\\/bfnrt').minus(taken)
            options.append(f"/{to_regex(RegexConcat((_BACKSLASH, letters)))}/")
            if all(len(u) <= 2 for u in units):  # a known key's \uXXXX here rules out all of them (stricter)
                options.append(r"/\\u[0-9a-fA-F]{4}/")
        options += [f"{lark_literal(u)} ({diverging(node[u])})" for u in units]
        return " | ".join(options)

    def proper_prefixes(node: dict[str, Any]) -> list[str]:
        options = [] if "" in node else [""]
        for unit in (u for u in node if u):
            rest = proper_prefixes(node[unit])
            if rest:
                options.append(f"{lark_literal(unit)} {_optional_group(rest)}".strip())
        return options

    tail = repeat("JSON_CHAR", 0, max_length)
    options = [f"({diverging(trie)}) {tail}", *proper_prefixes(trie)]
    return f'"\\"" {_optional_group(options)} "\\""'


def _optional_group(options: list[str]) -> str:
    """The options as one group, optional when one of them is empty."""
    present = [o for o in options if o]
    if not present:
        return ""
    group = f"({' | '.join(present)})"
    return group + "?" if len(present) < len(options) else group
