"""The documentation holds together: every relative link in README.md, CHANGELOG.md and docs/*.md
reaches a file that exists, and a heading that exists when it names one (`file.md#anchor`, with
GitHub's anchors); and README.md stays a front door of at most 250 lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
README_MAX_LINES = 250

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# [text](target) and ![alt](target), with an optional "title"; the text may run over a line break.
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(text: str) -> str:
    """The text outside fenced code blocks, with the lines inside them left empty."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return "\n".join(lines)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lowercased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(document: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose(document.read_text(encoding="utf-8")).splitlines():
        heading = HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading[1])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(document: Path) -> list[str]:
    text = INLINE_CODE.sub("", prose(document.read_text(encoding="utf-8")))
    return [*INLINE_LINK.findall(text), *REFERENCE_DEFINITION.findall(text)]


def test_the_slugs_are_githubs() -> None:
    assert slug("What the workspace sandbox and approval guard against") == (
        "what-the-workspace-sandbox-and-approval-guard-against"
    )
    assert slug("`localagent models list|pull|path|verify`") == "localagent-models-listpullpathverify"
    assert slug("Scripted models: `--model script:FILE.json`") == "scripted-models---model-scriptfilejson"
    assert slug("The split: tune on dev, judge on held_out") == "the-split-tune-on-dev-judge-on-held_out"


def test_there_are_documents_and_links_to_check() -> None:
    assert (ROOT / "docs").is_dir() and len(DOCUMENTS) > 3
    assert links(ROOT / "README.md"), "README.md links into docs/"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for target in links(document):
        if SCHEME.match(target):
            continue  # http:, https:, mailto: ...
        path_part, _, anchor = target.partition("#")
        if path_part.startswith("/"):
            broken.append(f"{target}: use a path relative to {document.name}")
            continue
        linked = (document.parent / path_part).resolve() if path_part else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor:
            if linked.suffix != ".md":
                broken.append(f"{target}: an anchor into a file that is not Markdown")
            elif anchor not in anchors(linked):
                broken.append(f"{target}: {linked.relative_to(ROOT)} has no heading #{anchor}")
    assert not broken, f"{document.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_readme_is_a_front_door_of_at_most_250_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; move detail into docs/ (at most {README_MAX_LINES})"
    )
