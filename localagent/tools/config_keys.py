"""set_key's edit: one key of a TOML, INI or YAML file set to a new value where it is written.

Only the value's own characters change, so the file's comments, order, quoting and indentation
stay. The key is named as the user names it: `timeout`, or `server.timeout` when several sections
have one. The new text is parsed again with the real parser (tomllib, configparser, PyYAML), and
unless exactly that key changed, to that value, the edit is refused and the file left as it was.
A key the file does not have is refused, naming the keys closest to it: set_key adds no key, so a
misspelt name cannot add one.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from localagent.tools.base import ToolError
from localagent.tools.config_ini import IniSyntax
from localagent.tools.config_syntax import (
    ConfigSyntax,
    KeyPath,
    Place,
    Unparsable,
    WrongKind,
    kind_name,
)
from localagent.tools.config_toml import TomlSyntax
from localagent.tools.config_yaml import YamlSyntax

SYNTAXES: tuple[ConfigSyntax, ...] = (TomlSyntax(), IniSyntax(), YamlSyntax())
_NAMED = 8  # keys named in a refusal
_CLOSE_ENOUGH = 0.6  # of difflib's ratio: a key this like the one asked for is named as close to it
_ABSENT = ("absent",)
# `[server] port` or `[server].port`: a key named as an INI or TOML file shows its section.
_SECTION_IN_BRACKETS = re.compile(r"^\[(?P<section>[^\]]+)\][ \t]*\.?[ \t]*(?=\S)")


@dataclass(frozen=True)
class KeyEdit:
    text: str  # the file's new text
    report: str  # what the model is told


def with_key_set(text: str, key: str, value: str, shown: str) -> KeyEdit:
    """`text`, the file `shown`, with the value of the key named `key` set to `value`; ToolError,
    saying why in one line, when that cannot be done exactly."""
    syntax = syntax_of(shown)
    wanted = _SECTION_IN_BRACKETS.sub(r"\g<section>.", key.strip())
    if not wanted:
        raise ToolError("key is empty. Give the name of the key to set, as the file has it.")
    new = _without_quotes(value.strip())
    if "\n" in new or "\r" in new:
        raise ToolError("value holds a line break. set_key sets a value of one line.")
    before = _keys(_parsed(syntax, text, shown))
    path = _resolved(wanted, before, shown)
    dotted, old = _dotted(path), before[path]
    if isinstance(old, dict | list):
        what = "a list" if isinstance(old, list) else "an empty section"
        raise ToolError(
            f"{dotted} in {shown} holds {what}, not one value. Nothing was changed. "
            "Change it with replace_in_file."
        )
    place = _place(syntax, text, path, shown)
    old_source = text[place.start : place.end]
    try:
        intended, source = syntax.written(old, old_source, new)
    except WrongKind:
        kind = kind_name(old)
        raise ToolError(
            f"{dotted} in {shown} holds {kind} ({old_source}), and {new!r} is not {kind}. "
            f"Nothing was changed. Give value as {kind}."
        ) from None
    if _tagged(intended) == _tagged(old):
        raise ToolError(f"{dotted} in {shown} is {old_source or 'empty'} already. Nothing was changed.")
    changed = text[: place.start] + _spaced(text, place, source) + text[place.end :]
    _check(syntax, changed, before, path, intended, new, shown)
    line = text.count("\n", 0, place.start) + 1
    now = changed.split("\n")[line - 1].strip()
    return KeyEdit(changed, f"Set {dotted} in {shown}, line {line}: {now} (it was {old_source or 'empty'}).")


def _spaced(text: str, place: Place, source: str) -> str:
    """`source` with a space before it after `key:` or `key =` that has no value yet, and after it
    before a comment on the same line."""
    if place.start < place.end:
        return source
    left, right = text[place.start - 1 : place.start], text[place.end : place.end + 1]
    return f"{'' if left.isspace() else ' '}{source}{'' if right.isspace() or not right else ' '}"


def syntax_of(shown: str) -> ConfigSyntax:
    """The syntax of the file `shown`, by its name's suffix."""
    suffix = PurePosixPath(shown).suffix.lower()
    syntax = next((syntax for syntax in SYNTAXES if suffix in syntax.suffixes), None)
    if syntax is None:
        kinds = "; ".join(f"{syntax.name}: {', '.join(syntax.suffixes)}" for syntax in SYNTAXES)
        raise ToolError(
            f"set_key changes only TOML, INI and YAML files ({kinds}), and {shown} is none of them. "
            "Nothing was changed. Use replace_in_file for it."
        )
    return syntax


def _parsed(syntax: ConfigSyntax, text: str, shown: str) -> dict[str, Any]:
    try:
        data = syntax.parse(text)
    except Unparsable as error:
        raise ToolError(
            f"{shown} is not valid {syntax.name} ({error}), so set_key cannot check an edit of it. "
            "Nothing was changed."
        ) from None
    if not isinstance(data, dict) or not data:
        raise ToolError(f"{shown} has no keys. Nothing was changed.")
    return data


