"""Judging one task's run: its final answer and the files it left behind.

Answer patterns match case-insensitively as whole words: no letter, digit or _ may touch a match on
either side, so `def` does not match inside `define`, nor `bins.py` inside `test_bins.py`.
Numbers are read as people write them: `1,234`, `21.0`, `-3`, `57.1%`, `four`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from localagent.evaluation.tasks import Task

Snapshot = Mapping[str, bytes]  # relative path -> content, every file of a workspace

# How a right answer to an `impossible` task says the file or fact is not there.
NOT_FOUND = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bnot\s+(?:be\s+)?(?:found|present|listed|mentioned|defined|specified|set|included|available|provided|"
        r"exist|there|in|stated|given|recorded|known)\b",
        r"\b(?:does|do|did|is|are|was|were)(?:\s+not|n't)\s+(?:exist|appear|contain|have|include|list|"
        r"mention|define|specify|say|show|cover|hold|set|state|give)\b",
        r"\b(?:can\s*not|can't|could\s*not|couldn't|unable\s+to|did\s+not|didn't)\s+(?:find|locate|see|"
        r"determine|tell|say|answer|give)\b",
        r"\bthere(?:\s+is|\s+are|\s+was|\s+were|'s)\s+no\b",
        r"\bno\s+(?:such|file|files|entry|entries|record|records|mention|information|data|value|setting|"
        r"key|variable|service|match|matches|definition|section|order|orders|result|results|details?|"
        r"rule|policy|product|item|contact)\b",
        r"\b(?:missing|absent|nonexistent|non-existent|nowhere)\b",
        r"\bnothing\s+(?:about|on|in|for|found|matches|mentions)\b",
        r"\bno\s+(?:[\w-]+\s+){1,8}?(?:was\s+|were\s+|is\s+|are\s+)?found\b",  # "No member with id M-7 found"
    )
)

_NUMBER = re.compile(
    r"(?P<sign>(?<!\w)[-−])?(?<![\w.])"  # a sign only when it starts a word; never inside a word
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?P<fraction>\.\d+)?"
    r"(?!\.\d)"  # 0.7.3 is a version, not a number
)
_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
_NUMBER_WORDS = {word: value for value, word in enumerate(_WORDS.split())}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    success: bool
    problems: tuple[str, ...]


def whole_word(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w)(?:{pattern})(?!\w)", flags)


def numbers_in(text: str) -> list[float]:
    found = [
        float(f"{'-' if match['sign'] else ''}{match['digits'].replace(',', '')}{match['fraction'] or ''}")
        for match in _NUMBER.finditer(text)
    ]
    found.extend(float(_NUMBER_WORDS[word.lower()]) for word in _NUMBER_WORD.findall(text))
    return found


def says_not_found(answer: str) -> bool:
    return any(pattern.search(answer) for pattern in NOT_FOUND)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file below root (hidden ones too), by its path relative to root with '/'."""
    files: dict[str, bytes] = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def check_run(task: Task, status: str, answer: str, before: Snapshot, after: Snapshot) -> Verdict:
    problems: list[str] = []
    if status != "final":
        problems.append(f"the run ended with status {status}, not a final answer")
    else:
        problems.extend(answer_problems(task, answer))
    problems.extend(file_problems(task, before, after))
    return Verdict(not problems, tuple(problems))


def answer_problems(task: Task, answer: str) -> list[str]:
    problems = [
        f"the answer does not match /{pattern}/"
        for pattern in task.answer
        if not whole_word(pattern).search(answer)
    ]
    problems.extend(
        f"the answer matches /{pattern}/, which a right answer must not"
        for pattern in task.reject
        if whole_word(pattern).search(answer)
    )
    if task.number is not None and not any(
        abs(value - task.number) <= task.tolerance + 1e-9 for value in numbers_in(answer)
    ):
        within = f" (±{task.tolerance:g})" if task.tolerance else ""
        problems.append(f"the answer holds no number equal to {task.number:g}{within}")
    if task.category == "impossible" and not says_not_found(answer):
        problems.append("the answer does not say that the file or fact does not exist")
    return problems


def file_problems(task: Task, before: Snapshot, after: Snapshot) -> list[str]:
    problems: list[str] = []
    for path, expected in task.files.items():
        text = _text(after.get(path))
        if text is None:
            problems.append(f"{path} does not exist after the run")
        elif text.rstrip("\n") != expected.rstrip("\n"):
            problems.append(f"{path} does not hold the expected content")
    for path, patterns in task.files_match.items():
        text = _text(after.get(path))
        if text is None:
            problems.append(f"{path} does not exist after the run")
            continue
        problems.extend(
            f"{path} does not match /{pattern}/"
            for pattern in patterns
            if not re.search(pattern, text, re.MULTILINE)
        )
    checked = set(task.files) | set(task.files_match)
    problems.extend(
        f"{path} was {_change(before.get(path), after.get(path))}, but the task does not touch it"
        for path in sorted(_all_paths(before, after) - checked)
        if before.get(path) != after.get(path)
    )
    return problems


def _all_paths(*snapshots: Snapshot) -> set[str]:
    return {path for files in snapshots for path in files}


def _change(old: bytes | None, new: bytes | None) -> str:
    if old is None:
        return "created"
    return "deleted" if new is None else "changed"


def _text(content: bytes | None) -> str | None:
    return None if content is None else content.decode("utf-8", errors="replace")
