"""A regular-expression AST for the subset shared by JSON-schema patterns, Lark, llguidance and GBNF.

`parse_regex` reads ECMA-style patterns (JSON schema `pattern`) or the Python-style regexes found in
Lark terminals. Emitters write the AST back as a regex that Python `re` and Rust `regex` (llguidance)
read the same way, or as a GBNF expression. Anything outside the subset raises `UnsupportedPattern`,
so callers can fall back to a looser rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

MAX_CHAR = 0x10FFFF
Flavor = Literal["ecma", "python"]
Hoist = Callable[[str], str]  # defines a GBNF rule with the given body and returns its name


class UnsupportedPattern(ValueError):
    """The pattern is invalid or uses a feature outside the supported subset."""


@dataclass(frozen=True)
class CharSet:
    """Code points as sorted, disjoint, non-adjacent inclusive ranges; one char is a literal."""

    ranges: tuple[tuple[int, int], ...]

    @staticmethod
    def of(ranges: Iterable[tuple[int, int]]) -> CharSet:
        merged: list[tuple[int, int]] = []
        for low, high in sorted(ranges):
            if merged and low <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], high))
            else:
                merged.append((low, high))
        return CharSet(tuple(merged))

    @staticmethod
    def char(c: str) -> CharSet:
        return CharSet(((ord(c), ord(c)),))

    def complement(self) -> CharSet:
        gaps, start = [], 0
        for low, high in self.ranges:
            if low > start:
                gaps.append((start, low - 1))
            start = high + 1
        if start <= MAX_CHAR:
            gaps.append((start, MAX_CHAR))
        return CharSet(tuple(gaps))

    def minus(self, other: CharSet) -> CharSet:
        return self.intersect(other.complement())

    def intersect(self, other: CharSet) -> CharSet:
        out = []
        for low, high in self.ranges:
            for o_low, o_high in other.ranges:
                if max(low, o_low) <= min(high, o_high):
                    out.append((max(low, o_low), min(high, o_high)))
        return CharSet.of(out)

    @property
    def single(self) -> str | None:
        if len(self.ranges) == 1 and self.ranges[0][0] == self.ranges[0][1]:
            return chr(self.ranges[0][0])
        return None


@dataclass(frozen=True)
class Concat:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    item: Node
    min: int
    max: int | None


@dataclass(frozen=True)
class Anchor:
    kind: Literal["start", "end"]


Node = CharSet | Concat | Alt | Repeat | Anchor

_EMPTY = Concat(())
_DIGITS = CharSet.of([(0x30, 0x39)])
_WORD = CharSet.of([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
_SPACE = CharSet.of([(0x09, 0x0D), (0x20, 0x20)])
_DOTS: dict[Flavor, CharSet] = {
    "ecma": CharSet.of([(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]).complement(),
    "python": CharSet.char("\n").complement(),
}
_CLASS_ESCAPES = {"d": _DIGITS, "w": _WORD, "s": _SPACE}
_CHAR_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v", "0": "\0"}


def literal(text: str) -> Node:
    """The AST matching exactly `text`."""
    return Concat(tuple(CharSet.char(c) for c in text))


# ---------------------------------------------------------------- parsing


def parse_regex(text: str, flavor: Flavor = "ecma") -> Node:
    """Parse `text`; `^`/`$` become `Anchor` nodes (see `full_match`)."""
    parser = _Parser(text, flavor)
    node = parser.alternation()
    if parser.pos < len(text):
        raise UnsupportedPattern(f"unbalanced ')' at offset {parser.pos} in {text!r}")
    return node


class _Parser:
    def __init__(self, text: str, flavor: Flavor) -> None:
        self.text = text
        self.flavor = flavor
        self.pos = 0

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def fail(self, what: str, at: int | None = None) -> UnsupportedPattern:
        return UnsupportedPattern(f"{what} at offset {self.pos if at is None else at} in {self.text!r}")

    def alternation(self) -> Node:
        options = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.pos < len(self.text) and self.peek() not in "|)":
            atom = self.atom()
            items.append(self.quantified(atom))
        return items[0] if len(items) == 1 else Concat(tuple(items))

    def quantified(self, atom: Node) -> Node:
        bounds = self.quantifier()
        if bounds is None:
            return atom
        if isinstance(atom, Anchor):
            raise self.fail("quantifier on an anchor")
        if self.peek() == "?":  # lazy: same language under full-match semantics
            self.pos += 1
        elif self.peek() == "+":
            raise self.fail("possessive quantifier")
        node = Repeat(atom, *bounds)
        if self.quantifier_ahead():
            raise self.fail("nothing to repeat")
        return node

    def quantifier_ahead(self) -> bool:
        saved = self.pos
        found = self.quantifier() is not None
        self.pos = saved
        return found

    def quantifier(self) -> tuple[int, int | None] | None:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.pos += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        if c != "{":
            return None
        end = self.text.find("}", self.pos)
        body = self.text[self.pos + 1 : end] if end > 0 else ""
        low, comma, high = body.partition(",")
        if not low.isdigit() or (high and not high.isdigit()):
            return None  # ECMA reads a '{' that starts no quantifier as a literal
        self.pos = end + 1
        minimum = int(low)
        maximum = minimum if not comma else int(high) if high else None
        if maximum is not None and maximum < minimum:
            raise self.fail(f"bad repetition {{{body}}}")
        return minimum, maximum

    def atom(self) -> Node:
        c = self.text[self.pos]
        if c in "*+?" or (c == "{" and self.quantifier_ahead()):
            raise self.fail("nothing to repeat")
        self.pos += 1
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == ".":
            return _DOTS[self.flavor]
        if c in "^$":
            return Anchor("start" if c == "^" else "end")
        if c == "\\":
            return self.escape(in_class=False)
        return CharSet.char(c)

    def group(self) -> Node:
        start = self.pos - 1
        ahead = self.peek(4)
        if ahead.startswith("?:"):
            self.pos += 2
        elif ahead.startswith(("?=", "?!", "?<=", "?<!")):
            raise self.fail("lookaround", start)
        elif ahead.startswith(("?<", "?P<")):
            end = self.text.find(">", self.pos)
            if end < 0:
                raise self.fail("unterminated group name")
            self.pos = end + 1
        elif ahead.startswith("?"):
            raise self.fail("inline flags or extension group", start)
        node = self.alternation()
        if self.peek() != ")":
            raise self.fail("missing ')'")
        self.pos += 1
        return node

    def char_class(self) -> CharSet:
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            if self.pos >= len(self.text):
                raise self.fail("missing ']'")
            c = self.text[self.pos]
            if c == "]" and not (first and self.flavor == "python"):
                self.pos += 1
                break
            first = False
            low = self.class_atom()
            if self.peek() == "-" and self.peek(2) not in ("-", "-]"):
                self.pos += 1
                high = self.class_atom()
                if low.single is None or high.single is None:
                    raise self.fail("range with a class escape")
                if ord(high.single) < ord(low.single):
                    raise self.fail("reversed range")
                ranges.append((ord(low.single), ord(high.single)))
            else:
                ranges.extend(low.ranges)
        result = CharSet.of(ranges)
        return result.complement() if negated else result

    def class_atom(self) -> CharSet:
        c = self.text[self.pos]
        self.pos += 1
        if c == "\\":
            return self.escape(in_class=True)
        if c == "[" and self.peek() in (":", "=", "."):
            raise self.fail("POSIX class")
        return CharSet.char(c)

    def escape(self, in_class: bool) -> CharSet:
        start = self.pos - 1
        if self.pos >= len(self.text):
            raise self.fail("trailing backslash", start)
        c = self.text[self.pos]
        self.pos += 1
        if c.lower() in _CLASS_ESCAPES:
            found = _CLASS_ESCAPES[c.lower()]
            return found.complement() if c.isupper() else found
        if c in _CHAR_ESCAPES and not (c == "0" and self.peek().isdigit()):
            return CharSet.char(_CHAR_ESCAPES[c])
        if c == "b" and in_class:
            return CharSet.char("\b")
        if c == "x":
            return self.hex_char(2)
        if c == "u":
            if self.peek() == "{":
                end = self.text.find("}", self.pos)
                if end < 0:
                    raise self.fail("bad hex escape", start)
                digits, self.pos = self.text[self.pos + 1 : end], end + 1
                return self.code_point(digits)
            return self.hex_char(4)
        if c == "U" and self.flavor == "python":
            return self.hex_char(8)
        if c.isdigit():
            raise self.fail("backreference", start)
        if c.isalnum():
            raise self.fail(f"escape \\{c}", start)
        return CharSet.char(c)

    def hex_char(self, width: int) -> CharSet:
        digits = self.text[self.pos : self.pos + width]
        self.pos += width
        return self.code_point(digits if len(digits) == width else "")

    def code_point(self, digits: str) -> CharSet:
        try:
            value = int(digits, 16)
        except ValueError:
            raise self.fail("bad hex escape") from None
        if value > MAX_CHAR:
            raise self.fail("code point out of range")
        return CharSet(((value, value),))


# ---------------------------------------------------------------- transforms


def full_match(node: Node, filler: Node) -> Node:
    """Turn search semantics into full-match semantics: top-level branches not anchored with `^`/`$`
    get `filler` (e.g. any chars) on the open side. Anchors anywhere else are unsupported."""
    branches = node.options if isinstance(node, Alt) else (node,)
    out = []
    for branch in branches:
        items = list(branch.items) if isinstance(branch, Concat) else [branch]
        starts = bool(items) and items[0] == Anchor("start")
        items = items[1:] if starts else items
        ends = bool(items) and items[-1] == Anchor("end")
        items = items[:-1] if ends else items
        body = Concat(tuple(items))
        if _has_anchor(body):
            raise UnsupportedPattern("'^' or '$' inside the pattern")
        out.append(Concat(((_EMPTY if starts else filler), *items, (_EMPTY if ends else filler))))
    return simplify(out[0] if len(out) == 1 else Alt(tuple(out)))


def _has_anchor(node: Node) -> bool:
    if isinstance(node, Anchor):
        return True
    if isinstance(node, Concat):
        return any(_has_anchor(item) for item in node.items)
    if isinstance(node, Alt):
        return any(_has_anchor(option) for option in node.options)
    if isinstance(node, Repeat):
        return _has_anchor(node.item)
    return False


def bound_repeats(node: Node, limit: int) -> Node:
    """Give every unbounded repetition an upper bound of max(min, limit)."""
    if isinstance(node, Repeat):
        item = bound_repeats(node.item, limit)
        return Repeat(item, node.min, max(node.min, limit) if node.max is None else node.max)
    if isinstance(node, Concat):
        return Concat(tuple(bound_repeats(item, limit) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(bound_repeats(option, limit) for option in node.options))
    return node


JSON_RAW = CharSet.of([(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]).complement()
_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def json_escape_char(c: str) -> str:
    """How `c` is written inside a JSON string."""
    if c in _JSON_ESCAPES:
        return _JSON_ESCAPES[c]
    return f"\\u{ord(c):04x}" if ord(c) < 0x20 else c


def json_safe(node: Node) -> Node:
    """Make the pattern match the JSON-encoded text of its strings, so it fits between JSON quotes.

    A character that JSON must escape (`"`, `\\`, U+0000-U+001F) becomes its escape sequence, as
    `json_escape_char` writes it; every other character stays raw.
    """
    if isinstance(node, CharSet):
        if node.single is not None and node.single not in _JSON_ESCAPES and ord(node.single) >= 0x20:
            return node  # most of a long pattern: a plain character, written as it is
        raw = node.intersect(JSON_RAW)
        escaped = [
            json_escape_char(chr(point))
            for low, high in node.minus(JSON_RAW).ranges
            for point in range(low, high + 1)
        ]
        options = ([raw] if raw.ranges else []) + _escape_options(escaped)
        if not options:
            raise UnsupportedPattern("a character set that matches nothing")
        return options[0] if len(options) == 1 else Alt(tuple(options))
    if isinstance(node, Concat):
        return Concat(tuple(json_safe(item) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(json_safe(option) for option in node.options))
    if isinstance(node, Repeat):
        return Repeat(json_safe(node.item), node.min, node.max)
    raise UnsupportedPattern("'^' or '$' inside the pattern")


def _escape_options(escapes: list[str]) -> list[Node]:
    """Escape sequences as few regex nodes: `\\u001` and one set of last digits stand for up to 16."""
    short = [literal(e) for e in escapes if not e.startswith("\\u")]
    by_prefix: dict[str, list[str]] = {}
    for escape in escapes:
        if escape.startswith("\\u"):
            by_prefix.setdefault(escape[:-1], []).append(escape[-1])
    hex_digits: list[Node] = [
        Concat((literal(prefix), CharSet.of((ord(d), ord(d)) for d in digits)))
        for prefix, digits in by_prefix.items()
    ]
    return short + hex_digits


def simplify(node: Node) -> Node:
    """Flatten nested sequences and drop empty items, without changing the language."""
    if isinstance(node, Concat):
        items: list[Node] = []
        for item in (simplify(i) for i in node.items):
            items.extend(item.items if isinstance(item, Concat) else (item,))
        return items[0] if len(items) == 1 else Concat(tuple(items))
    if isinstance(node, Alt):
        return Alt(tuple(simplify(option) for option in node.options))
    if isinstance(node, Repeat):
        return Repeat(simplify(node.item), node.min, node.max)
    return node


# ---------------------------------------------------------------- emitters

_REGEX_META = set(".^$|?*+()[]{}\\/")
_CLASS_META = set("\\]^-[&~/")


def to_regex(node: Node) -> str:
    """A regex read the same way by Python `re` and Rust `regex`, safe inside Lark's `/.../`."""
    if isinstance(node, Anchor):
        raise UnsupportedPattern("anchors cannot be emitted; apply full_match first")
    if isinstance(node, CharSet):
        char = node.single
        return _regex_char(char, _REGEX_META) if char is not None else _regex_class(node)
    if isinstance(node, Concat):
        out = ""
        for item in node.items:
            text = _regex_group(item) if isinstance(item, Alt) else to_regex(item)
            if out.endswith("\\\\") and text.startswith('"'):
                # lark reads `\\"` in a regex as `\"`; `\x22` survives its unescaping
                text = "\\x22" + text[1:]
            out += text
        return out
    if isinstance(node, Alt):
        return "|".join(to_regex(option) for option in node.options)
    inner = to_regex(node.item)
    if not isinstance(node.item, CharSet):
        inner = f"(?:{inner})"
    return inner + _quantifier(node.min, node.max)


