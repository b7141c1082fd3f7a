"""Built-in file tools: list, read and search files in the workspace, write and edit them.

Each method's docstring (first paragraph) is the description the model sees, and its annotated
parameters are the JSON schema, so both are written for a small model: short and literal.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import regex
from pydantic import Field

from localagent.core.cancel import CancelToken
from localagent.tools import config_keys, list_items
from localagent.tools.base import InvalidArguments, Tool, ToolError
from localagent.tools.edit_refusals import ambiguous_old_refusal, existing_file_refusal
from localagent.tools.found_lines import (
    SEARCH_FILE_BYTES_LIMIT,
    SEARCH_MATCH_LIMIT,
    SECTION_NOTE,
    FoundLine,
    Search,
)
from localagent.tools.quote_blind import replace_ignoring_quotes
from localagent.tools.walk import VCS_DIRS, WorkspaceWalk, workspace_paths
from localagent.tools.workspace import Workspace

LIST_LIMIT = 200  # entries shown by list_dir
READ_CHAR_LIMIT = 8000  # characters of numbered lines returned by one read_file call
LINE_CHAR_LIMIT = 1000  # a longer line is cut: read_file shows and search_text searches only its start
PATH_CHOICES_LIMIT = 300  # a bigger workspace's paths are not listed in the grammar
SEARCH_REGEX_SECONDS = 2.0  # CPU time one line may take: a pattern that backtracks without end is stopped
BINARY_SNIFF_BYTES = 8192
SMALL_FILE_BYTES = 2048  # a file searched in vain is shown whole when it is this small
REPEAT_FILES_SHOWN = 3  # a repeated search shows at most this many small files whole
PREVIEW_READ_BYTES = 2048  # how far into a file the listing looks for its first telling line
PREVIEW_CHARS = 70
# A match in a Markdown file is shown with the heading it falls under: in a changelog or a handbook
# the heading ("## 0.7.0", "# Expenses") is often the answer.
MARKDOWN_SUFFIXES = (".md", ".markdown")
SECTION_CHARS = 60
SECTIONS_OPENED = 3  # the first headings that match a search show the first lines of their sections...
SECTION_LINES_SHOWN = 8  # ...this many of them


DirPath = Annotated[str, Field(description="Directory path relative to the workspace root; '.' is the root")]
FilePath = Annotated[str, Field(description="File path relative to the workspace root")]
StartLine = Annotated[int, Field(ge=1, description="First line to read; only to read on in a long file")]
Pattern = Annotated[str, Field(description="Text to find; case does not matter")]
SearchPath = Annotated[
    str, Field(description="File or directory to search, relative to the workspace root; '.' is everything")
]
IsRegex = Annotated[
    bool,
    Field(
        description="true: pattern is a Python regular expression (case-sensitive only when it has a "
        "capital letter); false: plain text"
    ),
]
Content = Annotated[str, Field(description="The content of the new file")]
OldText = Annotated[
    str,
    Field(description="The exact text to replace, copied from the file without line numbers; '' to append"),
]
NewText = Annotated[str, Field(description="The text to put in its place")]
ItemWords = Annotated[str, Field(description="Words of the item to tick, as the list has them")]
NewItem = Annotated[str, Field(description="The item's text, on one line, without its marker")]
Section = Annotated[
    str, Field(description="Words of the heading the list is under; '' for the file's last list")
]
ConfigKey = Annotated[
    str, Field(description="The key's name as the file has it; section.key for a key in a section or table")
]
ConfigValue = Annotated[str, Field(description="The new value as plain text, without quotes")]
ReplaceAll = Annotated[
    bool, Field(description="true: replace every place old appears; false: old must appear once")
]


class FileTools:
    """The file tools of one workspace; `tools()` turns them into Tool objects."""

    def __init__(self, workspace: Workspace, narrow_paths: bool = False) -> None:
        """With `narrow_paths` the grammar lets a model name only paths that exist, where a tool
        reads one; a small model otherwise guesses paths."""
        self.workspace = workspace
        self.narrow_paths = narrow_paths
        # The files each search found lines in, for the search made again (files_of_search).
        self._matched_files: dict[tuple[str, str, bool], list[str]] = {}
        # Files whose lines the model has been shown, or has written, with their version then: only
        # those may be edited, and only while unchanged on disk, so that what it replaces is copied
        # from the file as it is, not guessed or remembered from before someone else changed it.
        self._seen: dict[str, FileVersion | None] = {}

    def tools(self) -> list[Tool]:
        tools = [
            Tool.from_function(self.list_dir),
            Tool.from_function(self.read_file),
            replace(Tool.from_function(self.search_text), on_repeat=self.files_of_search),
            replace(Tool.from_function(self.write_file, changes_files=True), dry_run=self._check_write),
            replace(
                Tool.from_function(self.replace_in_file, changes_files=True, check=self._check_edit),
                dry_run=self._check_replacement,
            ),
            replace(Tool.from_function(self.tick_box, changes_files=True), dry_run=self._check_tick),
            replace(Tool.from_function(self.add_item, changes_files=True), dry_run=self._check_addition),
            replace(Tool.from_function(self.set_key, changes_files=True), dry_run=self._check_key_setting),
        ]
        if not self.narrow_paths:
            return tools
        choices = {"list_dir": self._directories, "read_file": self._files, "search_text": self._everything}
        return [
            replace(tool, narrow=self._narrower(tool.spec.parameters, choices[tool.name]))
            if tool.name in choices
            else tool
            for tool in tools
        ]

    def _narrower(
        self, schema: dict[str, Any], choices: Callable[[], list[str] | None]
    ) -> Callable[[str], Any]:
        def narrow(question: str) -> dict[str, Any] | None:
            found = choices()
            return _with_path_choices(schema, found) if found else None

        return narrow

    def _directories(self) -> list[str] | None:
        directories, _ = workspace_paths(self.workspace, PATH_CHOICES_LIMIT)
        return [".", *directories]

    def _files(self) -> list[str] | None:
        _, files = workspace_paths(self.workspace, PATH_CHOICES_LIMIT + 1)
        return files if len(files) <= PATH_CHOICES_LIMIT else None

    def _everything(self) -> list[str] | None:
        files = self._files()
        return None if files is None else [*(self._directories() or []), *files]

    def list_dir(self, path: DirPath = ".") -> str:
        """List the files and directories in a directory. Directory names end with '/'."""
        real = self.workspace.resolve(path)
        shown = self.workspace.relative(real)
        status = _status(real, shown)
        if status is None:
            raise ToolError(
                f"No such directory: {shown}. Call list_dir with path '.' to see the workspace root."
            )
        if not stat.S_ISDIR(status.st_mode):
            raise ToolError(f"{shown} is a file, not a directory. Use read_file to read it.")
        # What a walk leaves out (.git, caches, ignored files) goes unnamed here too; a folder asked for
        # by path is listed even when a walk would leave it out.
        try:
            names = [self._entry_name(entry) for entry in WorkspaceWalk(self.workspace, real).entries(real)]
        except OSError as error:
            raise ToolError(f"Cannot list {shown}: {error.strerror}.") from None
        if not names:
            return f"Directory {shown} is empty."
        # Directories first, so a capped listing still shows where to look next.
        names.sort(key=lambda name: (not name.endswith("/"), name))
        lines = [f"Directory {shown} ({len(names)} entries):", *names[:LIST_LIMIT]]
        if len(names) > LIST_LIMIT:
            lines.append(
                f"[Only the first {LIST_LIMIT} of {len(names)} entries are shown. "
                "List a subdirectory, or use search_text to find files by their content.]"
            )
        return "\n".join(lines)

    def read_file(
        self,
        path: FilePath,
        start_line: StartLine = 1,
        cancel: CancelToken | None = None,
    ) -> str:
        """Read a whole text file. Each line is shown after its line number.

        There is no end line: a small model asked for lines 1 to 1 where it meant the whole file.
        For the same reason a file short enough to show whole is shown whole, whatever start_line
        says. A long file is cut at READ_CHAR_LIMIT characters, with a notice saying where to read on.
        """
        real, shown = self._existing_file(path)
        whole: list[str] | None = []  # every line, while the whole file still fits
        shown_lines: list[str] = []
        used = whole_used = 0
        next_line: int | None = None  # the first wanted line left out because of the size limit
        total = 0
        try:
            with real.open("rb") as file:
                if _looks_binary(file):
                    raise ToolError(f"{shown} is a binary file; read_file can only read text files.")
                for total, raw in enumerate(_lines(file), start=1):
                    if total % 10_000 == 0 and cancel is not None:
                        cancel.raise_if_cancelled()
                    line = f"{total}: {_display_line(raw)}"
                    if whole is not None:
                        whole_used += len(line) + 1
                        if whole_used > READ_CHAR_LIMIT + 1:
                            whole = None
                        else:
                            whole.append(line)
                    if total < start_line or next_line is not None:
                        continue
                    if used + len(line) > READ_CHAR_LIMIT and shown_lines:
                        next_line = total
                        continue
                    shown_lines.append(line)
                    used += len(line) + 1
        except OSError as error:
            raise ToolError(f"Cannot read {shown}: {error.strerror}.") from None
        self._saw(shown)
        if total == 0:
            return f"{shown} is empty (0 lines)."
        if whole is not None:
            return f"{shown}, lines 1-{total} of {total}:\n" + "\n".join(whole)
        if start_line > total:
            raise ToolError(f"start_line {start_line} is past the end of {shown}, which has {total} lines.")
        if next_line is None:
            return f"{shown}, lines {start_line}-{total} of {total}:\n" + "\n".join(shown_lines)
        header = f"{shown}, lines {start_line}-{next_line - 1} of {total}:"
        notice = (
            f"[Truncated: lines {next_line}-{total} are not shown because the output is limited to "
            f"{READ_CHAR_LIMIT} characters. To read on, call read_file with start_line={next_line}.]"
        )
        return "\n".join([header, *shown_lines, notice])

    def search_text(
        self,
        pattern: Pattern,
        path: SearchPath = ".",
        regex: IsRegex = False,
        cancel: CancelToken | None = None,
    ) -> str:
        """Find the lines that hold a word or phrase, in every file (path '.') or in one file or folder."""
        if pattern == "":
            raise ToolError("pattern is empty. Give the text to search for.")
        matches = _matcher(pattern, regex)
        real = self.workspace.resolve(path)
        shown = self.workspace.relative(real)
        status = _status(real, shown)
        if status is None:
            raise ToolError(f"No such file or directory: {shown}. Use '.' to search the whole workspace.")
        found = self._search_lines(real, shown, status, matches, cancel)
        self._found(pattern, shown, regex, found)
        if found.results:
            return found.report(f"Matches for {pattern!r} in {shown}")
        named = self._names_matching(real, matches)
        hint = (
            f"\nFiles whose names contain it: {', '.join(named)}. Read one with read_file." if named else ""
        )
        # A small model often sets regex for plain words; those still get the looser searches.
        plain = not regex or not _REGEX_SYNTAX.search(pattern)
        if plain and _is_code(pattern):
            return self._search_code(real, shown, status, pattern, regex, cancel, hint)
        words = _words(pattern) if plain else []
        if len(words) > 1:
            loose = self._search_lines(real, shown, status, _some_words_matcher(words, len(words)), cancel)
            if loose.results:
                self._found(pattern, shown, regex, loose)
                heading = f"No line holds {pattern!r} as written; lines in {shown} with all of its words"
                return loose.report(heading) + hint
        key_words = [word for word in words if word not in _COMMON_WORDS and len(word) > 1]
        if len(key_words) > 1:
            # A question's phrase ("garden club meetings in March") rarely appears whole in any line.
            enough = (len(key_words) + 1) // 2
            some = self._search_lines(real, shown, status, _some_words_matcher(key_words, enough), cancel)
            if some.results:
                some.results.sort(key=lambda line: -_words_held(line.text, key_words))
                del some.results[_SOME_WORDS_SHOWN:]
                self._found(pattern, shown, regex, some)
                heading = f"No line holds all the words of {pattern!r}; lines in {shown} with most of them"
                return some.report(heading) + hint
        nothing = _no_matches(pattern, shown, found)
        if stat.S_ISREG(status.st_mode) and status.st_size <= SMALL_FILE_BYTES and found.searched:
            # The model chose this file as the likely place; a small one shown whole saves it a step.
            return f"{nothing} The whole file instead:\n{self.read_file(shown)}"
        return f"{nothing}{hint}\n{NOTHING_FOUND_ADVICE}"

    def _search_code(
        self,
        real: Path,
        shown: str,
        status: os.stat_result,
        pattern: str,
        regex: bool,
        cancel: CancelToken | None,
        hint: str,
    ) -> str:
        """A code with a digit not found as written: the same code with other separators (K-7731 as
        K7731 or K 7731), never its parts, since lines holding "k" or "7731" are not that code."""
        found = self._search_lines(real, shown, status, _code_matcher(pattern), cancel)
        if found.results:
            self._found(pattern, shown, regex, found)
            heading = f"No line holds {pattern!r} as written; lines in {shown} with it written another way"
            return found.report(heading) + hint
        return f"{_no_matches(pattern, shown, found)}{hint}"

    def _found(self, pattern: str, shown: str, regex: bool, found: Search) -> None:
        self._matched_files[(pattern, shown, regex)] = found.paths()
        for path in found.paths():
            self._saw(path)

    def _search_lines(
        self,
        real: Path,
        shown: str,
        status: os.stat_result,
        matches: Callable[[str], bool],
        cancel: CancelToken | None,
        open_sections: bool = True,
    ) -> Search:
        found = Search(sections_left=SECTIONS_OPENED if open_sections else 0)
        for file in [real] if stat.S_ISREG(status.st_mode) else self._text_file_candidates(real):
            if cancel is not None:
                cancel.raise_if_cancelled()
            try:
                if file != real and file.stat().st_size > SEARCH_FILE_BYTES_LIMIT:
                    found.skipped_large += 1
                    continue
                with file.open("rb") as handle:
                    if _looks_binary(handle):
                        if file == real:
                            raise ToolError(
                                f"{shown} is a binary file; search_text only searches text files."
                            )
                        continue
                    found.searched += 1
                    self._search_file(handle, self.workspace.relative(file), matches, found)
            except OSError:
                continue  # unreadable files are skipped like binary ones
        return found

    @staticmethod
    def _search_file(handle: BinaryIO, path: str, matches: Callable[[str], bool], found: Search) -> None:
        markdown = Path(path).suffix.lower() in MARKDOWN_SUFFIXES
        section: str | None = None  # the heading above the line, in a Markdown file
        opened: int | None = None  # the result of the heading whose section is being shown
        below: list[tuple[int, str]] = []
        for number, raw in enumerate(_lines(handle), start=1):
            text = _display_line(raw)
            heading = markdown and _MARKDOWN_HEADING.match(text) is not None
            if opened is not None and (heading or len(below) == SECTION_LINES_SHOWN):
                found.results[opened] = replace(found.results[opened], below=tuple(below))
                opened = None
            if opened is not None:
                if _SAYS_SOMETHING.search(text):
                    below.append((number, text.strip()))  # shown under its heading, even when it matches
                found.matched += matches(text)
                continue
            if matches(text):
                found.matched += 1
                if len(found.results) >= SEARCH_MATCH_LIMIT:
                    found.more = True  # counted on, not shown
                    continue
                found.results.append(FoundLine(path, number, text.strip(), None if heading else section))
                if heading and found.sections_left:
                    found.sections_left -= 1
                    opened, below = len(found.results) - 1, []
            if heading:
                section = _shortened(text.strip(), SECTION_CHARS)
        if opened is not None:
            found.results[opened] = replace(found.results[opened], below=tuple(below))

    def files_of_search(self, arguments: dict[str, Any], earlier: str) -> str | None:
        """For a search made again: the files it found lines in, or else the files it searched, shown
        whole when they are few and small; for one that found nothing in a file or folder, first the
        same search of all files, when they hold it. A model that repeats a search wants more than
        it got. The earlier result itself is not needed: each search keeps the files it found lines in."""
        path = str(arguments.get("path", "."))
        real = self.workspace.resolve(path)
        pattern, searched = str(arguments.get("pattern", "")), self.workspace.relative(real)
        is_regex = bool(arguments.get("regex"))
        paths = self._matched_files.get((pattern, searched, is_regex), [])
        heading = "The files with those lines, whole:"
        if not paths and searched != ".":
            # Made again, a search that found nothing in a file or folder means "look further".
            everywhere = self.search_text(pattern, ".", is_regex)
            if self._matched_files.get((pattern, ".", is_regex)):
                return f"It found nothing in {searched}; the same search of all files:\n{everywhere}"
        if not paths:
            heading = "The files it searched, whole:"
            if not real.is_dir():
                return None  # a small file searched in vain was shown whole already
            candidates = itertools.islice(self._text_file_candidates(real), REPEAT_FILES_SHOWN + 1)
            paths = [self.workspace.relative(file) for file in candidates]
        if not paths or len(paths) > REPEAT_FILES_SHOWN:
            return None
        shown = []
        for path in paths:
            real, _ = self._existing_file(path)
            if real.stat().st_size > SMALL_FILE_BYTES:
                return None
            shown.append(self.read_file(path))
        return "\n".join([heading, *shown])

    def _names_matching(self, real: Path, matches: Callable[[str], bool]) -> list[str]:
        """Files below `real` whose path matches: a model searching for "server.ini" or ".csv" wants files."""
        if not real.is_dir():
            return []
        paths = (self.workspace.relative(file) for file in self._text_file_candidates(real))
        return [path for path in paths if matches(path)][:_NAMED_FILES_SHOWN]

    def write_file(self, path: FilePath, content: Content) -> str:
        """Create a new file. Missing directories are created. A file that exists is changed with
        replace_in_file, not with write_file."""
        real, shown = self._planned_write(path, content)
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            raise ToolError(
                f"Cannot create the directory for {shown}: a part of the path is a file."
            ) from None
        _write_atomically(real, content.encode("utf-8"), shown)
        self._saw(shown)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        return f"Created {shown} ({lines} lines, {len(content)} characters)."

    def _check_write(self, arguments: dict[str, Any]) -> None:
        self._planned_write(str(arguments.get("path", "")), str(arguments.get("content", "")))

    def _check_replacement(self, arguments: dict[str, Any]) -> None:
        path, old, new = (str(arguments.get(key, "")) for key in ("path", "old", "new"))
        self._planned_replacement(path, old, new, arguments.get("replace_all") is True)

    def _planned_write(self, path: str, content: str) -> tuple[Path, str]:
        """Where write_file would write; ToolError when it may not."""
        real = self.workspace.resolve(path)
        shown = self.workspace.relative(real)
        if path.strip().endswith(("/", "\\")):
            raise ToolError(f"{path!r} ends with '/'. Give the path of a file, like 'notes/todo.txt'.")
        status = _status(real, shown)
        if status is not None and stat.S_ISDIR(status.st_mode):
            raise ToolError(f"{shown} is a directory. Give the path of a file, like 'notes/todo.txt'.")
        self._refuse_vcs(real)
        if status is not None:
            # As the str_replace editors of SWE-agent and OpenHands do: a small model asked to add or
            # change a line rewrites the file as that line alone, so an existing file is only edited.
            raise ToolError(existing_file_refusal(shown, _text_or_none(real), content))
        return real, shown

    def replace_in_file(
        self, path: FilePath, old: OldText, new: NewText, replace_all: ReplaceAll = False
    ) -> str:
        """Replace an exact piece of text in a file. old must appear exactly once in the file, unless
        replace_all is true; an empty old adds new at the end of the file."""
        real, shown, edit = self._planned_replacement(path, old, new, replace_all)
        _write_atomically(real, edit.text.encode("utf-8"), shown)
        self._saw(shown)
        return edit.report + self._still_elsewhere(old, shown)

    def _still_elsewhere(self, old: str, shown: str) -> str:
        """The other files that still hold `old`, after it was replaced in `shown`: a name renamed in
        one file is often in others too. A file state, told as it is; "" when there is none."""
        if not old.strip() or "\n" in old:
            return ""
        root = self.workspace.resolve(".")
        status = _status(root, ".")
        if status is None:
            return ""
        found = self._search_lines(root, ".", status, lambda line: old in line, None, open_sections=False)
        lines: dict[str, list[str]] = {}
        for line in found.results:
            if line.path != shown:
                lines.setdefault(line.path, []).append(str(line.number))
        if not lines:
            return ""
        places = [
            f"{path} ({'line' if len(numbers) == 1 else 'lines'} {', '.join(numbers)})"
            for path, numbers in list(lines.items())[:_ELSEWHERE_FILES]
        ]
        more = f" and {len(lines) - _ELSEWHERE_FILES} more files" if len(lines) > _ELSEWHERE_FILES else ""
        return f" The old text is still in {', '.join(places)}{more}."

    def tick_box(self, path: FilePath, item: ItemWords) -> str:
        """Tick a box in a Markdown list: the one line '- [ ] ...' that holds item becomes '- [x] ...'."""
        return self._edit(path, lambda text, shown: list_items.ticked(text, item, shown))

    def add_item(self, path: FilePath, item: NewItem, section: Section = "") -> str:
        """Add one item at the end of a Markdown list: the list under the heading named by section, or
        else the file's last list.

        The item gets the list's own marker ('- [ ] ', '* ', the next number); a section with no
        list yet gets one, in the marker of the file's nearest list.
        """
        return self._edit(path, lambda text, shown: list_items.with_item_added(text, item, section, shown))

    def set_key(self, path: FilePath, key: ConfigKey, value: ConfigValue) -> str:
        """Set the value of one key in a TOML, INI or YAML file, given the key's name and the new value.

        Only the value changes, written in the file's own syntax; config_keys says what is refused.
        """
        return self._edit(path, lambda text, shown: config_keys.with_key_set(text, key, value, shown))

    def _edit(
        self, path: str, change: Callable[[str, str], list_items.ListEdit | config_keys.KeyEdit]
    ) -> str:
        """Write what `change(text, shown)` makes of the file at `path`, and say what it did."""
        real, shown, text = self._file_to_edit(path)
        edit = change(text, shown)
        _write_atomically(real, edit.text.encode("utf-8"), shown)
        self._saw(shown)
        return edit.report

    def _check_tick(self, arguments: dict[str, Any]) -> None:
        item = str(arguments.get("item", ""))
        self._check_change(arguments, lambda text, shown: list_items.ticked(text, item, shown))

    def _check_addition(self, arguments: dict[str, Any]) -> None:
        item, section = str(arguments.get("item", "")), str(arguments.get("section", ""))
        self._check_change(
            arguments, lambda text, shown: list_items.with_item_added(text, item, section, shown)
        )

    def _check_key_setting(self, arguments: dict[str, Any]) -> None:
        key, value = str(arguments.get("key", "")), str(arguments.get("value", ""))
        self._check_change(arguments, lambda text, shown: config_keys.with_key_set(text, key, value, shown))

    def _check_change(self, arguments: dict[str, Any], change: Callable[[str, str], object]) -> None:
        """ToolError when the edit of the file the arguments name could not apply, before anyone is asked."""
        _, shown, text = self._file_to_edit(str(arguments.get("path", "")))
        change(text, shown)

    def _file_to_edit(self, path: str) -> tuple[Path, str, str]:
        """The file an edit by names (an item's words, a key) would change, and its text; no read
        first, as the edit finds its own line."""
        real, shown = self._existing_file(path, name_others=True)
        self._refuse_vcs(real)
        return real, shown, _read_utf8(real, shown)

    def _planned_replacement(
        self, path: str, old: str, new: str, replace_all: bool = False
    ) -> tuple[Path, str, Replacement]:
        """The file replace_in_file would change and how; ToolError when it cannot change it."""
        real, shown = self._existing_file(path)
        self._refuse_vcs(real)
        text = _read_utf8(real, shown)
        if old != "":  # adding at the end copies nothing from the file, so it need not have been read
            self._check_seen(
                shown,
                unread=f"You have not read {shown} yet.",
                then="first, then copy the exact text to replace from it.",
            )
        return real, shown, replacement(text, old, new, shown, replace_all)

    def _check_edit(self, arguments: Any) -> None:
        """What is wrong with an edit before anyone is asked to approve it."""
        if arguments.old == arguments.new:
            raise InvalidArguments(
                "old and new are the same, so nothing would change."
                + self._tick_hint(arguments.path, arguments.old)
            )
        if SECTION_NOTE.search(arguments.new) and not SECTION_NOTE.search(arguments.old):
            raise InvalidArguments(
                "new ends a line with the '(under ...)' that search_text shows after a line; it names the "
                "heading the line is under and is not part of the file. Leave it out of new."
            )

    def _tick_hint(self, path: str, old: str) -> str:
        """For old copied from the one open box that holds it: the call that ticks that box."""
        try:
            _, shown, text = self._file_to_edit(path)
        except ToolError:
            return ""
        box = list_items.the_open_box(text, old)
        # Unless the file was read as it is, the call it names would be refused.
        if box is None or not self._seen_as_it_is(shown):
            return ""
        number, line, ticked = box
        call = json.dumps({"path": shown, "old": line.strip(), "new": ticked.strip()}, ensure_ascii=False)
        return (
            f" Line {number} of {shown} reads {line.strip()!r}; "
            f"to tick its box, call replace_in_file with {call}"
        )

    def _saw(self, shown: str) -> None:
        self._seen[shown] = _version(self.workspace.resolve(shown))

    def _seen_as_it_is(self, shown: str) -> bool:
        return shown in self._seen and self._seen[shown] == _version(self.workspace.resolve(shown))

    def _check_seen(self, shown: str, unread: str, then: str) -> None:
        """A ToolError unless the model has been shown the file as it is now on disk."""
        if shown not in self._seen:
            raise ToolError(f"{unread} Read it with read_file {then}")
        if self._seen[shown] != _version(self.workspace.resolve(shown)):
            raise ToolError(f"{shown} has changed since you read it. Read it again with read_file {then}")

    def _existing_file(self, path: str, name_others: bool = False) -> tuple[Path, str]:
        """The file at `path`, or the one that differs from it only in letter case. With
        `name_others`, a missing file's error names the workspace's files of that name."""
        real = self.workspace.resolve(path)
        if not real.exists():
            real = self.workspace.case_insensitive_match(real) or real
        shown = self.workspace.relative(real)
        status = _status(real, shown)
        named = self._files_named(real.name) if status is None and name_others else []
        if named:
            raise ToolError(f"No such file: {shown}. Files of that name: {', '.join(named)}.")
        if status is None:
            raise ToolError(f"No such file: {shown}. Use list_dir to see which files exist.")
        if stat.S_ISDIR(status.st_mode):
            raise ToolError(f"{shown} is a directory, not a file. Use list_dir to see what it contains.")
        if not stat.S_ISREG(status.st_mode):
            raise ToolError(
                f"{shown} is not a regular file (it may be a device or a pipe); it cannot be used."
            )
        return real, shown

    def _files_named(self, name: str) -> list[str]:
        """Up to a few files of the workspace with this name, in any folder."""
        files = itertools.islice(self._text_file_candidates(self.workspace.root), _FILES_WALKED)
        named = (self.workspace.relative(file) for file in files if file.name.casefold() == name.casefold())
        return list(itertools.islice(named, _NAMED_FILES_SHOWN))

    def _entry_name(self, entry: os.DirEntry[str]) -> str:
        if entry.is_symlink() and not self.workspace.contains(os.path.realpath(entry.path)):
            return f"{entry.name} (link to outside the workspace; cannot be used)"
        try:
            return entry.name + "/" if entry.is_dir() else entry.name
        except OSError:
            return entry.name

    def _refuse_vcs(self, real: Path) -> None:
        # Files in .git can run commands (hooks, config), so writing there is writing outside the workspace.
        parts = real.relative_to(self.workspace.root).parts
        vcs = next((part for part in parts if part.lower() in VCS_DIRS), None)
        if vcs is not None:
            raise ToolError(
                f"{self.workspace.relative(real)} is inside {vcs}; files there cannot be changed."
            )

    def _text_file_candidates(self, directory: Path) -> Iterator[Path]:
        """Regular files below `directory` in sorted order, as the workspace walk finds them."""
        return WorkspaceWalk(self.workspace, directory).files()


def workspace_listing(
    workspace: Workspace, limit: int = 40, previews: bool = True, hidden: Collection[Path] = ()
) -> str:
    """The workspace's files, one relative path a line, for the model to know what exists; "" for none.

    With `previews`, each path is followed by the file's first line that says something: a CSV's
    header or a document's title tells a small model which file to read.
    """
    inside = [real for real in (Path(path).resolve() for path in hidden) if workspace.contains(real)]
    left_out = {workspace.relative(real) for real in inside}
    _, files = workspace_paths(workspace, limit + 1 + len(left_out))
    files = [path for path in files if path not in left_out]
    shown = [_with_preview(workspace, path) if previews else path for path in files[:limit]]
    shown += ["(more files not shown)"] if len(files) > limit else []
    return "\n".join(shown)


def _with_preview(workspace: Workspace, path: str) -> str:
    try:
        with (workspace.root / path).open("rb") as file:
            if _looks_binary(file):
                return path
            head = file.read(PREVIEW_READ_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return path
    line = next((line.strip() for line in head.splitlines() if _SAYS_SOMETHING.search(line)), None)
    if line is None:
        return path
    return f"{path}: {_shortened(line, PREVIEW_CHARS)}"


def _with_path_choices(schema: dict[str, Any], choices: list[str]) -> dict[str, Any]:
    """The schema with its `path` argument limited to `choices` (for the grammar only)."""
    properties = dict(schema["properties"])
    properties["path"] = {**properties["path"], "enum": choices}
    return {**schema, "properties": properties}


FileVersion = tuple[int, int]  # modification time in ns, size in bytes


def _version(real: Path) -> FileVersion | None:
    try:
        status = real.stat()
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def _status(real: Path, shown: str) -> os.stat_result | None:
    """The path's status, or None if it does not exist; other OS errors become a ToolError."""
    try:
        return real.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise ToolError(f"Cannot access {shown}: {error.strerror}.") from None


def _looks_binary(file: BinaryIO) -> bool:
    """A NUL byte near the start means binary, as git and grep decide; rewinds the file."""
    head = file.read(BINARY_SNIFF_BYTES)
    file.seek(0)
    return b"\0" in head


def _lines(file: BinaryIO) -> Iterator[bytes]:
    """The lines without their endings; a huge line is cut, so a one-line 1 GB file cannot fill memory."""
    limit = LINE_CHAR_LIMIT * 4 + 1  # UTF-8 needs up to 4 bytes a character
    while True:
        chunk = file.readline(limit)
        if not chunk:
            return
        if not chunk.endswith(b"\n"):
            rest = chunk
            while rest and not rest.endswith(b"\n"):
                rest = file.readline(limit)
        yield chunk.rstrip(b"\r\n")


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _display_line(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    if len(text) > LINE_CHAR_LIMIT:
        return text[:LINE_CHAR_LIMIT] + " [line cut]"
    return text


_NAMED_FILES_SHOWN = 10
_FILES_WALKED = 5000  # a name looked for in a huge workspace stops here
# A line with two letters or digits in a row; "{" or "---" alone says nothing about a file.
_SAYS_SOMETHING = re.compile(r"[^\W_]{2}")
NOTHING_FOUND_ADVICE = "Search for another word, or read the file most likely to hold it."
_WORD = re.compile(r"\w+")
_ALNUM_RUN = re.compile(r"[^\W_]+")
_MARKDOWN_HEADING = re.compile(r"#{1,6}\s")
_SHOUTED = re.compile(r"[A-Z][A-Z0-9_]+")
_REGEX_SYNTAX = re.compile(r"[\\.^$*+?{}\[\]|()]")
_REGEX_ESCAPE = re.compile(r"\\(?:[pPN]\{[^}]*\}|.)", re.DOTALL)  # \S, \., \p{Lu}, \N{...}
_SOME_WORDS_SHOWN = 10
_ELSEWHERE_FILES = 5
_CLOSEST_LINE_RATIO = 0.7
_CLOSEST_LINE_SEARCH_LIMIT = 5000
_SWAP_QUOTES = str.maketrans({"'": '"', '"': "'"})
# Words that say nothing about where an answer is; left out when lines need only some of the words.
_COMMON_WORDS = frozenset(
    _WORD.findall(
        "a an and are at be by can do does for from has have how i in is it its my of on or that the "
        "this to was what when where which who why will with"
    )
)


def _words(pattern: str) -> list[str]:
    return [word.casefold() for word in _WORD.findall(pattern)]


def _no_matches(pattern: str, shown: str, found: Search) -> str:
    noun = "file" if found.searched == 1 else "files"
    return f"No matches for {pattern!r} in {shown} ({found.searched} {noun} searched){found.skipped}."


def _is_code(pattern: str) -> bool:
    """One token with a digit in it: an ID, a code, a date or a version, not a phrase."""
    stripped = pattern.strip()
    return any(char.isdigit() for char in stripped) and not any(char.isspace() for char in stripped)


def _code_matcher(pattern: str) -> Callable[[str], bool]:
    """The code's letters and digits in order, with any one separator (or none) between its parts,
    and no letter or digit right before or after it."""
    parts = [regex.escape(part) for part in _ALNUM_RUN.findall(pattern)]
    compiled = regex.compile(r"(?<![^\W_])" + r"[-_ ./:#]?".join(parts) + r"(?![^\W_])", regex.IGNORECASE)
    return lambda text: compiled.search(text) is not None


def _words_held(text: str, words: list[str]) -> int:
    folded = text.casefold()
    return sum(word in folded for word in words)


def _some_words_matcher(words: list[str], enough: int) -> Callable[[str], bool]:
    """Lines holding at least `enough` of the words, in any case and order: all of "low-stock
    threshold" finds LOW_STOCK_THRESHOLD."""
    return lambda text: _words_held(text, words) >= enough


def _matcher(pattern: str, is_regex: bool) -> Callable[[str], bool]:
    if not is_regex:
        if _SHOUTED.fullmatch(pattern):
            # A word in capitals (ERROR, TODO, FIXME) is a marker: matched as written, so a count of
            # ERROR lines leaves out the lines that only say "error".
            return lambda text: pattern in text
        wanted = pattern.casefold()
        return lambda text: wanted in text.casefold()
    try:
        # Smart case, as in ripgrep: a pattern whose literal letters are all lower case matches any
        # case. Escapes are not letters of the text: `\S+@\S+` still ignores case.
        literal_letters = _REGEX_ESCAPE.sub("", pattern)
        flags = 0 if any(char.isupper() for char in literal_letters) else regex.IGNORECASE
        compiled = regex.compile(pattern, flags)
    except regex.error as error:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {error}. "
            "Fix it, or set regex to false to search plain text."
        ) from None

    def matches(text: str) -> bool:
        # Python's re cannot be stopped once it backtracks without end; the regex package can.
        try:
            return compiled.search(text, timeout=SEARCH_REGEX_SECONDS) is not None
        except TimeoutError:
            raise ToolError(
                f"The regular expression {pattern!r} was stopped after {SEARCH_REGEX_SECONDS:g} s on one "
                "line: it backtracks too much. Use a simpler pattern without nested repeats like (a|aa)+, "
                "or set regex to false to search plain text."
            ) from None

    return matches


def _text_or_none(real: Path) -> str | None:
    try:
        return _read_utf8(real, "")
    except ToolError:
        return None


def _read_utf8(real: Path, shown: str) -> str:
    try:
        data = real.read_bytes()
    except OSError as error:
        raise ToolError(f"Cannot read {shown}: {error.strerror}.") from None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{shown} is a binary file; only text files can be edited.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not UTF-8 text, so it cannot be edited safely.") from None


@dataclass(frozen=True)
class Replacement:
    text: str  # the file's new text
    report: str  # what the model is told


def replacement(text: str, old: str, new: str, shown: str, replace_all: bool = False) -> Replacement:
    """What `replace_in_file` makes of `text` (the approval's diff shows the same); ToolError when
    `old` does not match, or matches more than once without `replace_all`."""
    if old == "":
        # Appending is the edit a small model finds hardest to phrase as a replacement.
        joined = text if not text or text.endswith("\n") else text + "\n"
        return Replacement(
            joined + new, f"Added the text at the end of {shown}, from line {joined.count(chr(10)) + 1}."
        )
    count = _occurrences(text, old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        # The file has Windows line endings; the model almost always writes plain "\n".
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = _occurrences(text, old)
    if count == 0 and _occurrences(text, old.translate(_SWAP_QUOTES)) == 1:
        # The model quoted a value the other way round ('x' for "x"): the file's quotes stay.
        old, new = old.translate(_SWAP_QUOTES), new.translate(_SWAP_QUOTES)
        count = 1
    if count == 0 and (loose := replace_ignoring_quotes(text, old, new)) is not None:
        changed, at = loose
        line = text.count("\n", 0, at) + 1
        now = changed.splitlines()[line - 1]
        return Replacement(
            changed,
            f"Replaced the text at line {line} of {shown}, where old matches without its quote marks; "
            f"the line now reads {now!r}.",
        )
    if count == 0:
        raise ToolError(f"old was not found in {shown}. Nothing was changed. {_not_found_hint(text, old)}")
    if count > 1:
        # Counted only when old is in several places: a single replacement needs neither.
        replaceable = _occurrences(text, old, stop_at=len(text) + 1) == text.count(old)
        lines = sorted({text.count("\n", 0, at) + 1 for at in _starts(text, old)})
        if replace_all and replaceable:
            return Replacement(
                text.replace(old, new),
                f"Replaced the text in {count} places in {shown}, at lines {', '.join(map(str, lines))}.",
            )
        if replace_all:
            raise ToolError(
                f"old overlaps itself in {shown}, so replacing every place is not one clear change. "
                "Nothing was changed. Add some of the surrounding text to old."
            )
        file_lines = text.splitlines()
        places = [(number, file_lines[number - 1]) for number in lines]
        raise ToolError(ambiguous_old_refusal(shown, old, new, places, count, replaceable))
    line = text.count("\n", 0, text.index(old)) + 1
    return Replacement(text.replace(old, new, 1), f"Replaced the text at line {line} of {shown}.")


def _starts(text: str, old: str, overlapping: bool = False) -> Iterator[int]:
    """Where `old` starts in `text`; with `overlapping`, 'aa' starts twice in 'aaa'."""
    step = 1 if overlapping else len(old)
    start = text.find(old)
    while start != -1:
        yield start
        start = text.find(old, start + step)


def _occurrences(text: str, old: str, stop_at: int = 1000) -> int:
    """Overlapping occurrences count too: 'aa' in 'aaa' is ambiguous, so it counts twice."""
    return sum(1 for _ in itertools.islice(_starts(text, old, overlapping=True), stop_at))


def _not_found_hint(text: str, old: str) -> str:
    if re.match(r"\s*\d+: ", old):
        return "Leave out the line numbers that read_file shows ('12: ')."
    if SECTION_NOTE.search(old):
        return (
            "Leave out the '(under ...)' that search_text shows after a line: it names the heading the "
            "line is under and is not in the file."
        )
    if old.strip() and old.strip() in text:
        return "The spaces or newlines at the start or end of old differ from the file; copy them exactly."
    closest = _closest_line(text, old)
    if closest is not None:
        number, line = closest
        return f"The closest line is line {number}: {line.strip()!r}. Copy old exactly from the file."
    return "Read the file again with read_file and copy old exactly, including indentation."


def _closest_line(text: str, old: str) -> tuple[int, str] | None:
    """The file's line most like old's first line, when one is alike enough to be the one meant."""
    wanted = next((line.strip() for line in old.splitlines() if line.strip()), "")
    lines = text.splitlines()
    if not wanted or len(lines) > _CLOSEST_LINE_SEARCH_LIMIT:
        return None
    matcher = difflib.SequenceMatcher(None, wanted)
    best: tuple[float, int, str] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        matcher.set_seq2(line.strip())
        # The quick ratios are upper bounds of ratio(): a line they rule out cannot be the first best.
        floor = _CLOSEST_LINE_RATIO if best is None else best[0]
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue
        ratio = matcher.ratio()
        if ratio >= floor and (best is None or ratio > best[0]):
            best = (ratio, number, line)
    return None if best is None else (best[1], best[2])


def _write_atomically(real: Path, data: bytes, shown: str) -> None:
    """Write a temp file next to the target, then rename it over the target: readers never see half a file."""
    try:
        mode = stat.S_IMODE(real.stat().st_mode)
    except FileNotFoundError:
        mode = None
    temp = real.with_name(f".{real.name[:100]}.{secrets.token_hex(4)}.tmp")
    try:
        # 0o666 lets the umask decide a new file's mode, as for any file the user creates.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as file:
                if mode is not None:
                    os.fchmod(file.fileno(), mode)
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            temp.replace(real)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    except OSError as error:
        raise ToolError(f"Cannot write {shown}: {error.strerror or error}.") from None
