"""The task suite of `localagent eval tasks`: fixture workspaces and the tasks asked about them.

The suite ships with the package as the TOML files of `suite/` (the header of `small_folders.toml`
explains the format), read in name order and merged, and is validated here, so a broken task is an
error at load time, not a silently wrong score. A workspace given as `directory = "NAME"` is the
folder `suite/workspaces/NAME/`, for fixtures with files too long to write inline.

Every task belongs to one split, fixed by a hash of its id: `dev` (about 60%), to tune prompts,
tools and defaults on, and `held_out` (about 40%), to judge whether a change carries.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from collections.abc import Iterator, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from localagent.errors import LocalagentError

Category = Literal["read", "search", "list", "compute", "edit", "multi", "no_tool", "impossible"]
CATEGORIES: tuple[str, ...] = get_args(Category)
# Categories whose tasks may change files; every other task must leave every file as it was.
EDITING_CATEGORIES = frozenset({"edit", "multi"})
Split = Literal["dev", "held_out"]
SPLITS: tuple[str, ...] = get_args(Split)
SUITE_FOLDER = "suite"
HELD_OUT_PERCENT = 40


def split_of(task_id: str) -> Split:
    """The split a task id falls in, by a hash of the id alone: adding or editing tasks moves none."""
    bucket = int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % 100
    return "held_out" if bucket < HELD_OUT_PERCENT else "dev"


class SuiteError(LocalagentError):
    """A suite file that cannot be read or does not validate, or a selection that matches no task."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _relative_path(path: str) -> str:
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or "\\" in path or ".." in parts or path != str(PurePosixPath(path)):
        raise ValueError(f"{path!r} is not a plain relative path like 'dir/file.txt'")
    return path


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as error:
        raise ValueError(f"invalid regular expression {pattern!r}: {error}") from None
    return pattern


RelativePath = Annotated[str, AfterValidator(_relative_path)]
Pattern = Annotated[str, AfterValidator(_compiles)]


class FixtureWorkspace(_Strict):
    description: str
    files: dict[RelativePath, str] = Field(min_length=1)

    def write_to(self, root: Path) -> None:
        for path, text in self.files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


class Task(_Strict):
    id: str = Field(pattern=r"^[a-z_]+(-[a-z0-9_]+)+$")
    category: Category
    workspace: str
    question: str = Field(min_length=1)
    tools: str = "default"
    answer: list[Pattern] = Field(default_factory=list)
    reject: list[Pattern] = Field(default_factory=list)
    number: float | None = None
    tolerance: float = Field(0.0, ge=0)
    files: dict[RelativePath, str] = Field(default_factory=dict)
    files_match: dict[RelativePath, Annotated[list[Pattern], Field(min_length=1)]] = Field(
        default_factory=dict
    )
    solution: list[str] = Field(min_length=1)
    wrong: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _checks_fit_the_category(self) -> Task:
        if self.changes_files and self.category not in EDITING_CATEGORIES:
            raise ValueError(f"a {self.category} task cannot expect file changes")
        if set(self.files) & set(self.files_match):
            raise ValueError("a file is checked both by files and files_match")
        if self.category == "edit" and not self.changes_files:
            raise ValueError("an edit task needs files or files_match")
        answer_checks = bool(self.answer) or self.number is not None
        if self.category == "impossible" and answer_checks:
            raise ValueError("an impossible task has no answer or number; list invented values in reject")
        if self.category != "impossible" and not answer_checks and not self.changes_files:
            raise ValueError("the task checks nothing: give answer, number, files or files_match")
        return self

    @property
    def changes_files(self) -> bool:
        return bool(self.files or self.files_match)

    @property
    def split(self) -> Split:
        return split_of(self.id)