def _keys(data: dict[Any, Any], above: KeyPath = ()) -> dict[KeyPath, Any]:
    """Each key with a value of its own (not a section of keys), by its names from the top."""
    found: dict[KeyPath, Any] = {}
    for name, value in data.items():
        path = (*above, str(name))
        if isinstance(value, dict) and value:
            found.update(_keys(value, path))
        else:
            found[path] = value
    return found


def _resolved(wanted: str, keys: dict[KeyPath, Any], shown: str) -> KeyPath:
    """The one key named `wanted`: by its dotted names, or by its last names when only one key has
    them; in the file's case, or else in any case."""
    for folded in (_as_written, str.casefold):
        target = folded(wanted)
        exact = [path for path in keys if folded(_dotted(path)) == target]
        matching = exact or [path for path in keys if folded(_dotted(path)).endswith(f".{target}")]
        if len(matching) == 1:
            return matching[0]
        if matching:
            named = ", ".join(_dotted(path) for path in matching[:_NAMED])
            raise ToolError(
                f"{len(matching)} keys of {shown} are named {wanted!r}: {named}. Nothing was changed. "
                "Give key as one of them."
            )
    inside = [path for path in keys if _dotted(path).casefold().startswith(f"{wanted.casefold()}.")]
    if inside:
        raise ToolError(
            f"{wanted!r} is a section of {shown}, not a key. Nothing was changed. "
            f"Its keys: {_listed([_dotted(path) for path in inside])}."
        )
    names = [_dotted(path) for path in keys]
    close = sorted(
        (name for name in names if _likeness(wanted, name) >= _CLOSE_ENOUGH),
        key=lambda name: -_likeness(wanted, name),
    )
    found = f"Its keys closest to that: {_listed(close)}" if close else f"Its keys: {_listed(names)}"
    raise ToolError(f"{shown} has no key {wanted!r}. Nothing was changed. {found}.")


def _place(syntax: ConfigSyntax, text: str, path: KeyPath, shown: str) -> Place:
    """Where the key's value is written; ToolError when it is not on one line of its own."""
    dotted = _dotted(path)
    places = [place for place in syntax.places(text) if place.path == path]
    if not places:
        raise ToolError(
            f"set_key cannot find the line of {dotted} in {shown}: a key inside a list or an inline "
            "table has none of its own. Nothing was changed. Use replace_in_file."
        )
    if len(places) > 1:
        lines = ", ".join(str(text.count("\n", 0, place.start) + 1) for place in places)
        raise ToolError(
            f"{dotted} is written on several lines of {shown} ({lines}). Nothing was changed. "
            "Use replace_in_file."
        )
    (place,) = places
    if place.refusal is not None:
        raise ToolError(
            f"set_key cannot change {dotted} in {shown}: {place.refusal}. Nothing was changed. "
            "Use replace_in_file."
        )
    return place


def _check(
    syntax: ConfigSyntax,
    changed: str,
    before: dict[KeyPath, Any],
    path: KeyPath,
    intended: Any,
    new: str,
    shown: str,
) -> None:
    """ToolError unless the changed text parses and differs from the old one in the key alone,
    which now holds `intended`."""
    dotted = _dotted(path)
    try:
        after = syntax.parse(changed)
    except Unparsable as error:
        raise ToolError(
            f"Writing {new!r} as {dotted} would make {shown} invalid {syntax.name} ({error}). "
            "Nothing was changed."
        ) from None
    now = _keys(after) if isinstance(after, dict) else {}
    if _tagged(now.get(path, _ABSENT)) != _tagged(intended):
        raise ToolError(
            f"{new!r} cannot be written as {dotted} in {shown}: {syntax.name} would read it as "
            f"{now.get(path, 'no value')!r}. Nothing was changed."
        )
    others = sorted(
        _dotted(other)
        for other in before.keys() | now.keys()
        if other != path and _tagged(before.get(other, _ABSENT)) != _tagged(now.get(other, _ABSENT))
    )
    if others:
        raise ToolError(
            f"Setting {dotted} in {shown} that way would change {_listed(others)} too. "
            "Nothing was changed. Use replace_in_file."
        )


def _tagged(value: Any) -> Any:
    """A value compared with its type: 1, 1.0 and true are three values, as they are to a parser."""
    if isinstance(value, dict):
        return ("table", tuple(sorted((str(name), _tagged(item)) for name, item in value.items())))
    if isinstance(value, list):
        return ("list", tuple(_tagged(item) for item in value))
    return (type(value).__name__, repr(value))


def _without_quotes(value: str) -> str:
    """The value without the quotes a model often puts around text: the file's own come back."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" and value[0] not in value[1:-1]:
        return value[1:-1]
    return value


def _likeness(wanted: str, name: str) -> float:
    whole = difflib.SequenceMatcher(None, wanted.casefold(), name.casefold()).ratio()
    last = difflib.SequenceMatcher(None, _last(wanted), _last(name)).ratio()
    return max(whole, last)


def _last(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1].casefold()


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    return ", ".join(names[:_NAMED]) + more if names else "none"


def _dotted(path: KeyPath) -> str:
    return ".".join(path)


def _as_written(text: str) -> str:
    return text
