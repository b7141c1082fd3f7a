"""The evidence put before a question: the passages of the files that share most words with it, within
a budget, and the key terms of the question that no file holds at all."""

from __future__ import annotations

import re
from dataclasses import dataclass

from localagent.evidence.index import Hit, WorkspaceIndex
from localagent.evidence.passages import Passage
from localagent.evidence.question import code_terms, key_terms, search_terms

EVIDENCE_CHARS = 1200  # about 350 tokens of passages
PASSAGES_PER_FILE = 3
RELEVANT_SHARE = 0.5  # a passage scoring less than this share of the best one's score is left out
# Which passages come before a question: "named", those that hold what it names; "none", no passages.
PASSAGES = "named"
_CANDIDATES = 40


_ASKS_A_COUNT = re.compile(r"\b(how many|number of|count)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Evidence:
    passages: tuple[Passage, ...]  # best first
    absent: tuple[str, ...]  # key terms of the question no file holds
    # for a question that asks how many: each key term, with the files holding it and their line counts
    counts: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.passages or self.absent or self.counts)


def gather_evidence(index: WorkspaceIndex, task: str, budget: int = EVIDENCE_CHARS) -> Evidence:
    """The passages for a task; for a question (not an instruction, which may name what is new), the
    key terms no file holds instead, when there are any."""
    is_question = "?" in task
    absent = tuple(term for term in key_terms(task) if not index.holds(term)) if is_question else ()
    if absent:
        # The passages would hold the nearest facts, which a small model gives for the one asked.
        return Evidence((), absent)
    hits = _hits(index, task) if PASSAGES == "named" else []
    counts: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    if is_question and _ASKS_A_COUNT.search(task):
        for term in code_terms(task):
            found = index.line_counts(term)
            if found:
                counts.append((term, tuple(found)))
    if counts:
        hits = []  # the count is the answer; passages that hold the word would only be counted by eye
    return Evidence(tuple(_within_budget(hits, budget)), (), tuple(counts))


def _hits(index: WorkspaceIndex, task: str) -> list[Hit]:
    """The passages that hold every key term of the task (a name, a code), or else any of them, ranked
    by all its words; none for a task that names nothing in particular, whose best passages by its
    words alone hold near facts as often as the answer."""
    named = [term for term in key_terms(task) if index.holds(term)]
    if not named:
        return []
    terms = search_terms(task)
    hits = index.search(terms, limit=_CANDIDATES, required=named)
    if not hits and len(named) > 1:
        hits = index.search(named, limit=_CANDIDATES)
    if hits:
        # bm25 scores are negative, the best lowest: keep what scores at least half as well.
        hits = [hit for hit in hits if hit.score <= hits[0].score * RELEVANT_SHARE]
    return hits


def _within_budget(hits: list[Hit], budget: int) -> list[Passage]:
    chosen: list[Passage] = []
    per_file: dict[str, int] = {}
    used = 0
    for hit in hits:
        passage = hit.passage
        size = len(passage.text) + len(passage.path) + len(passage.context) + 8
        if per_file.get(passage.path, 0) >= PASSAGES_PER_FILE or used + size > budget:
            continue
        chosen.append(passage)
        per_file[passage.path] = per_file.get(passage.path, 0) + 1
        used += size
    return _joined(chosen)


def _joined(passages: list[Passage]) -> list[Passage]:
    """Passages of one file that touch, as one, at the place of the better one."""
    joined: list[Passage] = []
    for passage in passages:
        for at, earlier in enumerate(joined):
            if earlier.path == passage.path and _touch(earlier, passage):
                joined[at] = _union(earlier, passage)
                break
        else:
            joined.append(passage)
    return joined


def _touch(a: Passage, b: Passage) -> bool:
    return a.first_line <= b.last_line + 1 and b.first_line <= a.last_line + 1


def _union(a: Passage, b: Passage) -> Passage:
    first, second = (a, b) if a.first_line <= b.first_line else (b, a)
    return Passage(
        first.path,
        first.first_line,
        max(a.last_line, b.last_line),
        first.context,
        f"{first.text}\n{second.text}",
    )