class Suite(_Strict):
    workspaces: dict[str, FixtureWorkspace]
    tasks: list[Task] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Suite:
        seen: set[str] = set()
        for task in self.tasks:
            if task.id in seen:
                raise ValueError(f"task id {task.id!r} is used twice")
            seen.add(task.id)
            if task.workspace not in self.workspaces:
                raise ValueError(f"task {task.id!r}: unknown workspace {task.workspace!r}")
        return self

    def select(
        self,
        categories: Sequence[str] = (),
        patterns: Sequence[str] = (),
        limit: int | None = None,
        splits: Sequence[str] = (),
        workspaces: Sequence[str] = (),
    ) -> list[Task]:
        """Tasks in suite order that are in one of `categories`, `splits` and `workspaces` and match
        one of `patterns` (ids or globs); an empty filter keeps everything. An unknown name or a
        pattern matching nothing raises SuiteError."""
        for kind, names, known in (
            ("category", categories, CATEGORIES),
            ("split", splits, SPLITS),
            ("workspace", workspaces, tuple(self.workspaces)),
        ):
            unknown = [name for name in names if name not in known]
            if unknown:
                raise SuiteError(f"unknown {kind} {unknown[0]!r}; choose from {', '.join(known)}")
        for pattern in patterns:
            if not any(fnmatch.fnmatchcase(task.id, pattern) for task in self.tasks):
                raise SuiteError(f"no task matches {pattern!r}; task ids look like {self.tasks[0].id!r}")
        chosen = [
            task
            for task in self.tasks
            if (not categories or task.category in categories)
            and (not splits or task.split in splits)
            and (not workspaces or task.workspace in workspaces)
            and (not patterns or any(fnmatch.fnmatchcase(task.id, p) for p in patterns))
        ]
        if not chosen:
            raise SuiteError("no task is in the chosen categories, splits and workspaces and matches them")
        return chosen[:limit] if limit else chosen


def load_suite(text: str | None = None) -> Suite:
    """The suite shipped with the package, or one given as TOML text."""
    if text is not None:
        return _validated(_parsed(text, "the suite"), "the suite")
    folder = resources.files("localagent.evaluation").joinpath(SUITE_FOLDER)
    merged: dict[str, Any] = {"workspaces": {}, "tasks": []}
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".toml")), key=lambda f: f.name)
    for file in files:
        data = _parsed(file.read_text(encoding="utf-8"), file.name)
        for name, workspace in data.get("workspaces", {}).items():
            if name in merged["workspaces"]:
                raise SuiteError(f"{file.name}: workspace {name!r} is defined twice")
            merged["workspaces"][name] = _inline_directory(workspace, folder, file.name)
        merged["tasks"].extend(data.get("tasks", []))
    return _validated(merged, "the suite")


def _parsed(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(f"{source} is not valid TOML: {error}") from None


def _validated(data: dict[str, Any], source: str) -> Suite:
    try:
        return Suite.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise SuiteError(f"{source}: {_where(data, first['loc'])}: {first['msg']}") from None


def _inline_directory(workspace: Any, folder: Traversable, source: str) -> Any:
    """A workspace given as `directory = NAME`, with the files of `workspaces/NAME/` read in."""
    if not isinstance(workspace, dict) or "directory" not in workspace:
        return workspace
    name = workspace["directory"]
    root = folder.joinpath("workspaces", name)
    if not root.is_dir():
        raise SuiteError(f"{source}: no folder workspaces/{name} for the workspace's directory")
    rest = {key: value for key, value in workspace.items() if key != "directory"}
    return rest | {"files": dict(_files_below(root, ""))}


def _files_below(root: Traversable, prefix: str) -> Iterator[tuple[str, str]]:
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name == "__pycache__":
            continue
        path = f"{prefix}{entry.name}"
        if entry.is_dir():
            yield from _files_below(entry, f"{path}/")
        else:
            yield path, entry.read_text(encoding="utf-8")


def _where(data: dict[str, Any], location: tuple[int | str, ...]) -> str:
    """A validation error's location, naming a task by its id rather than its position."""
    parts = [str(part) for part in location]
    if len(location) > 1 and location[0] == "tasks" and isinstance(location[1], int):
        tasks = data.get("tasks") or []
        task = tasks[location[1]] if location[1] < len(tasks) else {}
        if isinstance(task, dict) and isinstance(task.get("id"), str):
            parts[:2] = [f"task {task['id']!r}"]
    return ".".join(parts) or "suite"
