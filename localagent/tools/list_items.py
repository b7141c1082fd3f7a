"""Edits of Markdown lists as people ask for them: tick a box, add an item to a list or a section.

Each finds its one line by the item's words (and a heading's), and refuses, with one line saying
why and the file left as it was, whatever it cannot do exactly: no such item, several, a box
ticked already, an item there already. Lines inside fenced code blocks are neither items nor
headings: a shell snippet's `# install` is no heading, and a `- [ ]` in an example is no task.
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
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_BOX = re.compile(r"^\[[ xX]\][ \t]+")
_SEARCH_PLACE = re.compile(r"^[^\s:]+:\d+:\s*")
_SEARCH_SECTION = re.compile(r"\s+\(under '[^']*'\)$")
_EDGE_PUNCTUATION = " .,;:!?"
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


@dataclass(frozen=True)
class _Heading:
    index: int
    level: int
    title: str


@dataclass(frozen=True)
class _Outline:
    """The list items and headings of a Markdown text, outside its fenced code blocks."""

    items: list[_Item]
    headings: list[_Heading]

    def items_between(self, start: int, end: int) -> list[_Item]:
        return [found for found in self.items if start <= found.index < end]


def ticked(text: str, item: str, shown: str) -> ListEdit:
    """`text` with the one open box whose item holds `item` ticked."""
    wanted = _folded(_without_marker(item))
    if not wanted:
        raise ToolError("item is empty. Give words of the item to tick, as the list has them.")
    lines = text.splitlines(keepends=True)
    items = [found for found in _outline(lines).items if found.box]
    holding = [found for found in items if wanted in _folded(found.text)]
    open_boxes = _exact_or_all([found for found in holding if found.box.startswith("[ ]")], wanted)
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
        for found in _outline(lines).items
        if found.box.startswith("[ ]") and wanted and wanted in _folded(found.text)
    ]
    if len(holding) != 1:
        return None
    (target,) = holding
    line = lines[target.index].rstrip()
    return target.index + 1, line, _with_box_ticked(line, target)


def _exact_or_all(items: list[_Item], wanted: str) -> list[_Item]:
    """The one item whose words are exactly `wanted`, when several hold them: "Feed the hens" names
    that item, not "Feed the hens and the goats" too."""
    exact = [found for found in items if _folded(found.text) == wanted]
    return exact if len(items) > 1 and len(exact) == 1 else items


def _with_box_ticked(line: str, item: _Item) -> str:
    at = line.index("[", len(item.indent) + len(item.marker))
    return f"{line[:at]}[x]{line[at + 3 :]}"


def with_item_added(text: str, item: str, section: str, shown: str) -> ListEdit:
    """`text` with `item` after the last item of a list under the heading holding `section` (or of
    the whole file): its last list with an open box, or else its last list; in that list's marker.
    A section with no list yet gets one at its end, in the marker of the file's nearest list."""
    new_text = _without_marker(item).strip()
    if not new_text:
        raise ToolError("item is empty. Give the text of the item to add.")
    if "\n" in new_text or "\r" in new_text:
        raise ToolError("item holds a line break. Add one item at a time, each on one line.")
    lines = text.splitlines(keepends=True)
    outline = _outline(lines)
    heading = _section(outline, section, shown) if section.strip() else None
    start, end = (
        (0, len(lines))
        if heading is None
        else (heading.index + 1, _section_end(outline, heading, len(lines)))
    )
    where = "" if heading is None else f" under '{heading.title}'"
    items = outline.items_between(start, end)
    if not items and heading is not None:
        return _with_new_list(lines, outline, heading, end, new_text, shown)
    if not items:
        raise ToolError(
            f"{shown} has no list{where}. Nothing was changed. Name the heading to add it under as "
            "section, or, to add text at the end of the file, use replace_in_file with old ''."
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
    newline = _ending_for_next(lines, after)
    lines.insert(after + 1, line + newline)
    return ListEdit("".join(lines), f"Added line {after + 2} of {shown}: {line}")


def _with_new_list(
    lines: list[str], outline: _Outline, heading: _Heading, end: int, new_text: str, shown: str
) -> ListEdit:
    """A one-item list at the end of the section under `heading`, after a blank line."""
    before = [found for found in outline.items if found.index < heading.index]
    after = [found for found in outline.items if found.index >= end]
    nearest = before[-1] if before else after[0] if after else None
    marker = "-" if nearest is None else _first_marker(nearest.marker)
    box = "[ ] " if nearest is not None and nearest.box else ""
    line = f"{marker} {box}{new_text}"
    last = max(index for index in range(heading.index, end) if lines[index].strip())
    newline = _ending_for_next(lines, last)
    added = ["\n" if newline == "" else newline, line + newline]
    if last + 1 < len(lines) and lines[last + 1].strip():
        added.append(newline)  # a blank line before the heading that follows at once
    lines[last + 1 : last + 1] = added
    return ListEdit(
        "".join(lines), f"Added line {last + 3} of {shown}, a new list under '{heading.title}': {line}"
    )


def _ending_for_next(lines: list[str], index: int) -> str:
    """The line ending for a line put after `lines[index]`, which gets one if the file ended there
    without it; the new line then ends as the file did, without one."""
    if not lines[index].endswith(("\n", "\r")):
        lines[index] += "\n"
        return ""
    return "\r\n" if lines[index].endswith("\r\n") else "\n"


def _outline(lines: list[str]) -> _Outline:
    items: list[_Item] = []
    headings: list[_Heading] = []
    fence = ""  # the open code fence, "" outside one
    for index, raw in enumerate(lines):
        line = raw.rstrip("\r\n")
        opening = _FENCE.match(line)
        if fence:
            if opening and opening["fence"][0] == fence[0] and len(opening["fence"]) >= len(fence):
                fence = "" if not line.strip()[len(opening["fence"]) :].strip() else fence
            continue
        if opening:
            fence = opening["fence"]
            continue
        if heading := _HEADING.match(line):
            headings.append(_Heading(index, len(heading["hashes"]), heading["title"]))
        elif item := _ITEM.match(line):
            box = item["box"] or ""
            normal_box = f"[{'x' if box[1:2] in ('x', 'X') else ' '}] " if box else ""
            items.append(_Item(index, item["indent"], item["marker"], normal_box, item["text"]))
    return _Outline(items, headings)


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


def _section(outline: _Outline, section: str, shown: str) -> _Heading:
    """The one heading that holds `section` (or is it exactly, when several hold it)."""
    wanted = _folded(section.lstrip("#"))
    holding = [heading for heading in outline.headings if wanted in _folded(heading.title)]
    exact = [heading for heading in holding if _folded(heading.title) == wanted]
    chosen = exact if len(exact) == 1 else holding
    if len(chosen) == 1:
        return chosen[0]
    titles = "; ".join(
        f"line {heading.index + 1}: {heading.title}" for heading in (chosen or outline.headings)[:_LISTED]
    )
    problem = (
        f"{len(chosen)} headings of {shown} hold {section!r}"
        if chosen
        else f"No heading of {shown} holds {section!r}"
    )
    raise ToolError(f"{problem}. Nothing was changed. Its headings: {titles or 'none'}.")


def _section_end(outline: _Outline, heading: _Heading, line_count: int) -> int:
    """The index of the next heading of `heading`'s level or above: its subsections are its own."""
    return next(
        (
            found.index
            for found in outline.headings
            if found.index > heading.index and found.level <= heading.level
        ),
        line_count,
    )


def _next_marker(marker: str) -> str:
    if marker[0].isdigit():
        return f"{int(marker[:-1]) + 1}{marker[-1]}"
    return marker


def _first_marker(marker: str) -> str:
    return f"1{marker[-1]}" if marker[0].isdigit() else marker


def _without_marker(item: str) -> str:
    """The item's words. A model often writes the marker and box too ("- [ ] Buy milk"), or copies
    the line as search_text showed it, with its place and section ("chores.md:3: … (under '## Weekend')")."""
    copied = _SEARCH_PLACE.sub("", _SEARCH_SECTION.sub("", item.strip()))
    match = _ITEM.match(copied)
    return _BOX.sub("", match["text"] if match else copied)


def _folded(text: str) -> str:
    """Text as compared: any case, any spacing, no code or emphasis marks, no end punctuation."""
    return " ".join(text.replace("`", "").replace("*", "").casefold().split()).strip(_EDGE_PUNCTUATION)
