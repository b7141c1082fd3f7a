"""Edits of Markdown lists as people ask for them: tick a box, add an item at the end of a list.

Each finds its one line by the item's words (and a heading's), and refuses, with one line saying
why and the file left as it was, whatever it cannot do exactly: no such item, several, a box
ticked already, an item there already.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from localagent.tools.base import ToolError

_ITEM = re.compile(
    r"^(?P<indent>[ \t]*)(?P<marker>[-*+]|\d{1,9}[.)])[ \t]+(?P<box>\[[ xX]\][ \t]+)?(?P<text>.*)$"
)
_HEADING = re.compile(r"^(?P<hashes>#{1,6})[ \t]+(?P<title>.*?)[ \t#]*$")
_SEARCH_PLACE = re.compile(r"^[^\s:]+:\d+:\s*")
_SEARCH_SECTION = re.compile(r"\s+\(under '[^']*'\)$")
_LISTED = 8  # items or headings named in a refusal


@dataclass(frozen=True)
class ListEdit:
    text: str  # the file's new text
    report: str  # what the model is told


@dataclass(frozen=True)
class _Item:
    index: int  # of the line, from 0
    indent: str
    marker: str
    box: str  # "[ ] ", "[x] " or "" (no box)
    text: str


def ticked(text: str, item: str, shown: str) -> ListEdit:
    """`text` with the one open box whose item holds `item` ticked."""
    wanted = _folded(_without_marker(item))
    if not wanted:
        raise ToolError("item is empty. Give words of the item to tick, as the list has them.")
    lines = text.splitlines(keepends=True)
    items = [found for found in _items(lines, 0, len(lines)) if found.box]
    holding = [found for found in items if wanted in _folded(found.text)]
    open_boxes = [found for found in holding if found.box.startswith("[ ]")]
    if len(open_boxes) > 1:
        numbers = ", ".join(str(found.index + 1) for found in open_boxes[:_LISTED])
        raise ToolError(
            f"{len(open_boxes)} open boxes of {shown} hold {item!r} (lines {numbers}). Nothing was changed. "
            "Give more of the item's words, so that they name one."
        )
    if not open_boxes:
        if holding:
            line = holding[0].index + 1
            raise ToolError(
                f"The box of {item!r} at line {line} of {shown} is ticked already. Nothing was changed."
            )
        unticked = [
            f"line {found.index + 1}: {found.text.strip()}" for found in items if found.box.startswith("[ ]")
        ]
        listed = "; ".join(unticked[:_LISTED]) if unticked else "none"
        raise ToolError(
            f"No open box of {shown} holds {item!r}. Nothing was changed. Its open boxes: {listed}."
        )
    (target,) = open_boxes
    lines[target.index] = _with_box_ticked(lines[target.index], target)
    return ListEdit(
        "".join(lines), f"Ticked line {target.index + 1} of {shown}: {lines[target.index].strip()}"
    )


def the_open_box(text: str, words: str) -> tuple[int, str, str] | None:
    """The line number, the line and the line ticked, of the one open box whose item holds `words`."""
    wanted = _folded(_without_marker(words))
    lines = text.splitlines()
    holding = [
        found
        for found in _items(lines, 0, len(lines))
        if found.box.startswith("[ ]") and wanted and wanted in _folded(found.text)
    ]
    if len(holding) != 1:
        return None
    (target,) = holding
    line = lines[target.index].rstrip()
    return target.index + 1, line, _with_box_ticked(line, target)


def _with_box_ticked(line: str, item: _Item) -> str:
    at = line.index("[", len(item.indent) + len(item.marker))
    return f"{line[:at]}[x]{line[at + 3 :]}"


def with_item_added(text: str, item: str, section: str, shown: str) -> ListEdit:
    """`text` with `item` after the last item of a list under the heading holding `section` (or of
    the whole file): its last list with an open box, or else its last list; in that list's marker."""
    new_text = _without_marker(item).strip()
    if not new_text:
        raise ToolError("item is empty. Give the text of the item to add.")
    if "\n" in new_text:
        raise ToolError("item holds a line break. Add one item at a time, each on one line.")
    lines = text.splitlines(keepends=True)
    start, end, where = _section(lines, section, shown) if section.strip() else (0, len(lines), "")
    items = _items(lines, start, end)
    if not items:
        raise ToolError(
            f"{shown} has no list{where}. Nothing was changed. To add text at the end of the file, use "
            "replace_in_file with old ''."
        )
    same = next((found for found in items if _folded(found.text) == _folded(new_text)), None)
    if same is not None:
        raise ToolError(
            f"The list{where} already has {new_text!r}, at line {same.index + 1} of {shown}. "
            "Nothing was changed."
        )
    items = _target_list(lines, items)
    outer = min(len(found.indent) for found in items)
    model = [found for found in items if len(found.indent) == outer][-1]
    box = "[ ] " if model.box else ""
    line = f"{model.indent}{_next_marker(model.marker)} {box}{new_text}"
    after = items[-1].index
    while after + 1 < len(lines) and lines[after + 1][:1] in (" ", "\t") and lines[after + 1].strip():
        after += 1  # the last item's own lines, indented below it
    if not lines[after].endswith(("\n", "\r")):
        lines[after] += "\n"
        newline = ""
    else:
        newline = "\r\n" if lines[after].endswith("\r\n") else "\n"
    lines.insert(after + 1, line + newline)
    return ListEdit("".join(lines), f"Added line {after + 2} of {shown}: {line}")