def _regex_group(node: Node) -> str:
    return f"(?:{to_regex(node)})"


def _regex_class(charset: CharSet) -> str:
    if not charset.ranges:
        return "[^\\x00-\\U0010FFFF]"
    negate = _open_ended(charset)
    ranges = charset.complement().ranges if negate else charset.ranges
    if negate and not ranges:
        return "[\\x00-\\U0010FFFF]"
    body = "".join(_regex_range(low, high) for low, high in ranges)
    return f"[^{body}]" if negate else f"[{body}]"


def _open_ended(charset: CharSet) -> bool:
    """Sets that run to the last code point read better, and never longer, as a negated class."""
    return charset.ranges[-1][1] == MAX_CHAR


def _regex_range(low: int, high: int) -> str:
    first = _regex_char(chr(low), _CLASS_META)
    if low == high:
        return first
    sep = "" if high == low + 1 else "-"
    return f"{first}{sep}{_regex_char(chr(high), _CLASS_META)}"


def _regex_char(c: str, meta: set[str]) -> str:
    if c in meta:
        return "\\" + c
    return _printable(c) or _hex_escape(ord(c))


def _printable(c: str) -> str | None:
    point = ord(c)
    if 0x20 <= point < 0x7F or (point > 0xA0 and c.isprintable()):
        return c
    return None


