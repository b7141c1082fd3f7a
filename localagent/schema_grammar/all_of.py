"""`allOf` -> one schema: members dereferenced, distributed over `anyOf`, their keywords merged."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from localagent.schema_grammar.keywords import (
    ANNOTATIONS,
    FORMATS,
    NoValue,
    SchemaGrammarError,
    declared_types,
    has_type,
    json_equal,
)

Note = Callable[[str, str], None]  # (where, message): records a keyword the result only approximates

MAX_REF_HOPS = 32
_MAX_DISTRIBUTED = 16


def resolve(root: Any, ref: str) -> Any:
    """The subschema of `root` that the local `$ref` points at (RFC 6901: `#/a//b` has an empty key).

    Raises LookupError, with the reason, for a pointer into nothing or a reference outside the schema.
    """
    if not ref.startswith("#"):
        raise LookupError("only references inside the same schema (#/...) are supported")
    path = unquote(ref[1:])
    if path and not path.startswith("/"):
        raise LookupError("only JSON pointers (#/...) are supported, not anchors")
    node, walked = root, "#"
    for part in path.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise LookupError(f"there is no {key!r} in {walked}")
        walked += f"/{part}"
    return node


def unresolvable(where: str, ref: Any, problem: LookupError) -> SchemaGrammarError:
    return SchemaGrammarError(f"{where}: `$ref` {ref!r} cannot be followed: {problem}")


def merge_all_of(schema: dict[str, Any], root: Any, note: Note, where: str) -> Any:
    """`schema` (which has `allOf`) as one schema without `allOf`, or an `anyOf` of such merges."""
    return _Merger(root, note).merge(schema, where)


@dataclass
class _Merger:
    root: Any
    note: Note
    depth: int = 0

    def merge(self, schema: dict[str, Any], where: str) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_REF_HOPS:
                raise SchemaGrammarError(f"{where}: `allOf` nests or refers to itself too deeply")
            return self.merged(schema, where)
        finally:
            self.depth -= 1

    def merged(self, schema: dict[str, Any], where: str) -> Any:
        members = schema["allOf"]
        if not isinstance(members, list) or not members:
            raise SchemaGrammarError(f"{where}: `allOf` must be a non-empty list")
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        parts = [self.dereferenced(m, where) for m in ([rest, *members] if rest else members)]
        if any(p is False for p in parts):
            raise NoValue(where, "an `allOf` member is `false`")
        parts = [p for p in parts if p is not True]
        for index, part in enumerate(parts):
            if not isinstance(part, dict):
                raise SchemaGrammarError(
                    f"{where}/allOf: a schema must be an object or a boolean, not {part!r}"
                )
            if "anyOf" in part or "oneOf" in part:  # allOf(A, anyOf(B, C)) == anyOf(allOf(A, B), allOf(A, C))
                keyword = "anyOf" if "anyOf" in part else "oneOf"
                options = part[keyword]
                others = [
                    *parts[:index],
                    {k: v for k, v in part.items() if k != keyword},
                    *parts[index + 1 :],
                ]
                if isinstance(options, list) and 0 < len(options) <= _MAX_DISTRIBUTED:
                    return {"anyOf": [{"allOf": [*others, option]} for option in options]}
        merged: dict[str, Any] = {}
        for part in parts:
            if "allOf" in part:
                part = self.merge(part, where)
            for key, value in part.items():
                merged[key] = (
                    value if key not in merged else self.merge_keyword(key, merged[key], value, where)
                )
        return merged

    def dereferenced(self, schema: Any, where: str) -> Any:
        """`schema` with a top-level `$ref` replaced by its target (merged with its siblings)."""
        for _ in range(MAX_REF_HOPS):
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
                return schema
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            try:
                target = resolve(self.root, schema["$ref"])
            except LookupError as problem:
                raise unresolvable(where, schema["$ref"], problem) from None
            if not siblings:
                schema = target
            elif isinstance(target, dict):
                schema = {"allOf": [target, siblings]}
            else:
                schema = siblings if target is True else False
        raise SchemaGrammarError(f"{where}: `$ref` chain longer than {MAX_REF_HOPS}")

    def merge_keyword(self, key: str, old: Any, new: Any, where: str) -> Any:
        if key in ANNOTATIONS or old == new:
            return old
        if key == "type":
            old, new = declared_types(old, where), declared_types(new, where)
            kept = [t for t in dict.fromkeys(old + new) if _allows(old, t) and _allows(new, t)]
            if not kept:
                raise NoValue(where, f"the `allOf` members have no type in common ({old} and {new})")
            return kept
        if key == "enum" and isinstance(old, list) and isinstance(new, list):
            return [value for value in old if any(json_equal(value, other) for other in new)]
        if key == "const":
            if json_equal(old, new):
                return old
            raise NoValue(where, "two `allOf` members have different `const` values")
        if key == "properties" and isinstance(old, dict) and isinstance(new, dict):
            both = {**old, **new}
            return {k: {"allOf": [old[k], new[k]]} if k in old and k in new else v for k, v in both.items()}
        if key == "format" and old in FORMATS and new in FORMATS:
            # The enforced formats are disjoint: no string is both a date and a time.
            raise NoValue(where, f"no string has both `format` {old!r} and {new!r}")
        if key == "required" and isinstance(old, list) and isinstance(new, list):
            return [*old, *(name for name in new if name not in old)]
        both_numbers = has_type(old, "number") and has_type(new, "number")
        if key in ("minimum", "minLength", "minItems", "exclusiveMinimum", "minProperties") and both_numbers:
            return max(old, new)
        if key in ("maximum", "maxLength", "maxItems", "exclusiveMaximum", "maxProperties") and both_numbers:
            return min(old, new)
        if key == "additionalProperties" and (old is False or new is False):
            self.note(
                where, "`additionalProperties: false` of one `allOf` member applied to the merged object"
            )
            return False
        self.note(where, f"`allOf`: only the first `{key}` is enforced")
        return old


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _allows(declared: Any, kind: str) -> bool:
    """Whether a `type` keyword admits values of `kind` (every integer is a number)."""
    types = _as_list(declared)
    return kind in types or (kind == "integer" and "number" in types)