def _items(lines: list[str], start: int, end: int) -> list[_Item]:
    found = []
    for index in range(start, end):
        match = _ITEM.match(lines[index].rstrip("\r\n"))
        if match:
            box = match["box"] or ""
            normal_box = f"[{'x' if box[1:2] in ('x', 'X') else ' '}] " if box else ""
            found.append(_Item(index, match["indent"], match["marker"], normal_box, match["text"]))
    return found


def _target_list(lines: list[str], items: list[_Item]) -> list[_Item]:
    """The last list with an open box, or else the last list: a new item is still to do, so it does
    not join a list of done ones below the open ones."""
    lists: list[list[_Item]] = [[items[0]]]
    for previous, item in itertools.pairwise(items):
        between = lines[previous.index + 1 : item.index]
        if all(not line.strip() or line[:1] in (" ", "\t") for line in between):
            lists[-1].append(item)
        else:
            lists.append([item])
    with_open_box = [found for found in lists if any(item.box.startswith("[ ]") for item in found)]
    return (with_open_box or lists)[-1]


def _section(lines: list[str], section: str, shown: str) -> tuple[int, int, str]:
    """The lines under the heading that holds `section`, up to the next heading of its level or above."""
    wanted = _folded(section.lstrip("#"))
    headings = []
    for index, line in enumerate(lines):
        match = _HEADING.match(line.rstrip("\r\n"))
        if match:
            headings.append((index, len(match["hashes"]), match["title"]))
    holding = [heading for heading in headings if wanted in _folded(heading[2])]
    exact = [heading for heading in holding if _folded(heading[2]) == wanted]
    chosen = exact if len(exact) == 1 else holding
    if len(chosen) != 1:
        titles = "; ".join(f"line {index + 1}: {title}" for index, _, title in (chosen or headings)[:_LISTED])
        problem = (
            f"{len(chosen)} headings of {shown} hold {section!r}"
            if chosen
            else f"No heading of {shown} holds {section!r}"
        )
        raise ToolError(f"{problem}. Nothing was changed. Its headings: {titles or 'none'}.")
    index, level, title = chosen[0]
    end = next((later for later, depth, _ in headings if later > index and depth <= level), len(lines))
    return index + 1, end, f" under '{title}'"


def _next_marker(marker: str) -> str:
    if marker[0].isdigit():
        return f"{int(marker[:-1]) + 1}{marker[-1]}"
    return marker


def _without_marker(item: str) -> str:
    """The item's words. A model often writes the marker and box too ("- [ ] Buy milk"), or copies
    the line as search_text showed it, with its place and section ("chores.md:3: … (under '## Weekend')")."""
    copied = _SEARCH_PLACE.sub("", _SEARCH_SECTION.sub("", item.strip()))
    match = _ITEM.match(copied)
    return match["text"] if match else copied


def _folded(text: str) -> str:
    return " ".join(text.replace("`", "").casefold().split())