def _hex_escape(point: int) -> str:
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def _quantifier(minimum: int, maximum: int | None) -> str:
    if maximum is None:
        return {0: "*", 1: "+"}.get(minimum, f"{{{minimum},}}")
    if (minimum, maximum) == (0, 1):
        return "?"
    return f"{{{minimum}}}" if minimum == maximum else f"{{{minimum},{maximum}}}"


def to_gbnf(node: Node, hoist: Hoist | None = None) -> str:
    """A llama.cpp GBNF expression for an anchor-free AST.

    llama.cpp refuses `x{m,n}`, and even `x?`, when the rules it generates inside `x` times the count
    reach 2000, and `y{0,2000}` inside `x` generates 2000; with `hoist`, a quantified `x` that holds a
    counted repetition, or a group repeated more than once, becomes a rule of its own, which llama.cpp
    repeats at no such cost.
    """
    if isinstance(node, Anchor):
        raise UnsupportedPattern("anchors cannot be emitted; apply full_match first")
    if isinstance(node, CharSet):
        char = node.single
        return f'"{_gbnf_char(char, in_class=False)}"' if char is not None else _gbnf_class(node)
    if isinstance(node, Concat):
        return _gbnf_sequence(node.items, hoist)
    if isinstance(node, Alt):
        return "(" + " | ".join(to_gbnf(option, hoist) for option in node.options) + ")"
    if node.max == 0:
        return '""'
    inner = to_gbnf(node.item, hoist)
    if isinstance(node.item, Repeat):  # llama.cpp would re-repeat only the last expanded copy
        inner = f"({inner})"
    many = node.max is None or node.max > 1
    if hoist and (_has_counted_repeat(node.item) or (many and inner.startswith("("))):
        inner = hoist(inner)  # a group is a rule inside llama.cpp, expanded once per repetition
    return inner + _quantifier(node.min, node.max)


