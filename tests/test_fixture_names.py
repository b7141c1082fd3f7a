"""No name from the task suite's fixtures (a person, a product, a code, a file name) appears outside
the suite and the tests that run it: examples in code, docs and other tests come from fixtures of
their own, so nothing in the agent can be fitted to the suite's facts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from localagent.evaluation.tasks import load_suite

ROOT = Path(__file__).resolve().parent.parent
# The suite itself, the tests that run it, and third-party data (tests/external) that predates it.
ALLOWED = {
    "localagent/evaluation/suite",
    "tests/test_task_suite.py",
    "tests/test_eval_tasks.py",
    "tests/test_fixture_names.py",
    "tests/external",
}
CHECKED_SUFFIXES = {".py", ".md", ".toml", ".txt", ".json", ".lark", ".jsonl"}
# File names every project has: they name no fixture in particular.
GENERIC_FILES = {
    "README.md", "__init__.py", "pyproject.toml", "CHANGELOG.md", "LICENSE", "Makefile", "setup.py",
    "setup.cfg", "CONTRIBUTING.md", "conftest.py", "requirements.txt", "config.toml", "notes.md",
    "todo.md", "TODO.md", "index.md", "main.py", "cli.py", "settings.py", "config.yaml", "README",
}  # fmt: skip


# Words of the world, not of a fixture: a calendar, places, languages and headings anyone may write.
WORLD_WORDS = {
    *["January", "February", "March", "April", "May", "June", "July", "August", "September"],
    *["October", "November", "December"],
    *["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    *["Europe", "Asia", "Africa", "America", "Japan", "France", "Germany", "Spain", "Italy"],
    *["English", "French", "German", "Spanish", "Everyday"],
    *["Development", "Decisions", "Automatic", "Finding"],
}


def fixture_names() -> set[str]:
    """Proper names (capitalised words never written in lower case in the fixtures), codes such as
    AB-12, and the file names of every fixture workspace."""
    suite = load_suite()
    texts = [text for workspace in suite.workspaces.values() for text in workspace.files.values()]
    texts += [task.question for task in suite.tasks]
    lower = {word for text in texts for word in re.findall(r"\b[a-z][a-z]+\b", text)}
    names = {
        path.rsplit("/", 1)[-1]
        for workspace in suite.workspaces.values()
        for path in workspace.files
        if path.rsplit("/", 1)[-1] not in GENERIC_FILES and "." in path.rsplit("/", 1)[-1]
    }
    for text in texts:
        names.update(word for word in re.findall(r"\b[A-Z][a-z]{3,}\b", text) if word.lower() not in lower)
        names.update(re.findall(r"\b[A-Z]{1,4}-\d{2,}\b", text))
    return names - _english_words() - WORLD_WORDS


def _english_words() -> set[str]:
    """Capitalised words this project's own code uses in lower case: words, not names."""
    code = " ".join(path.read_text(errors="ignore") for path in (ROOT / "localagent").rglob("*.py"))
    return {word.capitalize() for word in re.findall(r"\b[a-z]{4,}\b", code)}


def checked_files() -> Iterator[Path]:
    for path in ROOT.rglob("*"):
        relative = path.relative_to(ROOT).as_posix()
        parts = path.relative_to(ROOT).parts
        if any(part.startswith(".") or part in ("build", "dist") for part in parts):
            continue
        if any(relative == allowed or relative.startswith(allowed + "/") for allowed in ALLOWED):
            continue
        if path.is_file() and path.suffix in CHECKED_SUFFIXES and "egg-info" not in relative:
            yield path


def test_the_suite_has_names_to_look_for() -> None:
    names = fixture_names()
    assert len(names) >= 50, sorted(names)


def test_no_fixture_name_appears_outside_the_suite() -> None:
    names = fixture_names()
    pattern = re.compile(
        r"(?<![\w.-])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")(?![\w-])"
    )
    found = {}
    for path in checked_files():
        hits = sorted(set(pattern.findall(path.read_text(errors="ignore"))))
        if hits:
            found[path.relative_to(ROOT).as_posix()] = hits
    assert not found, found
