"""Export a Lark grammar (the subset shared with llguidance) to llama.cpp GBNF.

Lark's own loader reads the grammar into EBNF trees; regex literals go through `regex_syntax`.
GBNF has no lexer, so terminals become ordinary rules: the language is the same, character by character.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lark import Token, Tree
from lark.exceptions import LarkError
from lark.grammar import NonTerminal, Terminal
from lark.load_grammar import PatternRE, PatternStr, _literal_to_pattern, load_grammar

from localagent.schema_grammar.regex_syntax import CharSet, UnsupportedPattern, literal, parse_regex, to_gbnf


class GrammarExportError(ValueError):
    """The Lark grammar uses a construct GBNF cannot express."""


def lark_to_gbnf(lark_text: str, start: str = "start") -> str:
    try:
        grammar, _ = load_grammar(lark_text, "<grammar>", [], False)
    except LarkError as error:
        raise GrammarExportError(f"not a valid Lark grammar: {error}") from None
    if grammar.ignore:
        raise GrammarExportError(f"%ignore ({', '.join(grammar.ignore)}) has no GBNF equivalent")
    definitions: list[tuple[str, Tree]] = []
    for name, params, tree, _options in grammar.rule_defs:
        if params:
            raise GrammarExportError(f"template rule {name!r} has no GBNF equivalent")
        definitions.append((name, tree))
    definitions += [(name, tree) for name, (tree, _priority) in grammar.term_defs]
    if start not in {name for name, _ in definitions}:
        raise GrammarExportError(f"the grammar has no rule {start!r}")
    names = _gbnf_names(start, [name for name, _ in definitions])
    # lark's loader inlines terminals used inside terminals, reusing the same tree object;
    # keeping them as references keeps the GBNF small and within llama.cpp's repetition limit.
    terminals = {id(tree): name for name, (tree, _priority) in grammar.term_defs}
    writer = _Writer(names, terminals)
    lines = [writer.rule(names[name], tree) for name, tree in definitions]
    return "\n".join([*lines, *writer.hoisted]) + "\n"


def _gbnf_names(start: str, lark_names: list[str]) -> dict[str, str]:
    """Map Lark names to distinct lowercase GBNF names (letters, digits, '-'); start becomes `root`.

    Lowercase, because GBNF tools fold case; a terminal named like a rule (THOUGHT, thought) gets `-token`.
    """
    taken = {"root"}
    out = {start: "root"}
    for name in lark_names:
        if name == start:
            continue
        base = name.lower().replace("_", "-").strip("-") or "rule"
        if base in taken and name.lstrip("_")[:1].isupper():
            base += "-token"
        candidate, number = base, 2
        while candidate in taken:
            candidate, number = f"{base}-{number}", number + 1
        taken.add(candidate)
        out[name] = candidate
    return out


_ATOMIC = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[A-Za-z0-9-]+')


class _Writer:
    def __init__(self, names: dict[str, str], terminals: dict[int, str]) -> None:
        self.names = names
        self.terminals = terminals
        self.taken = set(names.values()) | {"root"}
        self.hoisted: list[str] = []
        self.hoisted_names: dict[str, str] = {}
        self.current = ""
        self.current_tree: Tree | None = None

    def rule(self, name: str, tree: Tree) -> str:
        self.current, self.current_tree = name, tree
        return f"{name} ::= {self.alternatives(tree)}"

    def hoist(self, body: str) -> str:
        """Define a helper rule for `body` (once per body) and return its name."""
        if body in self.hoisted_names:
            return self.hoisted_names[body]
        number = 1
        while f"{self.current}-{number}" in self.taken:
            number += 1
        name = f"{self.current}-{number}"
        self.taken.add(name)
        self.hoisted.append(f"{name} ::= {body}")
        self.hoisted_names[body] = name
        return name

    def alternatives(self, tree: Any) -> str:
        if isinstance(tree, Tree) and tree.data == "expansions":
            return " | ".join(self.sequence(child) for child in tree.children)
        return self.sequence(tree)

    def sequence(self, tree: Any) -> str:
        if isinstance(tree, Tree) and tree.data == "alias":
            tree = tree.children[0]
        if isinstance(tree, Tree) and tree.data == "expansion":
            parts = [self.item(child) for child in tree.children]
            return " ".join(parts) if parts else '""'
        return self.item(tree)

    def item(self, tree: Any) -> str:
        if isinstance(tree, NonTerminal | Terminal):
            if tree.name not in self.names:
                raise GrammarExportError(f"{tree.name!r} is used but not defined")
            return self.names[tree.name]
        if not isinstance(tree, Tree):
            raise GrammarExportError(f"unexpected grammar element {tree!r}")
        if id(tree) in self.terminals and tree is not self.current_tree:
            return self.names[self.terminals[id(tree)]]
        if tree.data == "value":
            return self.item(tree.children[0])
        if tree.data in ("expansions", "expansion", "alias"):
            return _group(self.alternatives(tree))
        if tree.data == "maybe":
            return self.quantifiable(self.alternatives(tree.children[0])) + "?"
        if tree.data == "expr":
            return self.repetition(tree)
        if tree.data == "literal":
            return self.literal(tree.children[0])
        if tree.data == "range":
            low, high = (_literal_to_pattern(token).value for token in tree.children)
            return to_gbnf(CharSet.of([(ord(low), ord(high))]))
        raise GrammarExportError(f"{tree.data} has no GBNF equivalent")

    def repetition(self, tree: Tree) -> str:
        inner, op, *bounds = tree.children
        text = self.quantifiable(self.item(inner))
        if op.value in ("?", "*", "+"):
            return text + op.value
        low, high = (int(bounds[0]), int(bounds[-1]))
        return f"{text}{{{low}}}" if low == high else f"{text}{{{low},{high}}}"

    def quantifiable(self, text: str) -> str:
        """`text` ready for a quantifier: grouped, or hoisted into a rule when it holds `{m,n}`.

        llama.cpp refuses a quantifier when the rules it generates inside the operand (about n for each
        `{m,n}`) times the count reach 2000; a rule reference generates none.
        """
        if any(c == "{" for _, c in _outside_literals(text)):
            return self.hoist(text)
        return _group(text)

    def literal(self, token: Token) -> str:
        pattern = _literal_to_pattern(token)
        if pattern.flags:
            raise GrammarExportError(f"flags {''.join(pattern.flags)} on {token} have no GBNF equivalent")
        if isinstance(pattern, PatternStr):
            return to_gbnf(literal(pattern.value))
        assert isinstance(pattern, PatternRE)
        try:
            return to_gbnf(parse_regex(pattern.value, flavor="python"), self.hoist)
        except UnsupportedPattern as error:
            raise GrammarExportError(f"regex {token} cannot be exported: {error}") from None


def _group(text: str) -> str:
    """Parenthesize unless `text` is one atom, so a following operator applies to all of it."""
    if _ATOMIC.fullmatch(text) or _balanced_group(text):
        return text
    return f"({text})"


def _balanced_group(text: str) -> bool:
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for index, c in _outside_literals(text):
        depth += 1 if c == "(" else -1 if c == ")" else 0
        if depth == 0 and index < len(text) - 1:
            return False
    return True


def _outside_literals(text: str) -> Iterator[tuple[int, str]]:
    """The characters of GBNF `text` that are not inside a string literal or a character class."""
    closing = ""
    escaped = False
    for index, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif closing:
            closing = "" if c == closing else closing
        elif c in '"[':
            closing = '"' if c == '"' else "]"
        else:
            yield index, c