def _has_counted_repeat(node: Node) -> bool:
    if isinstance(node, Repeat):
        return max(node.min, node.max or 0) > 1 or _has_counted_repeat(node.item)
    if isinstance(node, Concat):
        return any(_has_counted_repeat(item) for item in node.items)
    if isinstance(node, Alt):
        return any(_has_counted_repeat(option) for option in node.options)
    return False


def _gbnf_sequence(items: tuple[Node, ...], hoist: Hoist | None) -> str:
    parts: list[str] = []
    run = ""
    for item in items:
        char = item.single if isinstance(item, CharSet) else None
        if char is not None:
            run += _gbnf_char(char, in_class=False)
            continue
        if run:
            parts.append(f'"{run}"')
            run = ""
        parts.append(to_gbnf(item, hoist))
    if run or not parts:
        parts.append(f'"{run}"')
    return parts[0] if len(parts) == 1 else "(" + " ".join(parts) + ")"


def _gbnf_class(charset: CharSet) -> str:
    everything = ((0, MAX_CHAR),)
    if charset.ranges in ((), everything):  # spelled out: GBNF has no empty class, and `.` varies
        return _gbnf_ranges(everything, negate=not charset.ranges)
    negate = _open_ended(charset)
    return _gbnf_ranges(charset.complement().ranges if negate else charset.ranges, negate)


def _gbnf_ranges(ranges: tuple[tuple[int, int], ...], negate: bool) -> str:
    body = "".join(
        _gbnf_char(chr(low), in_class=True)
        + ("" if low == high else "-" + _gbnf_char(chr(high), in_class=True))
        for low, high in ranges
    )
    return f"[^{body}]" if negate else f"[{body}]"


_GBNF_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_char(c: str, in_class: bool) -> str:
    if c in ('\\"[]' if in_class else '\\"'):
        return "\\" + c
    if c in _GBNF_ESCAPES:
        return _GBNF_ESCAPES[c]
    if in_class and c in "-^":
        return _hex_escape(ord(c))
    if ord(c) >= 0x100 and not 0xD800 <= ord(c) <= 0xDFFF:
        return c  # raw UTF-8: GBNF readers disagree on \u and \U escapes, llama.cpp decodes UTF-8
    return _printable(c) or _hex_escape(ord(c))
